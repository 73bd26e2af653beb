package httpecho

import (
	"sync/atomic"
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

// Handler is the HTTP/1.1 echo server's server.Handler, an http1.Server
// with two routes: GET and HEAD on "/" answer 200 "Hello, World!"
// (text/plain); POST and PUT on "/echo" answer 200 with the request body
// (application/octet-stream); another method on either gets 405 with Allow,
// any other path 404. http1.Server does the rest: one response per request,
// in order (keep-alive, pipelining), the close after a request that does
// not keep the connection alive, the status of a request that does not
// parse, Date headers formatted at most once a second with the clock read
// once per read batch.
//
// Respond is the transport-free core. The steady path (a request that
// parses, a response that fits the out-queue) does not allocate. A Handler
// is safe for concurrent use by several loops.
type Handler struct {
	codec Codec
	srv   http1.Server
	hello atomic.Pointer[helloCache]
}

// helloCache is the response to a keep-alive HTTP/1.1 GET / for one Date
// value. It depends on nothing else, so it is built once a second and
// copied whole for every other request, sparing the hot route the header
// formatting. It is immutable once stored.
type helloCache struct {
	date, resp []byte
}

var _ server.Handler = (*Handler)(nil)

// NewHandler returns a handler for frames cut by codec, which must be the
// engine's Config.Codec, so the handler's strict parse applies the same
// limits. codec.Clock is the Date header's clock (nil: time.Now).
func NewHandler(codec Codec) *Handler {
	h := &Handler{codec: codec}
	h.srv = http1.Server{Codec: codec.Server(), Route: h.route}
	return h
}

// Codec returns the codec the handler was made with, for Config.Codec.
func (h *Handler) Codec() Codec { return h.codec }

// OnOpen does nothing: connections carry no state of their own.
func (h *Handler) OnOpen(*server.Conn) server.Action { return server.None }

// OnClose does nothing.
func (h *Handler) OnClose(*server.Conn, error) {}

// OnFrame answers one request with one Conn.Write (http1.Server.Serve). A
// request that does not parse closes the connection with the http1 error
// as the cause once the 400 (or other status) is flushed; "Connection:
// close" closes it with Action Close; a response that does not fit the
// out-queue closes it with ErrQueueFull.
func (h *Handler) OnFrame(c *server.Conn, frame []byte) server.Action {
	if h.srv.Serve(c, frame) {
		return server.Close
	}
	return server.None
}

// Respond appends to dst the response to the request in frame (a frame
// Codec.Decode returned) with the Date of now: http1.Server.Respond. It
// does not allocate when dst has room.
func (h *Handler) Respond(dst, frame []byte, now time.Time) (out []byte, closeAfter bool, cause error) {
	return h.srv.Respond(dst, frame, now)
}

// route is the http1.Route of the two paths.
func (h *Handler) route(dst []byte, req *http1.Request, date []byte) []byte {
	switch string(req.Path) {
	case HelloPath:
		switch {
		case req.MethodIs("GET") && req.KeepAlive && req.ProtoMinor == 1:
			return append(dst, h.helloResponse(req, date)...)
		case req.MethodIs("GET") || req.MethodIs("HEAD"):
			return req.AppendResponse(dst, 200, HelloContentType, helloBody, date)
		default:
			return methodNotAllowed(dst, req, allowHello, date)
		}
	case EchoPath:
		if req.MethodIs("POST") || req.MethodIs("PUT") {
			return req.AppendResponse(dst, 200, EchoContentType, req.Body, date)
		}
		return methodNotAllowed(dst, req, allowEcho, date)
	}
	return req.AppendResponse(dst, 404, errorContentType, notFoundBody, date)
}

// helloResponse returns the response to a keep-alive HTTP/1.1 GET / (req)
// whose Date value is date, from the cache when it holds that date. Loops
// that race to refresh it each build a valid response; the last store
// wins.
func (h *Handler) helloResponse(req *http1.Request, date []byte) []byte {
	if c := h.hello.Load(); c != nil && string(c.date) == string(date) {
		return c.resp
	}
	c := &helloCache{date: append([]byte(nil), date...), resp: req.AppendResponse(nil, 200, HelloContentType, helloBody, date)}
	h.hello.Store(c)
	return c.resp
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
