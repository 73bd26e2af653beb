package peers

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/logging"

	"github.com/sluicenet/sluice/internal/spin"
	"github.com/sluicenet/sluice/protocol"
)

// gnetEcho is an idiomatic gnet v2 echo handler: OnTraffic peeks at everything
// buffered, echoes each complete frame into one reply, writes it with one
// Conn.Write (a direct write(2) on the loop) and discards what it consumed;
// an incomplete frame stays in gnet's inbound buffer.
type gnetEcho struct {
	gnetBase
	codec protocol.Codec
	isRaw bool
	work  time.Duration
	// out holds reply scratch buffers; a pool because OnTraffic runs on
	// several loops at once when there is more than one.
	out sync.Pool
}

func (h *gnetEcho) OnTraffic(c gnet.Conn) gnet.Action {
	if h.isRaw {
		buf, _ := c.Next(-1)
		if len(buf) > 0 {
			spin.For(h.work)
			if _, err := c.Write(buf); err != nil {
				return gnet.Close
			}
		}
		return gnet.None
	}
	in, _ := c.Peek(-1)
	bp := h.out.Get().(*[]byte)
	out, used, err := echoFrames(h.codec, in, (*bp)[:0], h.work)
	if used > 0 {
		_, _ = c.Discard(used)
	}
	var werr error
	if len(out) > 0 {
		_, werr = c.Write(out)
	}
	*bp = out
	h.out.Put(bp)
	if err != nil || werr != nil {
		return gnet.Close
	}
	return gnet.None
}

// serveGnet runs the gnet peer.
func serveGnet(ctx context.Context, cfg Config, codec protocol.Codec, isRaw bool, ready func(net.Addr)) error {
	h := &gnetEcho{codec: codec, isRaw: isRaw, work: cfg.Work}
	h.out.New = func() any { b := make([]byte, 0, 64<<10); return &b }
	return runGnet(ctx, cfg, ready, h)
}

// gnetBase is what the gnet peers' handlers share: gnet's default event
// handlers and an OnBoot that keeps the engine, for stopping it, and reports
// the address.
type gnetBase struct {
	gnet.BuiltinEventEngine
	ready func(net.Addr)
	addr  net.Addr
	eng   gnet.Engine
	boot  chan struct{}
}

func (b *gnetBase) OnBoot(eng gnet.Engine) gnet.Action {
	b.eng = eng
	b.ready(b.addr)
	close(b.boot)
	return gnet.None
}

func (b *gnetBase) base() *gnetBase { return b }

// gnetHandler is a gnet peer's handler, with its gnetBase.
type gnetHandler interface {
	gnet.EventHandler
	base() *gnetBase
}

// runGnet runs h on cfg.Addr until ctx is done (it returns nil then) or gnet
// fails: one event loop per GOMAXPROCS (cfg.Loops) and SO_REUSEPORT, the
// options gnet recommends for a multi-core server on Linux; everything else
// at gnet's defaults (TCP_NODELAY on, level-triggered loops, 64 KiB read
// buffer). ready gets the address once gnet has booted.
func runGnet(ctx context.Context, cfg Config, ready func(net.Addr), h gnetHandler) error {
	addr, err := ResolvePort(cfg.Addr)
	if err != nil {
		return err
	}
	tcpAddr, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return err
	}
	b := h.base()
	b.ready, b.addr, b.boot = ready, tcpAddr, make(chan struct{})
	done := make(chan struct{})
	stopped := make(chan struct{}) // the stopper has returned (Engine.Stop polls for up to 500 ms)
	go func() {
		defer close(stopped)
		select {
		case <-ctx.Done():
			select {
			case <-b.boot:
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_ = b.eng.Stop(sctx)
				cancel()
			case <-done:
			}
		case <-done:
		}
	}()
	err = gnet.Run(h, "tcp://"+addr,
		gnet.WithMulticore(true),
		gnet.WithNumEventLoop(cfg.Loops),
		gnet.WithReusePort(true),
		gnet.WithLogLevel(logging.ErrorLevel),
	)
	close(done)
	<-stopped
	if ctx.Err() != nil {
		return nil
	}
	return err
}
