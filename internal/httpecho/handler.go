package httpecho

import (
	"time"

	"github.com/sluicenet/sluice/protocol/http1"
	"github.com/sluicenet/sluice/server"
)

// Routes and their answers.
const (
	// HelloPath serves Body on GET and HEAD.
	HelloPath = "/"
	// EchoPath answers POST and PUT with the request body.
	EchoPath = "/echo"
	// Body is the plaintext answer on HelloPath.
	Body = "Hello, World!"
	// HelloContentType and EchoContentType are the Content-Type values of
	// the two routes.
	HelloContentType = "text/plain"
	EchoContentType  = "application/octet-stream"
	errorContentType = "text/plain; charset=utf-8"
)

var (
	helloBody            = []byte(Body)
	notFoundBody         = []byte("Not Found\n")
	methodNotAllowedBody = []byte("Method Not Allowed\n")
)

// Handler is the HTTP/1.1 echo server's server.Handler: GET and HEAD on "/"
// answer 200 "Hello, World!" (text/plain); POST and PUT on "/echo" answer
// 200 with the request body (application/octet-stream); another method on
// either gets 405 with Allow, any other path 404. Every decoded request gets
// exactly one response, in order, so keep-alive and pipelining work; the
// connection closes after the response when the request does not keep it
// alive (HTTP/1.1 "Connection: close", HTTP/1.0 without
// "Connection: keep-alive"). A request that does not parse is answered with
// its http1 status (400, 411, 413, 414, 417, 431, 505) and closes the
// connection. Date headers come from a DateCache formatted at most once a
// second, with the clock read once per read batch, not per request.
//
// Respond is the transport-free core. The steady path (a request that
// parses, a response that fits the out-queue) does not allocate. A Handler
// is safe for concurrent use by several loops.
type Handler struct {
	codec Codec
}

var _ server.Handler = (*Handler)(nil)

// NewHandler returns a handler for frames cut by codec, which must be the
// engine's Config.Codec, so the handler's strict parse applies the same
// limits. codec.Clock is the Date header's clock (nil: time.Now).
func NewHandler(codec Codec) *Handler {
	return &Handler{codec: codec}
}

// Codec returns the codec the handler was made with, for Config.Codec.
func (h *Handler) Codec() Codec { return h.codec }

// OnOpen does nothing: connections carry no state of their own.
func (h *Handler) OnOpen(*server.Conn) server.Action { return server.None }

// OnClose does nothing.
func (h *Handler) OnClose(*server.Conn, error) {}

// maxHeadBytes bounds a response's size beyond the request frame's (its
// status line and header fields; an echoed body is at most the frame):
// OnFrame encodes into Conn.AvailableBuffer when it has this much room more
// than the frame, and into the scratch buffer otherwise.
const maxHeadBytes = 512

// OnFrame answers one request with one Conn.Write, encoded in place in the
// out-queue (Conn.AvailableBuffer) when it fits. A request that does not
// parse closes the connection with the http1 error as the cause once the
// 400 (or other status) is flushed; "Connection: close" closes it with
// Action Close; a response that does not fit the out-queue closes it with
// ErrQueueFull.
func (h *Handler) OnFrame(c *server.Conn, frame []byte) server.Action {
	s := getScratch()
	now := s.clock(frame, h.codec.Clock)
	dst := c.AvailableBuffer() // the response is encoded straight into the out-queue
	inScratch := cap(dst) < len(frame)+maxHeadBytes
	if inScratch {
		dst = s.out[:0]
	}
	out, closeAfter, cause := h.respond(s, dst, frame, now)
	if inScratch {
		s.out = out
	}
	err := c.Write(out)
	putScratch(s)
	switch {
	case err != nil:
		_ = c.CloseWithError(err)
	case cause != nil:
		_ = c.CloseWithError(cause)
	case closeAfter:
		return server.Close
	}
	return server.None
}

// Respond appends to dst the response to the request in frame (a frame
// Codec.Decode returned) with the Date of now, and reports whether the
// connection must close after it: closeAfter without a cause when the
// request does not keep the connection alive, with the parse error as cause
// when the request is malformed. It does not allocate when dst has room.
func (h *Handler) Respond(dst, frame []byte, now time.Time) (out []byte, closeAfter bool, cause error) {
	s := getScratch()
	defer putScratch(s)
	return h.respond(s, dst, frame, now)
}

func (h *Handler) respond(s *scratch, dst, frame []byte, now time.Time) ([]byte, bool, error) {
	req := &s.req
	n, err := h.codec.limited().DecodeRequest(frame, req)
	if err == nil && n != len(frame) {
		err = ErrFramingMismatch
	}
	date := s.dates.Value(now)
	if err != nil {
		req.Reset()
		return http1.AppendDecodeError(dst, err, date), true, err
	}
	switch string(req.Path) {
	case HelloPath:
		switch {
		case req.MethodIs("GET") && req.KeepAlive && req.ProtoMinor == 1:
			dst = append(dst, s.hello(req, now, date)...)
		case req.MethodIs("GET") || req.MethodIs("HEAD"):
			dst = req.AppendResponse(dst, 200, HelloContentType, helloBody, date)
		default:
			dst = methodNotAllowed(dst, req, allowHello, date)
		}
	case EchoPath:
		if req.MethodIs("POST") || req.MethodIs("PUT") {
			dst = req.AppendResponse(dst, 200, EchoContentType, req.Body, date)
		} else {
			dst = methodNotAllowed(dst, req, allowEcho, date)
		}
	default:
		dst = req.AppendResponse(dst, 404, errorContentType, notFoundBody, date)
	}
	return dst, !req.KeepAlive, nil
}

// The Allow field lines of the two routes' 405 responses.
const (
	allowHello = "Allow: GET, HEAD\r\n"
	allowEcho  = "Allow: POST, PUT\r\n"
)

// methodNotAllowed appends a 405 with allowField, the Allow field line RFC
// 9110 section 15.5.6 requires.
func methodNotAllowed(dst []byte, req *http1.Request, allowField string, date []byte) []byte {
	start := len(dst)
	dst = req.AppendResponse(dst, 405, errorContentType, methodNotAllowedBody, date)
	return http1.InsertField(dst, start, allowField)
}
