// Command pool runs a handler that blocks (a simulated database lookup of
// -latency) on the engine's bounded worker pool, never on an event loop:
// lines in, "<key>=<value>" lines out. A line that waits longer than
// -queue-timeout for a worker, or finds the queue full, is refused with
// "-REJECT queue <ms>", and the lookup's context carries each request's
// deadline (-request-timeout from ingress).
//
//	go run ./examples/pool -addr 127.0.0.1:7102 -latency 20ms
//	printf 'alpha\nbeta\n' | nc 127.0.0.1 7102
package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/sluicenet/sluice/examples/demo"
	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/server"
)

// lookup is the blocking handler: it waits latency (or until the request's
// deadline) and answers from a pretend database. Frames are the pool's
// copies, valid during ServeFrame; replies go out through the loop.
type lookup struct{ latency time.Duration }

func (l lookup) ServeFrame(ctx context.Context, c *server.Conn, frame []byte) server.Action {
	select {
	case <-time.After(l.latency): // the database answered
	case <-ctx.Done(): // past the request's deadline, or shutting down
		_ = c.WriteFrame(fmt.Appendf(nil, "-TIMEOUT %s", frame))
		return server.None
	}
	if err := c.WriteFrame(fmt.Appendf(nil, "%s=value", frame)); err != nil {
		return server.Close
	}
	return server.None
}

func main() {
	addr := flag.String("addr", "127.0.0.1:7102", "listen address (port 0: any free port)")
	latency := flag.Duration("latency", 20*time.Millisecond, "how long each lookup blocks")
	workers := flag.Int("workers", 8, "worker goroutines")
	queueTimeout := flag.Duration("queue-timeout", 100*time.Millisecond, "refuse a line not picked up by a worker within this")
	requestTimeout := flag.Duration("request-timeout", time.Second, "each request's deadline from ingress")
	flag.Parse()
	demo.Serve(server.New(server.Config{
		Addr:  *addr,
		Codec: protocol.Delimited{MaxFrameBytes: 1024},
		Pool: server.PoolConfig{
			Handler:        lookup{latency: *latency},
			Workers:        *workers,
			QueueLen:       64,
			QueueTimeout:   *queueTimeout,
			RequestTimeout: *requestTimeout,
		},
	}, server.HandlerFuncs{})) // every frame goes to the pool; the loop handler has nothing to do
}
