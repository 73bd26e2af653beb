// Command echo is the smallest sluice server: it sends every byte back as
// it arrives (protocol.Raw frames whatever one read returned).
//
//	go run ./examples/echo -addr 127.0.0.1:7100
//	nc 127.0.0.1 7100
package main

import (
	"flag"

	"github.com/sluicenet/sluice/examples/demo"
	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/server"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7100", "listen address (port 0: any free port)")
	flag.Parse()
	demo.Serve(server.New(server.Config{Addr: *addr, Codec: protocol.Raw{}}, server.HandlerFuncs{
		Frame: func(c *server.Conn, frame []byte) server.Action {
			if err := c.Write(frame); err != nil { // the out-queue is full: the peer does not read
				return server.Close
			}
			return server.None
		},
	}))
}
