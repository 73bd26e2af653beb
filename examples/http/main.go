// Command http serves "Hello, World!" over HTTP/1.1 with keep-alive and
// pipelining, on the engine, through protocol/http1's server codec: the
// route is the only code the program writes.
//
//	go run ./examples/http -addr 127.0.0.1:8080
//	curl -i http://127.0.0.1:8080/
//	wrk -t1 -c64 -d10s http://127.0.0.1:8080/
package main

import (
	"flag"

	"github.com/sluicenet/sluice/examples/demo"
	"github.com/sluicenet/sluice/protocol/http1"
	"github.com/sluicenet/sluice/server"
)

var hello = []byte("Hello, World!\n")

// route answers GET and HEAD on "/" (http1 leaves out a HEAD's body) and
// 404 elsewhere. It appends into dst, so it does not allocate.
func route(dst []byte, req *http1.Request, date []byte) []byte {
	if string(req.Path) != "/" {
		return req.AppendResponse(dst, 404, "text/plain", []byte("not found\n"), date)
	}
	return req.AppendResponse(dst, 200, "text/plain", hello, date)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address (port 0: any free port)")
	flag.Parse()
	srv := &http1.Server{Route: route}
	demo.Serve(server.New(server.Config{Addr: *addr, Codec: srv.Codec}, server.HandlerFuncs{
		Frame: func(c *server.Conn, frame []byte) server.Action {
			if srv.Serve(c, frame) {
				return server.Close // the request asked for "Connection: close"
			}
			return server.None
		},
	}))
}
