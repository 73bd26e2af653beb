// Command pubsub is a publish/subscribe server on sluice that loses
// nothing: frames with a 2-byte big-endian length prefix, topics
// subscribers join, and publishes fanned out to every subscriber of a
// topic on any loop (docs/FANOUT.md).
//
//	'S' topic            subscribe                     +OK
//	'U' topic            unsubscribe                   +OK
//	'P' topic ' ' body   publish (no reply)            every subscriber gets 'M' topic ' ' body
//
// A publish goes out with a server.Fanout: encoded once, one inbox task
// per loop, each subscriber's out-queue budget booked at once. A
// subscriber whose out-queue is full (ErrQueueFull) does not lose the
// message and is not disconnected: the publisher stops being read
// (Conn.PauseReads, so the kernel and TCP hold what it sends next), the
// message waits for that subscriber, and the publisher is read again once
// the subscriber drains (OnWritable) or, for a full inbox, after a
// millisecond. Per publisher, every subscriber gets the messages in order.
// A subscriber that stays full for -slow (it stopped reading) is closed
// with errSlowConsumer, which its OnClose sees, and the publishers go on.
//
//	go run ./examples/pubsub -addr 127.0.0.1:7102
//	go run ./examples/pubsub/pubsubload -addr 127.0.0.1:7102
package main

import (
	"bytes"
	"errors"
	"flag"
	"log"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice/examples/demo"
	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/server"
)

// retryAfter is when a publisher blocked by a full inbox (which has no
// writability event) tries again.
const retryAfter = time.Millisecond

// errSlowConsumer is the close cause of a subscriber that could not take a
// message for -slow.
var errSlowConsumer = errors.New("pubsub: slow consumer")

// broker holds the topics; the loops run in parallel.
type broker struct {
	e      *server.Engine
	slow   time.Duration // how long a message waits for a full subscriber before it is closed
	mu     sync.RWMutex  // guards topics and every topic's subscriber list (written only); a publish only reads
	topics map[string]*topic
}

// topic is a subscriber list, replaced whole on each change so that a
// publish reads it without a lock.
type topic struct {
	subs atomic.Pointer[[]*server.Conn]
}

// session is one connection's state (Conn.SetContext). Everything but
// waiters is touched only on the connection's loop.
type session struct {
	topics []string       // subscribed, for OnClose
	out    []byte         // reply and delivery frame, reused
	fan    *server.Fanout // a publisher's, made at its first publish
	queue  []pending      // a publisher's messages not yet given to every subscriber, oldest first
	timer  *time.Timer    // a publisher's retry after a full inbox
	retry  func(*server.Conn)

	mu      sync.Mutex
	waiters []*server.Conn // publishers waiting for this subscriber to drain
}

// pending is a message and the subscribers it still has to reach.
type pending struct {
	frame []byte
	to    []*server.Conn
	since time.Time // when it first found a subscriber full
}

func (b *broker) open(c *server.Conn) server.Action {
	c.SetContext(&session{})
	return server.None
}

func (b *broker) serve(c *server.Conn, frame []byte) server.Action {
	ss := c.Context().(*session)
	if len(frame) < 2 {
		return b.reply(c, ss, "-want an opcode and a topic")
	}
	switch op, arg := frame[0], frame[1:]; op {
	case 'S':
		b.subscribe(c, ss, string(arg))
		return b.reply(c, ss, "+OK")
	case 'U':
		b.unsubscribe(c, ss, string(arg))
		return b.reply(c, ss, "+OK")
	case 'P':
		name, _, ok := bytes.Cut(arg, []byte(" "))
		if !ok {
			return b.reply(c, ss, "-want P topic body")
		}
		b.publish(c, ss, name, arg)
		return server.None
	}
	return b.reply(c, ss, "-unknown opcode")
}

func (b *broker) reply(c *server.Conn, ss *session, s string) server.Action {
	ss.out = append(ss.out[:0], s...)
	if err := c.WriteFrame(ss.out); err != nil {
		return server.Close
	}
	return server.None
}

func (b *broker) subscribe(c *server.Conn, ss *session, name string) {
	if slices.Contains(ss.topics, name) {
		return
	}
	ss.topics = append(ss.topics, name)
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.topics[name]
	if t == nil {
		t = &topic{}
		t.subs.Store(&[]*server.Conn{})
		b.topics[name] = t
	}
	subs := append(slices.Clone(*t.subs.Load()), c)
	t.subs.Store(&subs)
}

