package cli

import (
	"context"
	"flag"
	"fmt"
	"net"

	"github.com/sluicenet/sluice/lab/peers"
)

// runPeer runs a peer echo server and prints "listening on HOST:PORT" once it
// accepts connections, like cmd/echo.
func runPeer(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench peer", flag.ExitOnError)
	kind := fs.String("kind", "gnet", "peer server: gnet, net or trivial (echo), gnet-http or nethttp (HTTP/1.1, like cmd/echo -codec http)")
	codec := fs.String("codec", "length", "codec of the echo peers: raw, length or line")
	addr := fs.String("addr", "127.0.0.1:0", "listen address (port 0 picks a free port)")
	loops := fs.Int("loops", 0, "event loops of the gnet and trivial servers (0: GOMAXPROCS)")
	work := fs.Duration("work", 0, "simulated CPU cost per frame of the gnet and net echo peers (a busy loop, like cmd/echo -work)")
	_ = fs.Parse(args)
	cfg := peers.Config{Kind: peers.Kind(*kind), Codec: *codec, Addr: *addr, Loops: *loops, Work: *work}
	done := make(chan error, 1)
	go func() {
		done <- peers.Serve(ctx, cfg, func(a net.Addr) { fmt.Printf("listening on %s\n", a) })
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// A peer is a process of its own, started and stopped by the
		// comparison runner: on SIGINT/SIGTERM it exits at once rather than
		// wait for a graceful shutdown (gnet's Engine.Stop polls every
		// 500 ms), which would only slow the runs down.
		return nil
	}
}
