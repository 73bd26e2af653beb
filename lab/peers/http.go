package peers

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/sluicenet/sluice/internal/httpecho"
)

// The HTTP peers: the same two routes as cmd/echo -codec http ("Hello,
// World!" on GET and HEAD /, the body echoed on POST and PUT /echo, 405
// with Allow for other methods, 404 elsewhere).
const (
	// KindGnetHTTP is an HTTP/1.1 server on gnet v2 that frames and answers
	// requests with exactly the code sluice's HTTP echo runs
	// (httpecho.Codec.Decode, httpecho.Handler.Respond): the same parse, the
	// same bytes out, so a comparison measures the engines.
	KindGnetHTTP Kind = "gnet-http"
	// KindNetHTTP is the standard library's net/http server with a
	// ServeMux, the way a Go programmer would write it.
	KindNetHTTP Kind = "nethttp"
)

// HTTPKinds lists the HTTP peer kinds.
func HTTPKinds() []Kind { return []Kind{KindGnetHTTP, KindNetHTTP} }

// serveHTTP runs an HTTP peer; cfg.Codec is ignored.
func serveHTTP(ctx context.Context, cfg Config, ready func(net.Addr)) error {
	switch cfg.Kind {
	case KindGnetHTTP:
		return serveGnetHTTP(ctx, cfg, ready)
	case KindNetHTTP:
		return serveNetHTTP(ctx, cfg, ready)
	}
	return ErrUnknownKind
}

// gnetHTTP is the gnet v2 HTTP handler: OnTraffic peeks at everything
// buffered, answers every complete request into one reply buffer (the clock
// read once per read, as sluice does), writes it with one Conn.Write and
// discards what it consumed; an incomplete request stays in gnet's inbound
// buffer. A request that does not keep the connection alive, or does not
// parse, closes it after its response.
type gnetHTTP struct {
	gnetBase
	codec httpecho.Codec
	h     *httpecho.Handler
	out   sync.Pool // reply buffers: OnTraffic runs on several loops at once
}

func (g *gnetHTTP) OnTraffic(c gnet.Conn) gnet.Action {
	in, _ := c.Peek(-1)
	bp := g.out.Get().(*[]byte)
	out := (*bp)[:0]
	now := time.Now()
	used, closeAfter := 0, false
	for used < len(in) && !closeAfter {
		frame, n, err := g.codec.Decode(in[used:])
		if err != nil || n == 0 {
			break // Decode passes framing errors through as frames: err is nil
		}
		out, closeAfter, _ = g.h.Respond(out, frame, now)
		used += n
	}
	if used > 0 {
		_, _ = c.Discard(used)
	}
	var werr error
	if len(out) > 0 {
		_, werr = c.Write(out)
	}
	if cap(out) > 64<<10 {
		out = make([]byte, 0, 4<<10)
	}
	*bp = out
	g.out.Put(bp)
	if closeAfter || werr != nil {
		return gnet.Close
	}
	return gnet.None
}

// serveGnetHTTP runs the gnet HTTP peer with the options of the gnet echo
// peer: one event loop per cfg.Loops, SO_REUSEPORT, gnet's defaults
// otherwise.
func serveGnetHTTP(ctx context.Context, cfg Config, ready func(net.Addr)) error {
	var codec httpecho.Codec
	g := &gnetHTTP{codec: codec, h: httpecho.NewHandler(codec)}
	g.out.New = func() any { b := make([]byte, 0, 4<<10); return &b }
	return runGnet(ctx, cfg, ready, g)
}

// netHTTPMaxBodyBytes matches httpecho.DefaultMaxBodyBytes, the body limit
// of the other two servers.
const netHTTPMaxBodyBytes = httpecho.DefaultMaxBodyBytes

var netHTTPHello = []byte(httpecho.Body)

// netHTTPMux is the net/http peer's routes.
func netHTTPMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Server", "nethttp")
		h.Set("Content-Type", httpecho.HelloContentType)
		h.Set("Content-Length", strconv.Itoa(len(netHTTPHello)))
		_, _ = w.Write(netHTTPHello)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost && r.Method != http.MethodPut {
			w.Header().Set("Allow", "POST, PUT")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, netHTTPMaxBodyBytes))
		if err != nil {
			http.Error(w, "Content Too Large", http.StatusRequestEntityTooLarge)
			return
		}
		h := w.Header()
		h.Set("Server", "nethttp")
		h.Set("Content-Type", httpecho.EchoContentType)
		h.Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	})
	return mux
}

// serveNetHTTP runs net/http's server: a goroutine per connection, its own
// parser, keep-alive and pipelining (requests answered one after another).
func serveNetHTTP(ctx context.Context, cfg Config, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: netHTTPMux(), ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	ready(ln.Addr())
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = srv.Close()
		case <-stopped:
		}
	}()
	err = srv.Serve(ln)
	close(stopped)
	if errors.Is(err, http.ErrServerClosed) && ctx.Err() != nil {
		return nil
	}
	return err
}
