package main

import (
	"context"
	"flag"
	"fmt"
	"net"

	"github.com/sluicenet/sluice/bench/peers"
)

// runPeer runs a peer echo server and prints "listening on HOST:PORT" once it
// accepts connections, like cmd/echo.
func runPeer(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench peer", flag.ExitOnError)
	kind := fs.String("kind", "gnet", "peer server: gnet, net or trivial")
	codec := fs.String("codec", "length", "codec: raw, length or line")
	addr := fs.String("addr", "127.0.0.1:0", "listen address (port 0 picks a free port)")
	loops := fs.Int("loops", 0, "event loops of the gnet and trivial servers (0: GOMAXPROCS)")
	_ = fs.Parse(args)
	cfg := peers.Config{Kind: peers.Kind(*kind), Codec: *codec, Addr: *addr, Loops: *loops}
	return peers.Serve(ctx, cfg, func(a net.Addr) { fmt.Printf("listening on %s\n", a) })
}
