// Command pubsub-gnet is examples/pubsub's protocol on gnet v2, written
// the way a gnet user would: frames with a 2-byte big-endian length
// prefix, topics in a map under a mutex with copy-on-write subscriber
// lists, and each publish delivered with AsyncWrite on every subscriber's
// connection (gnet queues asynchronous writes without bound and never
// drops them). It exists for docs/FANOUT.md's comparison: run
// examples/pubsub/pubsubload against it and against examples/pubsub
// (lab/fanout-compare.sh does both).
//
//	'S' topic            subscribe                     +OK
//	'U' topic            unsubscribe                   +OK
//	'P' topic ' ' body   publish (no reply)            every subscriber gets 'M' topic ' ' body
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/logging"
)

// broker is the gnet event handler and the topics.
type broker struct {
	gnet.BuiltinEventEngine
	addr   string
	mu     sync.Mutex  // guards eng and topics (the subscriber lists are read without it)
	eng    gnet.Engine // set by OnBoot, for stopping
	topics map[string]*atomic.Pointer[[]gnet.Conn]
}

// session is one connection's subscriptions, for OnClose.
type session struct{ topics []string }

func (b *broker) OnBoot(eng gnet.Engine) gnet.Action {
	b.mu.Lock()
	b.eng = eng
	b.mu.Unlock()
	fmt.Println("listening on", b.addr)
	return gnet.None
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

// OnTraffic decodes every complete frame in the inbound buffer; an
// incomplete one stays there for the next call.
func (b *broker) OnTraffic(c gnet.Conn) gnet.Action {
	ss := c.Context().(*session)
	for {
		h, err := c.Peek(2)
		if err != nil || len(h) < 2 {
			return gnet.None
		}
		n := int(binary.BigEndian.Uint16(h))
		f, err := c.Peek(2 + n)
		if err != nil || len(f) < 2+n {
			return gnet.None
		}
		frame := f[2:]
		if len(frame) < 2 {
			_, _ = c.Discard(2 + n)
			return gnet.Close
		}
		switch op, arg := frame[0], frame[1:]; op {
		case 'S':
			name := string(arg)
			if !slices.Contains(ss.topics, name) {
				ss.topics = append(ss.topics, name)
				b.subscribe(c, name)
			}
			_, _ = c.Write(encode(nil, []byte("+OK")))
		case 'U':
			name := string(arg)
			if i := slices.Index(ss.topics, name); i >= 0 {
				ss.topics = slices.Delete(ss.topics, i, i+1)
				b.unsubscribe(c, name)
			}
			_, _ = c.Write(encode(nil, []byte("+OK")))
		case 'P':
			name, _, ok := bytes.Cut(arg, []byte(" "))
			if ok {
				b.publish(name, arg)
			}
		default:
			_, _ = c.Discard(2 + n)
			return gnet.Close
		}
		_, _ = c.Discard(2 + n)
	}
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
// with AsyncWrite: one encoded copy, shared by the subscribers' queues
// (AsyncWrite copies it into each connection's outbound buffer on its
// loop).
func (b *broker) publish(name, arg []byte) {
	b.mu.Lock()
	t := b.topics[string(name)]
	b.mu.Unlock()
	if t == nil {
		return
	}
	out := encode(nil, append([]byte{'M'}, arg...))
	for _, s := range *t.Load() {
		_ = s.AsyncWrite(out, nil)
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:7103", "listen address")
	loops := flag.Int("loops", 0, "event loops (0: one per CPU)")
	flag.Parse()
	if _, _, err := net.SplitHostPort(*addr); err != nil {
		log.Fatal(err)
	}
	b := &broker{addr: *addr, topics: map[string]*atomic.Pointer[[]gnet.Conn]{}}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		b.mu.Lock()
		eng := b.eng
		b.mu.Unlock()
		if eng.Validate() == nil {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = eng.Stop(sctx)
		}
	}()
	opts := []gnet.Option{gnet.WithMulticore(true), gnet.WithReusePort(true), gnet.WithLogLevel(logging.ErrorLevel)}
	if *loops > 0 {
		opts = append(opts, gnet.WithNumEventLoop(*loops))
	}
	if err := gnet.Run(b, "tcp://"+*addr, opts...); err != nil {
		log.Fatal(err)
	}
}
