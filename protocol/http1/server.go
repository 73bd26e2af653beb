package http1

import (
	"fmt"
	"time"

	"github.com/sluicenet/sluice/protocol"
)

// ErrFramingMismatch is the close cause when a frame given to Server does
// not parse as exactly one request under the strict parser: it is empty,
// holds less than a request, or more than one (a frame that did not come
// from Codec.Decode). Server answers it with 400 and closes the
// connection. It wraps protocol.ErrMalformed.
var ErrFramingMismatch = fmt.Errorf("%w: http1: request framing disagrees with the strict parse", protocol.ErrMalformed)

// Conn is what Server.Serve needs of a connection: queue bytes for the
// peer, and close after what is queued, with a cause. *server.Conn of
// package server implements it, and also AvailableBuffer (the free room of
// its out-queue, bufio-style), which Serve then encodes the response into,
// so that Write queues it without a copy.
type Conn interface {
	Write(p []byte) error
	CloseWithError(cause error) error
}

// availableBufferer is a Conn that lends its out-queue's free room
// (server.Conn.AvailableBuffer).
type availableBufferer interface {
	AvailableBuffer() []byte
}

// maxHeadBytes bounds a response's size beyond the request frame's (its
// status line and header fields; an echoed body is at most the frame):
// Serve encodes into the connection's available buffer when it has this
// much room more than the frame, and into its scratch buffer otherwise.
const maxHeadBytes = 512

// Route appends to dst the response to req, a request that parsed, with
// date as the Date field value (pass it to Request.AppendResponse), and
// returns the extended slice. req and its fields alias the connection's
// input and are valid only during the call; the response must not retain
// them. The connection closes after the response when req.KeepAlive is
// false: a route that wants to close sets it before appending, so that
// the response says "Connection: close". A Route runs on the engine's
// loop and must not block; it should not allocate when dst has room.
type Route func(dst []byte, req *Request, date []byte) []byte

// Server answers HTTP/1.1 requests framed by Codec, one response per
// request and in order, so keep-alive and pipelining work: it parses each
// frame strictly, answers a request that does not parse with its status
// (400, 411, 413, 414, 417, 431, 505; AppendDecodeError) and closes the
// connection, and otherwise asks Route for the response, with a Date
// formatted at most once a second and the clock read once per read batch,
// not per request. The connection closes after a response to a request
// that does not keep it alive (HTTP/1.1 "Connection: close", HTTP/1.0
// without "Connection: keep-alive").
//
// Use Codec as the engine's codec and call Serve from the handler's
// OnFrame:
//
//	srv := &http1.Server{Route: func(dst []byte, req *http1.Request, date []byte) []byte {
//		return req.AppendResponse(dst, 200, "text/plain", hello, date)
//	}}
//	h := server.HandlerFuncs{Frame: func(c *server.Conn, frame []byte) server.Action {
//		if srv.Serve(c, frame) {
//			return server.Close
//		}
//		return server.None
//	}}
//	e, err := server.New(server.Config{Codec: srv.Codec}, h)
//
// Respond is the transport-free core. With a Route that does not allocate,
// the steady path (a request that parses, a response that fits the
// out-queue) does not allocate. A Server must not be copied or modified
// after first use; it is safe for concurrent use by several loops. A nil
// Route answers 404 Not Found.
type Server struct {
	// Codec frames requests and answers refusals; the engine's
	// Config.Codec must be this value, so that Server's strict parse
	// applies the same limits.
	Codec ServerCodec
	// Route writes the response to each request that parses.
	Route Route
}

// Serve answers the request in frame (a frame Codec.Decode returned) on c
// with one c.Write (in place, when c lends its available buffer), and
// reports whether the connection should close after the response (return
// the engine's Close action). It takes the parse Codec.Decode left for
// frame when there is one (see ServerCodec) and parses frame strictly
// otherwise. A request that does not parse, or a response c cannot queue,
// closes c with the error as cause (c.CloseWithError) and reports false:
// nothing more is to be done. Pass frame as the engine handed it over: on
// the loop, Serve takes the loop codec's parse of the frame at that address
// and length without comparing its bytes again, so a handler that changed
// them would be answered for the request as decoded.
func (s *Server) Serve(c Conn, frame []byte) (closeAfter bool) {
	codec, ab := connParts(c)
	sc, owned := scratchFor(codec)
	now := sc.clock(frame, s.Codec.Clock)
	dst, inPlace := sc.out[:0], false
	if ab != nil {
		if b := ab.AvailableBuffer(); cap(b) >= len(frame)+maxHeadBytes {
			dst, inPlace = b, true // encoded straight into the out-queue
		}
	}
	out, closeAfter, cause := s.respond(sc, dst, frame, now, owned)
	if !inPlace {
		sc.out = out
	}
	err := c.Write(out)
	release(sc, owned)
	switch {
	case err != nil:
		_ = c.CloseWithError(err)
	case cause != nil:
		_ = c.CloseWithError(cause)
	default:
		return closeAfter
	}
	return false
}

// Respond appends to dst the response to the request in frame (a frame
// Codec.Decode returned) with the Date of now, and reports whether the
// connection must close after it: closeAfter without a cause when the
// request does not keep the connection alive, with the parse error as
// cause when the request is malformed. Like Serve, it takes the parse
// Codec.Decode left for frame when there is one. It does not allocate when
// dst has room and Route does not.
func (s *Server) Respond(dst, frame []byte, now time.Time) (out []byte, closeAfter bool, cause error) {
	sc := getScratch()
	defer putScratch(sc)
	return s.respond(sc, dst, frame, now, false)
}

func (s *Server) respond(sc *scratch, dst, frame []byte, now time.Time, owned bool) ([]byte, bool, error) {
	req := &sc.req
	var err error
	if !sc.recall(frame, s.Codec.Codec, owned) {
		err = s.parse(frame, req)
	}
	date := sc.dates.Value(now)
	if err != nil {
		req.Reset()
		return AppendDecodeError(dst, err, date), true, err
	}
	if s.Route == nil {
		dst = req.AppendResponse(dst, 404, "text/plain; charset=utf-8", notFoundBody, date)
	} else {
		dst = s.Route(dst, req, date)
	}
	// req keeps its references into frame until the scratch's next
	// request: clearing them costs a write barrier per pointer, and the
	// engine's read buffer they point into lives as long as the loop.
	return dst, !req.KeepAlive, nil
}

// parse parses frame, which must hold exactly one request, into req with
// the codec's limits.
func (s *Server) parse(frame []byte, req *Request) error {
	lim, err := s.Codec.limits()
	if err != nil {
		return err
	}
	n, err := parseInto(frame, &lim, req)
	if err == nil && (n == 0 || n != len(frame)) {
		err = ErrFramingMismatch
	}
	return err
}

var notFoundBody = []byte("Not Found\n")
