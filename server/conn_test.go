package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/protocol"
	"github.com/valyala/bytebufferpool"
)

// TestOnLoopDetection: Conn methods see the loop goroutine as on-loop and
// any other goroutine as off-loop.
func TestOnLoopDetection(t *testing.T) {
	h := newTestHandler()
	var inHandler atomic.Int32 // 1: on loop, 2: off loop
	h.frame = func(c *Conn, frame []byte) Action {
		if c.loop.onLoop() {
			inHandler.Store(1)
		} else {
			inHandler.Store(2)
		}
		return None
	}
	e := start(t, Config{Loops: 2}, h)
	c := dial(t, e)
	sc := h.nextOpen(t)
	c.Write([]byte("x"))
	waitUntil(t, 5*time.Second, "OnFrame", func() bool { return inHandler.Load() != 0 })
	if inHandler.Load() != 1 {
		t.Error("handler call not detected as on-loop")
	}
	if sc.loop.onLoop() {
		t.Error("test goroutine detected as on-loop")
	}
	for _, l := range e.loops {
		if l.onLoop() {
			t.Error("test goroutine detected as a loop")
		}
	}
}

// TestOffLoopWritesInOrder: writes from another goroutine arrive complete
// and in order, through the inbox, with backpressure reported as
// ErrQueueFull or ErrInboxFull and retried by the writer.
func TestOffLoopWritesInOrder(t *testing.T) {
	h := newTestHandler()
	e := start(t, Config{Loops: 2, InboxTasks: 16, OutQueueMsgs: 64, OutQueueBytes: 8 << 10}, h)
	c := dial(t, e)
	sc := h.nextOpen(t)
	const n = 3000
	errc := make(chan error, 1)
	var retries atomic.Int64
	go func() {
		for i := 0; i < n; i++ {
			msg := fmt.Appendf(nil, "msg-%05d\n", i)
			for {
				var err error
				switch i % 3 {
				case 0:
					err = sc.Write(msg)
				case 1:
					err = sc.WriteFrame(msg) // raw codec: encodes to itself
				default:
					bb := bytebufferpool.Get()
					bb.B = append(bb.B[:0], msg...)
					err = sc.WriteOwned(bb.B, func() { bytebufferpool.Put(bb) })
					if err != nil {
						bytebufferpool.Put(bb)
					}
				}
				if err == nil {
					break
				}
				if !errors.Is(err, ErrQueueFull) && !errors.Is(err, ErrInboxFull) {
					errc <- err
					return
				}
				retries.Add(1)
				time.Sleep(100 * time.Microsecond)
			}
		}
		errc <- nil
	}()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	for i := 0; i < n; i++ {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if want := fmt.Sprintf("msg-%05d\n", i); line != want {
			t.Fatalf("line %d = %q, want %q", i, line, want)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	waitStats(t, e, "every write through the inbox", func(s Stats) bool { return s.InboxTasks >= n })
	t.Logf("writer retried %d times (queue or inbox full)", retries.Load())
}

// TestWriteOwnedReleasedOnce: the release function runs exactly once,
// whether the bytes were written or the connection closed first.
func TestWriteOwnedReleasedOnce(t *testing.T) {
	var released atomic.Int32
	h := newTestHandler()
	h.frame = func(c *Conn, frame []byte) Action {
		if err := c.WriteOwned([]byte("owned\n"), func() { released.Add(1) }); err != nil {
			t.Errorf("WriteOwned: %v", err)
		}
		if string(frame) == "close" {
			return Close
		}
		return None
	}
	e := start(t, Config{Loops: 1}, h)
	c := dial(t, e)
	sc := h.nextOpen(t)
	c.Write([]byte("x"))
	r := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := r.ReadString('\n'); err != nil || line != "owned\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	waitUntil(t, 5*time.Second, "release", func() bool { return released.Load() == 1 })

	// dropped: a peer that never reads, closed with output queued
	if err := sc.Close(); err != nil {
		t.Fatal(err)
	}
	h.closeOf(t, sc, 5*time.Second)
	e2 := start(t, Config{Loops: 1, WriteStallTimeout: 100 * time.Millisecond}, HandlerFuncs{
		Open: func(c *Conn) Action {
			big := make([]byte, 200<<10)
			for i := 0; i < 20; i++ {
				if c.WriteOwned(big, func() { released.Add(1) }) != nil {
					released.Add(1) // refused: still ours, count it as released
				}
			}
			return None
		},
	})
	bad, err := dialSmallWindow(e2.Addr().String(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	waitUntil(t, 10*time.Second, "releases after write stall", func() bool { return released.Load() == 21 })
	time.Sleep(50 * time.Millisecond)
	if n := released.Load(); n != 21 {
		t.Errorf("released %d times, want 21", n)
	}
}

// TestReusedFdGetsNothingStale: after a connection closes and a new one
// reuses its fd, writes aimed at the old connection (off-loop, or already in
// the inbox with the old generation) never reach the new one.
func TestReusedFdGetsNothingStale(t *testing.T) {
	h := newTestHandler()
	e := start(t, Config{Loops: 1}, h)
	a := dial(t, e)
	ac := h.nextOpen(t)
	a.Close()
	h.closeOf(t, ac, 5*time.Second)

	var b io.ReadWriter
	var bc *Conn
	for i := 0; i < 20; i++ { // the kernel hands out the lowest free fd: usually at once
		nb := dial(t, e)
		c := h.nextOpen(t)
		if c.fd == ac.fd {
			b, bc = nb, c
			break
		}
		nb.Close()
	}
	if bc == nil {
		t.Skip("fd not reused")
	}
	if err := ac.Write([]byte("stale\n")); !errors.Is(err, ErrClosed) {
		t.Errorf("Write on the closed conn: %v, want ErrClosed", err)
	}
	// a task queued before the close was noticed: right fd, old generation
	bb := bytebufferpool.Get()
	bb.B = append(bb.B[:0], "stale\n"...)
	if err := ac.loop.submit(task{kind: taskWrite, fd: ac.fd, gen: ac.gen,
		seg: ioflush.Segment{Buf: bb.B, Pooled: bb}}); err != nil {
		t.Fatal(err)
	}
	if err := bc.Write([]byte("fresh\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(b)
	line, err := r.ReadString('\n')
	if err != nil || line != "fresh\n" {
		t.Fatalf("new connection read %q, %v; want only its own bytes", line, err)
	}
	waitUntil(t, 5*time.Second, "stale task dropped", func() bool { return e.Stats().StaleTasks >= 1 })
}

// TestShutdownDrains: Shutdown flushes queued output before closing, and
// closes with ErrShutdown.
func TestShutdownDrains(t *testing.T) {
	const size = 4 << 20
	h := newTestHandler()
	h.frame = func(c *Conn, frame []byte) Action {
		big := make([]byte, size)
		for i := range big {
			big[i] = byte(i)
		}
		if err := c.WriteOwned(big, nil); err != nil {
			t.Errorf("WriteOwned: %v", err)
		}
		return None
	}
	e, err := New(Config{Loops: 1, OutQueueBytes: 8 << 20, OutQueueHighBytes: 6 << 20}, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	c, err := dialSmallWindow(e.Addr().String(), 16<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc := h.nextOpen(t)
	c.Write([]byte("go"))
	waitUntil(t, 5*time.Second, "reply queued", func() bool { return e.Stats().QueuedOutBytes > 0 })

	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		shut <- e.Shutdown(ctx)
	}()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if len(got) != size {
		t.Fatalf("got %d bytes before EOF, want %d", len(got), size)
	}
	for i := range got {
		if got[i] != byte(i) {
			t.Fatalf("byte %d = %d", i, got[i])
		}
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if cause := h.closeOf(t, sc, time.Second); !errors.Is(cause, ErrShutdown) {
		t.Errorf("cause %v, want ErrShutdown", cause)
	}
	if _, err := dialSmallWindow(e.Addr().String(), 0); err == nil {
		t.Error("listener still accepts after Shutdown")
	}
	if err := e.Start(); !errors.Is(err, ErrEngineClosed) {
		t.Errorf("Start after Shutdown: %v", err)
	}
}

// TestShutdownDeadline: a peer that never reads cannot hold Shutdown past
// its context.
func TestShutdownDeadline(t *testing.T) {
	h := newTestHandler()
	h.frame = func(c *Conn, frame []byte) Action {
		c.WriteOwned(make([]byte, 8<<20), nil)
		return None
	}
	e, err := New(Config{Loops: 1, OutQueueBytes: 16 << 20, OutQueueHighBytes: 12 << 20, WriteStallTimeout: -1}, h)
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	c, err := dialSmallWindow(e.Addr().String(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc := h.nextOpen(t)
	c.Write([]byte("go"))
	waitUntil(t, 5*time.Second, "reply queued", func() bool { return e.Stats().QueuedOutBytes > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	// the drain would wait for the peer forever (no write-stall timeout):
	// Shutdown returns at its context's end, and the loops close the rest
	if err := e.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want DeadlineExceeded", err)
	}
	if cause := h.closeOf(t, sc, time.Second); !errors.Is(cause, ErrShutdown) {
		t.Errorf("cause %v, want ErrShutdown", cause)
	}
}

// TestHandlerShutdownAction: a handler returning Shutdown stops Serve.
func TestHandlerShutdownAction(t *testing.T) {
	h := newTestHandler()
	h.frame = func(c *Conn, frame []byte) Action {
		if strings.TrimSpace(string(frame)) == "quit" {
			return Shutdown
		}
		return None
	}
	e, err := New(Config{Loops: 2}, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- e.Serve(context.Background()) }()
	c := dial(t, e)
	c.Write([]byte("quit\n"))
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after a Shutdown action")
	}
}

// loopTagCodec is a protocol.LoopCodec over lines whose ForLoop hands each
// loop a codec of its own, numbered.
type loopTagCodec struct {
	protocol.Delimited
	made *atomic.Int32 // ForLoop calls
	tag  int32         // 0: the configured codec; n: the nth ForLoop
}

func (c loopTagCodec) ForLoop() protocol.Codec {
	c.tag = c.made.Add(1)
	return c
}

// AppendEncode marks what a loop's own codec encodes with an L.
func (c loopTagCodec) AppendEncode(dst, frame []byte) []byte {
	if c.tag != 0 {
		dst = append(dst, 'L')
	}
	return c.Delimited.AppendEncode(dst, frame)
}

// TestLoopCodec: with a protocol.LoopCodec each loop decodes with the
// codec its ForLoop returned (called once per loop), Conn.LoopCodec hands
// a handler its loop's codec, and nil off the loop; the loop's own codec
// is not used off the loop (WriteFrame from another goroutine encodes with
// the configured one, on the loop with the loop's).
func TestLoopCodec(t *testing.T) {
	made := new(atomic.Int32)
	offLoop := make(chan protocol.Codec, 16)
	h := newTestHandler()
	h.frame = func(c *Conn, frame []byte) Action {
		lc, ok := c.LoopCodec().(loopTagCodec)
		if !ok {
			c.CloseWithError(fmt.Errorf("LoopCodec %T on the loop", c.LoopCodec()))
			return None
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			offLoop <- c.LoopCodec()
			c.WriteFrame(fmt.Appendf(nil, "tag %d", lc.tag)) // from another goroutine
		}()
		<-done
		c.WriteFrame([]byte("on loop"))
		return None
	}
	e := start(t, Config{Loops: 2, Codec: loopTagCodec{made: made}}, h)
	if n := made.Load(); n != 2 {
		t.Fatalf("ForLoop called %d times for 2 loops", n)
	}
	seen := map[string]bool{}
	for i := 0; i < 8; i++ {
		c := dialLine(t, e.Addr().String(), nil)
		fmt.Fprintf(c, "hello\n")
		got, onLoop := c.line(t), c.line(t) // the off-loop write goes through the inbox: after the handler's
		if got == "Lon loop" {
			got, onLoop = onLoop, got
		}
		if got != "tag 1" && got != "tag 2" {
			t.Fatalf("connection %d: %q, want the tag of its loop's codec, encoded with the configured one", i, got)
		}
		if onLoop != "Lon loop" {
			t.Fatalf("connection %d: %q, want the loop codec's encoding", i, onLoop)
		}
		seen[got] = true
		if lc := <-offLoop; lc != nil {
			t.Errorf("LoopCodec off the loop: %T, want nil", lc)
		}
	}
	t.Logf("tags seen: %v", seen)
}