func (b *broker) unsubscribe(c *server.Conn, ss *session, name string) {
	if i := slices.Index(ss.topics, name); i >= 0 {
		ss.topics = slices.Delete(ss.topics, i, i+1)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.topics[name]; t != nil {
		subs := slices.DeleteFunc(slices.Clone(*t.subs.Load()), func(s *server.Conn) bool { return s == c })
		t.subs.Store(&subs)
	}
}

// publish delivers "M topic body" (arg is "topic body") to the topic's
// subscribers, after any message of this publisher still waiting.
func (b *broker) publish(c *server.Conn, ss *session, name, arg []byte) {
	b.mu.RLock()
	t := b.topics[string(name)]
	b.mu.RUnlock()
	if t == nil {
		return
	}
	subs := *t.subs.Load()
	ss.out = append(append(ss.out[:0], 'M'), arg...)
	if len(ss.queue) > 0 {
		// reads are paused, but frames read before the pause still come:
		// they wait behind the first, in order
		ss.queue = append(ss.queue, pending{bytes.Clone(ss.out), subs, time.Time{}})
		return
	}
	if rest := b.send(c, ss, ss.out, subs); len(rest) > 0 {
		ss.queue = append(ss.queue, pending{bytes.Clone(ss.out), rest, time.Now()})
		b.block(c, ss)
	}
}

// send gives frame to subs and returns those that must get it later (a
// full out-queue or inbox); a closed subscriber needs nothing more. A
// subscriber with a full out-queue wakes c when it drains.
func (b *broker) send(c *server.Conn, ss *session, frame []byte, subs []*server.Conn) []*server.Conn {
	if ss.fan == nil {
		ss.fan = b.e.NewFanout()
	}
	if ss.fan.Send(frame, subs) == len(subs) {
		return nil
	}
	var rest []*server.Conn
	for _, f := range ss.fan.Failed {
		if errors.Is(f.Err, server.ErrClosed) {
			continue
		}
		rest = append(rest, f.Conn)
		if errors.Is(f.Err, server.ErrQueueFull) {
			if sub, ok := f.Conn.Context().(*session); ok {
				sub.wait(c)
			}
		}
	}
	return rest
}

// block stops reading publisher c until its queue is delivered, and arms
// the retry a full inbox needs.
func (b *broker) block(c *server.Conn, ss *session) {
	c.PauseReads()
	if ss.retry == nil {
		ss.retry = b.resume
		var t *time.Timer
		t = time.AfterFunc(time.Hour, func() {
			if errors.Is(c.Run(ss.retry), server.ErrInboxFull) {
				t.Reset(retryAfter) // the publisher's own loop is full: try again
			}
		})
		ss.timer = t
	}
	ss.timer.Reset(retryAfter)
}

// resume runs on publisher c's loop when a subscriber drained or the
// retry is due: it delivers what it can of c's queue, in order, and reads
// c again once the queue is empty.
func (b *broker) resume(c *server.Conn) {
	ss := c.Context().(*session)
	for len(ss.queue) > 0 {
		p := &ss.queue[0]
		if rest := b.send(c, ss, p.frame, p.to); len(rest) > 0 {
			if p.since.IsZero() {
				p.since = time.Now()
			} else if time.Since(p.since) > b.slow {
				for _, sub := range rest {
					sub.CloseWithError(errSlowConsumer) // its own policy: a pubsub server might drop instead
				}
				rest = nil
			}
			if len(rest) > 0 {
				p.to = rest
				b.block(c, ss)
				return
			}
		}
		ss.queue[0] = pending{}
		ss.queue = ss.queue[1:]
	}
	c.ResumeReads()
}

// wait records publisher p as waiting for this subscriber to drain.
func (s *session) wait(p *server.Conn) {
	s.mu.Lock()
	if !slices.Contains(s.waiters, p) {
		s.waiters = append(s.waiters, p)
	}
	s.mu.Unlock()
}

// writable is OnWritable: a subscriber that drained wakes the publishers
// waiting for it, on their loops.
func (b *broker) writable(c *server.Conn, writable bool) {
	if !writable {
		return
	}
	ss := c.Context().(*session)
	ss.mu.Lock()
	waiters := ss.waiters
	ss.waiters = nil
	ss.mu.Unlock()
	for _, p := range waiters {
		p.Run(b.resume) // a full inbox: the publisher's own retry comes
	}
}

func (b *broker) close(c *server.Conn, cause error) {
	ss, ok := c.Context().(*session)
	if !ok {
		return
	}
	if errors.Is(cause, errSlowConsumer) {
		log.Printf("pubsub: %v closed: %v", c.RemoteAddr(), cause)
	}
	for _, name := range slices.Clone(ss.topics) {
		b.unsubscribe(c, ss, name)
	}
	if ss.timer != nil {
		ss.timer.Stop()
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:7102", "listen address (port 0: any free port)")
	loops := flag.Int("loops", 0, "event loops (0: one per CPU)")
	slow := flag.Duration("slow", 2*time.Second, "close a subscriber that cannot take a message for this long")
	flag.Parse()
	b := &broker{topics: map[string]*topic{}, slow: *slow}
	e, err := server.New(server.Config{
		Addr:  *addr,
		Loops: *loops,
		Codec: protocol.LengthField{Size: 2, MaxFrameBytes: 64 << 10},
	}, server.HandlerFuncs{
		Open:     b.open,
		Frame:    b.serve,
		Close:    b.close,
		Writable: b.writable,
	})
	b.e = e
	demo.Serve(e, err)
}
