// Package httpecho is the HTTP/1.1 side of the sluice echo server
// (cmd/echo -codec http): plaintext "Hello, World!" on "/" and body echo on
// "/echo", on the sluice engine, so that wrk, hey and any HTTP client can
// load it.
//
// It owns:
//   - Handler: a server.Handler over an http1.Server with the two routes.
//     http1.Server answers every request the engine decodes, in order
//     (keep-alive, pipelining), honours "Connection: close" and HTTP/1.0's
//     default close, answers malformed input with the http1 status (400,
//     411, 413, 414, 417, 431, 505) and closes, and writes Date with the
//     clock read once per read batch; the handler adds a once-a-second
//     cache of the hello response. Respond is its transport-free core.
//     Nothing on the steady path allocates.
//   - Codec: http1.ServerCodec (the strict parse, left for the handler so
//     each request is scanned once, framing errors passed through,
//     refusals answered with 429 or 503 and Retry-After) with a 64 KiB
//     default body limit, since the echo route queues the body again as
//     its response.
//
// It refuses to own HTTP syntax, response encoding and the server codec
// (protocol/http1), the event loop and budgets (server), admission policy
// (admission), routing beyond its two paths, TLS and HTTP/2.
//
// Usage sketch (what cmd/echo does):
//
//	codec := httpecho.Codec{} // http1's limits, 64 KiB bodies, time.Now
//	e, err := server.New(server.Config{Addr: "127.0.0.1:8080", Codec: codec},
//		httpecho.NewHandler(codec))
//	if err != nil {
//		return err
//	}
//	return e.Serve(ctx)
//
// and then, for example:
//
//	wrk -t1 -c64 -d10s http://127.0.0.1:8080/
//	curl --data-binary @file http://127.0.0.1:8080/echo
package httpecho
