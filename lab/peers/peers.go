package peers

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"time"

	"github.com/sluicenet/sluice/internal/spin"
	"github.com/sluicenet/sluice/protocol"
)

// Kind names a peer server.
type Kind string

// The peers.
const (
	// KindGnet is an echo server on github.com/panjf2000/gnet/v2.
	KindGnet Kind = "gnet"
	// KindNet is a goroutine-per-connection echo server on package net.
	KindNet Kind = "net"
	// KindTrivial is the cheapest echo possible (raw epoll, bytes echoed as
	// read, no decoding): the stand-in for an infinitely fast server when the
	// load generator's ceiling is measured. It is not a peer to compare with.
	KindTrivial Kind = "trivial"
)

// Kinds lists the peer kinds.
func Kinds() []Kind { return []Kind{KindGnet, KindNet, KindTrivial} }

// Config describes one peer server.
type Config struct {
	// Kind selects the server.
	Kind Kind
	// Codec is raw, length or line, as for cmd/echo.
	Codec string
	// Addr is the listen address; port 0 picks a free port.
	Addr string
	// Loops is the number of event loops of the gnet and trivial servers;
	// zero means runtime.GOMAXPROCS(0). The net server has no loops of its own.
	Loops int
	// Work is simulated CPU cost per frame (per read with the raw codec): a
	// calibrated busy loop (internal/spin) before the echo, the same as
	// cmd/echo -work, so that every server does the same work per request. The trivial and HTTP peers
	// ignore it.
	Work time.Duration
}

// Serve runs the server cfg describes until ctx is done, calling ready once
// with the listening address when it accepts connections. It returns nil after
// a shutdown caused by ctx, or the error that stopped the server.
func Serve(ctx context.Context, cfg Config, ready func(net.Addr)) error {
	if cfg.Loops <= 0 {
		cfg.Loops = runtime.GOMAXPROCS(0)
	}
	if cfg.Kind == KindGnetHTTP || cfg.Kind == KindNetHTTP {
		return serveHTTP(ctx, cfg, ready) // HTTP/1.1; Codec is ignored
	}
	codec, err := protocol.ByName(cfg.Codec, 0)
	if err != nil {
		return err
	}
	if cfg.Loops <= 0 {
		cfg.Loops = runtime.GOMAXPROCS(0)
	}
	_, isRaw := codec.(protocol.Raw)
	switch cfg.Kind {
	case KindGnet:
		return serveGnet(ctx, cfg, codec, isRaw, ready)
	case KindNet:
		return serveNet(ctx, cfg, codec, isRaw, ready)
	case KindTrivial:
		return serveTrivial(ctx, cfg, ready)
	}
	return fmt.Errorf("%w %q (want gnet, net, trivial, gnet-http or nethttp)", ErrUnknownKind, cfg.Kind)
}

// ResolvePort returns addr with port 0 replaced by a port that was free a
// moment ago. Servers that open one SO_REUSEPORT socket per loop need a fixed
// port: with port 0 each socket would get a port of its own.
func ResolvePort(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if port != "0" {
		return addr, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	p := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		return "", err
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

// echoFrames decodes every complete frame at the start of in, spins work for
// each, appends its encoded echo to out, and returns out and the bytes
// consumed. err is the codec's: the stream can never become valid.
func echoFrames(codec protocol.Codec, in, out []byte, work time.Duration) ([]byte, int, error) {
	p := 0
	for p < len(in) {
		frame, n, err := codec.Decode(in[p:])
		if err != nil {
			return out, p, err
		}
		if n == 0 {
			break
		}
		spin.For(work)
		out = codec.AppendEncode(out, frame)
		p += n
	}
	return out, p, nil
}
