// Command pubsub-gnet is examples/pubsub's protocol on gnet v2, written
// the way a gnet user would: frames with a 2-byte big-endian length
// prefix decoded in OnTraffic (an incomplete frame stays in gnet's inbound
// buffer), topics in a map under a mutex with copy-on-write subscriber
// lists, and each publish delivered with AsyncWrite on every subscriber's
// connection (gnet queues asynchronous writes without bound and never
// drops them). It exists for docs/FANOUT.md's comparison: run
// examples/pubsub/pubsubload against it and against examples/pubsub
// (lab/fanout-compare.sh does both).
//
//	'S' topic            subscribe                     +OK
//	'U' topic            unsubscribe                   +OK
//	'P' topic ' ' body   publish (no reply)            every subscriber gets 'M' topic ' ' body
//
// A malformed frame gets the same error reply as from examples/pubsub.
// The gnet options are the lab's (lab/peers/gnet.go): multicore, -loops
// event loops (0: one per CPU) and SO_REUSEPORT. It prints "listening on
// HOST:PORT" once every loop listens (port 0 picks a free port first) and
// stops on SIGINT or SIGTERM.
//
//	go run ./cmd/pubsub-gnet -addr 127.0.0.1:0
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/logging"

	"github.com/sluicenet/sluice/lab/peers"
)

// broker is the gnet event handler and the topics.
type broker struct {
	gnet.BuiltinEventEngine
	addr  string
	ready func(addr string) // called once, from the first OnTick
	boot  chan struct{}     // closed by OnBoot
	eng   gnet.Engine       // set by OnBoot, for stopping

	mu     sync.Mutex // guards topics (the subscriber lists are read without it)
	topics map[string]*atomic.Pointer[[]gnet.Conn]
}

// session is one connection's subscriptions, for OnClose.
type session struct{ topics []string }

func (b *broker) OnBoot(eng gnet.Engine) gnet.Action {
	b.eng = eng
	close(b.boot)
	return gnet.None
}

// OnTick runs once gnet has started its loops: with SO_REUSEPORT each
// loop binds its own listener after OnBoot, so this, not OnBoot, is when
// a client's connection can reach any loop.
func (b *broker) OnTick() (time.Duration, gnet.Action) {
	if b.ready != nil {
		b.ready(b.addr)
		b.ready = nil
	}
	return time.Hour, gnet.None
}

func (b *broker) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	c.SetContext(&session{})
	return nil, gnet.None
}

func (b *broker) OnClose(c gnet.Conn, _ error) gnet.Action {
	ss, _ := c.Context().(*session)
	if ss == nil {
		return gnet.None
	}
	for _, t := range ss.topics {
		b.unsubscribe(c, t)
	}
	return gnet.None
}

// OnTraffic serves every complete frame in the inbound buffer; an
// incomplete one stays there for the next call.
func (b *broker) OnTraffic(c gnet.Conn) gnet.Action {
	ss := c.Context().(*session)
	for {
		h, err := c.Peek(2)
		if err != nil {
			return gnet.None // less than a length prefix
		}
		n := 2 + int(binary.BigEndian.Uint16(h))
		f, err := c.Peek(n)
		if err != nil {
			return gnet.None // an incomplete frame
		}
		b.serve(c, ss, f[2:])
		if _, err := c.Discard(n); err != nil {
			return gnet.Close
		}
	}
}

// serve answers one frame, as examples/pubsub does.
func (b *broker) serve(c gnet.Conn, ss *session, frame []byte) {
	if len(frame) < 2 {
		reply(c, "-want an opcode and a topic")
		return
	}
	switch op, arg := frame[0], frame[1:]; op {
	case 'S':
		name := string(arg)
		if !slices.Contains(ss.topics, name) {
			ss.topics = append(ss.topics, name)
			b.subscribe(c, name)
		}
		reply(c, "+OK")
	case 'U':
		name := string(arg)
		if i := slices.Index(ss.topics, name); i >= 0 {
			ss.topics = slices.Delete(ss.topics, i, i+1)
			b.unsubscribe(c, name)
		}
		reply(c, "+OK")
	case 'P':
		name, _, ok := bytes.Cut(arg, []byte(" "))
		if !ok {
			reply(c, "-want P topic body")
			return
		}
		b.publish(name, arg)
	default:
		reply(c, "-unknown opcode")
	}
}

// reply writes s as one frame on c's own loop (Conn.Write, buffered by
// gnet if the socket does not take it all).
func reply(c gnet.Conn, s string) {
	_, _ = c.Write(encode(nil, []byte(s)))
}

// encode appends body as one frame to b.
func encode(b, body []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(body)))
	return append(b, body...)
}

func (b *broker) subscribe(c gnet.Conn, name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.topics[name]
	if t == nil {
		t = &atomic.Pointer[[]gnet.Conn]{}
		t.Store(&[]gnet.Conn{})
		b.topics[name] = t
	}
	subs := append(slices.Clone(*t.Load()), c)
	t.Store(&subs)
}

func (b *broker) unsubscribe(c gnet.Conn, name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.topics[name]; t != nil {
		subs := slices.DeleteFunc(slices.Clone(*t.Load()), func(s gnet.Conn) bool { return s == c })
		t.Store(&subs)
	}
}

// publish sends "M topic body" (arg is "topic body") to every subscriber
// with AsyncWrite: one encoded copy, never changed afterwards, shared by
// the tasks queued on the subscribers' loops (each writes it to its
// socket or copies it into the connection's outbound buffer).
func (b *broker) publish(name, arg []byte) {
	b.mu.Lock()
	t := b.topics[string(name)]
	b.mu.Unlock()
	if t == nil {
		return
	}
	out := make([]byte, 0, 3+len(arg))
	out = binary.BigEndian.AppendUint16(out, uint16(1+len(arg)))
	out = append(append(out, 'M'), arg...)
	for _, s := range *t.Load() {
		_ = s.AsyncWrite(out, nil) // an error only for a connection already closed
	}
}

// serve runs the broker on addr until ctx ends (it returns nil then) or
// gnet fails; ready gets the address once every loop listens.
func serve(ctx context.Context, addr string, loops int, ready func(string)) error {
	addr, err := peers.ResolvePort(addr)
	if err != nil {
		return err
	}
	b := &broker{addr: addr, ready: ready, boot: make(chan struct{}), topics: map[string]*atomic.Pointer[[]gnet.Conn]{}}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		select {
		case <-b.boot:
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = b.eng.Stop(sctx)
		case <-done:
		}
	}()
	opts := []gnet.Option{
		gnet.WithMulticore(true),
		gnet.WithReusePort(true),
		gnet.WithTicker(true), // for OnTick, the ready signal
		gnet.WithLogLevel(logging.ErrorLevel),
	}
	if loops > 0 {
		opts = append(opts, gnet.WithNumEventLoop(loops))
	}
	err = gnet.Run(b, "tcp://"+addr, opts...)
	close(done)
	<-stopped
	if ctx.Err() != nil {
		return nil
	}
	if err == nil {
		err = errors.New("gnet stopped")
	}
	return err
}

func main() {
	addr := flag.String("addr", "127.0.0.1:7103", "listen address (port 0: any free port)")
	loops := flag.Int("loops", 0, "event loops (0: one per CPU)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, *addr, *loops, func(a string) { fmt.Println("listening on", a) }); err != nil {
		stop()
		log.Fatal(err)
	}
}
