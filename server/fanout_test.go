package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol"
)

// TestOffLoopWritesNeverClose: writes from another goroutine to a peer
// that does not read are refused with ErrQueueFull, synchronously, once the
// out-queue budget is booked; the connection stays open (before, the loop
// closed it past 128 queued messages whatever OutQueueMsgs said), and when
// the peer reads it gets every accepted message, in order.
func TestOffLoopWritesNeverClose(t *testing.T) {
	h := newTestHandler()
	e := start(t, Config{Loops: 2, OutQueueMsgs: 512, OutQueueBytes: 64 << 10}, h)
	c, err := dialSmallWindow(e.Addr().String(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc := h.nextOpen(t)
	var accepted []int
	full := 0
	for i := 0; i < 20000 && full < 2000; i++ {
		switch err := sc.Write(fmt.Appendf(nil, "msg-%05d\n", i)); {
		case err == nil:
			accepted = append(accepted, i)
		case errors.Is(err, ErrQueueFull):
			full++
		case errors.Is(err, ErrInboxFull):
			time.Sleep(time.Millisecond)
		default:
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if full == 0 {
		t.Fatalf("%d writes to a peer that does not read, none refused with ErrQueueFull", len(accepted))
	}
	select {
	case ev := <-h.closed:
		t.Fatalf("connection closed (%v) by off-loop writes", ev.cause)
	default:
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	for _, i := range accepted {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading message %d: %v", i, err)
		}
		if want := fmt.Sprintf("msg-%05d\n", i); line != want {
			t.Fatalf("got %q, want %q", line, want)
		}
	}
	if s := e.Stats(); s.QueueFull == 0 {
		t.Errorf("Stats.QueueFull = 0 after %d refused writes", full)
	}
	t.Logf("%d accepted, %d refused with ErrQueueFull", len(accepted), full)
}

// tinySndBuf gives the server's side of c a 4 KiB send buffer (which
// also ends its autotuning), so that a peer that does not read stalls the
// out-queue after a few KiB, whatever the host's tcp_wmem.
func tinySndBuf(t *testing.T, c *Conn) {
	t.Helper()
	if err := syscall.SetsockoptInt(int(c.fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4096); err != nil {
		t.Fatal(err)
	}
}

// dialSlowPeer connects to e as a peer with a 4 KiB receive window that
// reads nothing until the test does, and gives the server's side
// (opened, from the handler's OnOpen) a 4 KiB send buffer: its output
// stalls after a few KiB. The connection closes at cleanup.
func dialSlowPeer(t *testing.T, e *Engine, opened func() *Conn) (net.Conn, *Conn) {
	t.Helper()
	c, err := dialSmallWindow(e.Addr().String(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	sc := opened()
	tinySndBuf(t, sc)
	return c, sc
}

// fillStalled writes 32 KiB messages to c from this goroutine until its
// loop has armed EPOLLOUT (the kernel took no more) and c's out-queue
// holds at least min bytes.
func fillStalled(t *testing.T, e *Engine, c *Conn, min int) {
	t.Helper()
	chunk := make([]byte, 32<<10)
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := e.Stats()
		if s.OutArms >= 1 && s.QueuedOutBytes >= int64(min) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("output never stalled: %+v", s)
		}
		if err := c.Write(chunk); err != nil && !errors.Is(err, ErrInboxFull) && !errors.Is(err, ErrQueueFull) {
			t.Fatalf("write: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWritability: OnWritable says false once a connection's out-queue
// passes its high watermark and true when it drains to the low one;
// Conn.Writable follows it.
func TestWritability(t *testing.T) {
	events := make(chan bool, 16)
	opened := make(chan *Conn, 1)
	h := HandlerFuncs{
		Open:     func(c *Conn) Action { opened <- c; return None },
		Writable: func(c *Conn, w bool) { events <- w },
	}
	e := start(t, Config{Loops: 1, OutQueueBytes: 64 << 10}, h)
	c, sc := dialSlowPeer(t, e, func() *Conn { return <-opened })
	if !sc.Writable() {
		t.Fatal("a new connection is not writable")
	}
	fillStalled(t, e, sc, 32<<10) // past the high watermark, 32 KiB
	if sc.Writable() {
		t.Error("Writable past the high watermark")
	}
	select {
	case w := <-events:
		if w {
			t.Fatal("first writability change: writable")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no OnWritable(false) after the high watermark")
	}
	go io.Copy(io.Discard, c)
	select {
	case w := <-events:
		if !w {
			t.Fatal("second writability change: not writable")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no OnWritable(true) once the peer read")
	}
	if !sc.Writable() {
		t.Error("Writable false after OnWritable(true)")
	}
}

// TestPauseResumeReads: a connection whose reads are paused from another
// goroutine gets no frame dispatched until it is resumed, then every frame
// it sent meanwhile, in order.
func TestPauseResumeReads(t *testing.T) {
	var frames atomic.Int64
	h := newTestHandler()
	h.frame = func(c *Conn, frame []byte) Action {
		frames.Add(1)
		c.Write(append(frame, '\n'))
		return None
	}
	e := start(t, Config{Loops: 2, Codec: protocol.Delimited{}}, h)
	c := dial(t, e)
	sc := h.nextOpen(t)
	fmt.Fprint(c, "a\n")
	r := bufio.NewReader(c)
	if line, _ := r.ReadString('\n'); line != "a\n" {
		t.Fatalf("a: %q", line)
	}
	if err := sc.PauseReads(); err != nil {
		t.Fatal(err)
	}
	waitStats(t, e, "the pause carried out", func(s Stats) bool { return s.InboxTasks >= 1 })
	fmt.Fprint(c, "b\nc\n")
	time.Sleep(50 * time.Millisecond) // time to read them, were reads not paused
	if n := frames.Load(); n != 1 {
		t.Fatalf("%d frames dispatched while paused, want 1 (before the pause)", n)
	}
	if err := sc.ResumeReads(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"b\n", "c\n"} {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if line, err := r.ReadString('\n'); line != want {
			t.Fatalf("after resume: %q (%v), want %q", line, err, want)
		}
	}
}

// TestAbort: Abort drops the queued output and resets the connection; the
// peer sees a reset, not the rest of the stream, and OnClose ErrAborted,
// counted as a local close.
func TestAbort(t *testing.T) {
	h := newTestHandler()
	e := start(t, Config{Loops: 1, OutQueueBytes: 1 << 20}, h)
	c, sc := dialSlowPeer(t, e, func() *Conn { return h.nextOpen(t) })
	fillStalled(t, e, sc, 64<<10)
	queued := e.Stats().QueuedOutBytes
	if err := sc.Abort(); err != nil {
		t.Fatal(err)
	}
	if cause := h.closeOf(t, sc, 10*time.Second); !errors.Is(cause, ErrAborted) || !errors.Is(cause, ErrLocalClose) {
		t.Fatalf("OnClose cause %v, want ErrAborted", cause)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := io.Copy(io.Discard, c)
	if err == nil {
		t.Fatalf("peer read %d bytes and end of file, want a reset", n)
	}
	if s := e.Stats(); s.BytesOut >= uint64(n)+uint64(queued) {
		t.Errorf("%d bytes out, %d read by the peer, %d queued at the abort: the queued output was sent", s.BytesOut, n, queued)
	}
	if err := sc.Abort(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Abort: %v, want ErrClosed", err)
	}
	// the counters are published at the end of the loop's turn
	waitStats(t, e, "the abort counted as a local close", func(s Stats) bool { return s.Closed[CauseLocal] == 1 })
}

// TestCloseWithErrorCauseKept: a close asked with a cause reaches OnClose
// with that cause even when the flush it waits for stalls; the counters
// count the stall.
func TestCloseWithErrorCauseKept(t *testing.T) {
	errSlow := errors.New("slow consumer")
	h := newTestHandler()
	e := start(t, Config{Loops: 1, OutQueueBytes: 1 << 20, WriteStallTimeout: 100 * time.Millisecond}, h)
	_, sc := dialSlowPeer(t, e, func() *Conn { return h.nextOpen(t) })
	fillStalled(t, e, sc, 32<<10)
	if err := sc.CloseWithError(errSlow); err != nil {
		t.Fatal(err)
	}
	if cause := h.closeOf(t, sc, 10*time.Second); cause != errSlow {
		t.Fatalf("OnClose cause %v, want %v", cause, errSlow)
	}
	// the counters are published at the end of the loop's turn
	waitStats(t, e, "the close counted as a write stall", func(s Stats) bool { return s.Closed[CauseWriteStall] == 1 })
}

// TestRunOnLoop: Conn.Run and Engine.Run run their function on the loop
// (where AvailableBuffer lends a buffer); Run on a closed connection, a
// write to one, and Engine.Run on a stopped engine fail with a clear error.
func TestRunOnLoop(t *testing.T) {
	h := newTestHandler()
	e, err := New(Config{Loops: 2, Addr: "127.0.0.1:0"}, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	c := dial(t, e)
	sc := h.nextOpen(t)
	ran := make(chan bool, 2)
	if err := sc.Run(func(c *Conn) { ran <- c == sc && c.AvailableBuffer() != nil }); err != nil {
		t.Fatal(err)
	}
	if !<-ran {
		t.Fatal("Conn.Run's function did not run on the connection's loop")
	}
	if err := e.Run(sc.loop.id, func() { ran <- sc.AvailableBuffer() != nil }); err != nil {
		t.Fatal(err)
	}
	if !<-ran {
		t.Fatal("Engine.Run's function did not run on the loop")
	}
	if err := e.Run(2, func() {}); err == nil {
		t.Error("Engine.Run on loop 2 of 2: no error")
	}
	c.Close()
	h.closeOf(t, sc, 10*time.Second)
	if err := sc.Run(func(*Conn) { t.Error("ran on a closed connection") }); !errors.Is(err, ErrClosed) {
		t.Errorf("Run on a closed connection: %v, want ErrClosed", err)
	}
	if err := sc.Write([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Write to a closed connection: %v, want ErrClosed", err)
	}
	if err := sc.PauseReads(); !errors.Is(err, ErrClosed) {
		t.Errorf("PauseReads on a closed connection: %v, want ErrClosed", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Run(0, func() { t.Error("ran on a stopped engine") }); !errors.Is(err, ErrEngineClosed) {
		t.Errorf("Engine.Run after Close: %v, want ErrEngineClosed", err)
	}
}

// fanPad makes the fan-out tests' frames 1 KiB, so a subscriber that does
// not read fills its kernel buffers after a few hundred.
var fanPad = strings.Repeat("x", 1000)

// fanFrame is frame i of the fan-out tests: m-00000-<pad>, m-00001-...
func fanFrame(i int) []byte { return fmt.Appendf(nil, "m-%05d-%s", i, fanPad) }

// fanoutSub is one subscriber of the fan-out tests: it reads lines and
// checks they are fanFrame(0), fanFrame(1), ... in order.
type fanoutSub struct {
	c    net.Conn
	got  atomic.Int64
	err  atomic.Value
	done chan struct{}
}

func (s *fanoutSub) read(want int) {
	defer close(s.done)
	r := bufio.NewReader(s.c)
	for i := 0; i < want; i++ {
		line, err := r.ReadString('\n')
		if err != nil {
			s.err.Store(fmt.Errorf("after %d lines: %w", i, err))
			return
		}
		if exp := string(fanFrame(i)) + "\n"; line != exp {
			s.err.Store(fmt.Errorf("line %d = %q, want %q", i, line, exp))
			return
		}
		s.got.Add(1)
	}
}

// fanoutSetup starts an engine of two loops and n subscribers; it returns
// the server side of each, in dial order.
func fanoutSetup(t testing.TB, n int, cfg Config) (*Engine, []*Conn, []*fanoutSub) {
	t.Helper()
	h := newTestHandler()
	cfg.Loops, cfg.Codec = 2, protocol.Delimited{}
	e := start(t, cfg, h)
	conns := make([]*Conn, n)
	subs := make([]*fanoutSub, n)
	for i := range subs {
		subs[i] = &fanoutSub{c: dial(t, e), done: make(chan struct{})}
		conns[i] = h.nextOpen(t)
	}
	return e, conns, subs
}

// sendAll sends frame to conns with f until each took it, was closed, or
// was refused and drop (the publisher's policy; nil: never) says to give
// it up; a connection refused for a full queue or inbox is retried after
// a short wait. It returns how many were closed and how many dropped.
func sendAll(t testing.TB, f *Fanout, frame []byte, conns []*Conn, drop func(*Conn) bool) (closed, dropped int) {
	t.Helper()
	var retry []*Conn
	to := conns
	for attempt := 0; ; attempt++ {
		f.Send(frame, to)
		retry = retry[:0]
		for _, fl := range f.Failed {
			switch {
			case drop != nil && drop(fl.Conn):
				dropped++
			case errors.Is(fl.Err, ErrQueueFull), errors.Is(fl.Err, ErrInboxFull):
				retry = append(retry, fl.Conn)
			case errors.Is(fl.Err, ErrClosed):
				closed++
			default:
				t.Fatalf("%q: %v", frame[:min(len(frame), 16)], fl.Err)
			}
		}
		if len(retry) == 0 {
			return closed, dropped
		}
		if attempt > 100000 {
			t.Fatalf("%q: %d connections still full", frame[:min(len(frame), 16)], len(retry))
		}
		to = append(to[:0:0], retry...)
		time.Sleep(100 * time.Microsecond)
	}
}

// publish sends fanFrame(0), fanFrame(1), ... to conns with sendAll and
// returns how many deliveries found their connection closed.
func publish(t *testing.T, f *Fanout, conns []*Conn, frames int) (closed int) {
	t.Helper()
	for i := 0; i < frames; i++ {
		c, _ := sendAll(t, f, fanFrame(i), conns, nil)
		closed += c
	}
	return closed
}

// TestFanoutDelivers: a Fanout from another goroutine delivers every
// frame to every subscriber on both loops, complete and in order, with
// the default budgets, the publisher waiting out ErrQueueFull; a
// subscriber that disconnects in the middle is reported closed and costs
// the others nothing.
func TestFanoutDelivers(t *testing.T) {
	const n, frames = 40, 3000
	e, conns, subs := fanoutSetup(t, n, Config{})
	for i, s := range subs {
		if i == n-1 {
			continue // the one that leaves
		}
		go s.read(frames)
	}
	leaver := subs[n-1]
	go func() {
		r := bufio.NewReader(leaver.c)
		for i := 0; i < frames/3; i++ {
			if _, err := r.ReadString('\n'); err != nil {
				break
			}
		}
		leaver.c.Close()
		close(leaver.done)
	}()
	f := e.NewFanout()
	closed := publish(t, f, conns, frames)
	for i, s := range subs[:n-1] {
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("subscriber %d: %d of %d frames", i, s.got.Load(), frames)
		}
		if err, _ := s.err.Load().(error); err != nil {
			t.Fatalf("subscriber %d: %v", i, err)
		}
	}
	<-leaver.done
	t.Logf("%d deliveries to the subscriber that left refused as closed", closed)
}

// TestFanoutSlowSubscriber: one subscriber that never reads among many:
// it is refused with ErrQueueFull once its budget is booked and stays
// open, its queued bytes bounded by the budget; the others get every
// frame in order.
func TestFanoutSlowSubscriber(t *testing.T) {
	const n, frames = 20, 2000
	cfg := Config{OutQueueBytes: 16 << 10}
	e, conns, subs := fanoutSetup(t, n+1, cfg)
	for _, s := range subs[:n] {
		go s.read(frames)
	}
	slow := conns[n]
	tinySndBuf(t, slow)
	f := e.NewFanout()
	full := 0
	for i := 0; i < frames; i++ {
		// dropped for the slow one: the publisher's policy here
		closed, dropped := sendAll(t, f, fanFrame(i), conns, func(c *Conn) bool { return c == slow })
		if closed > 0 {
			t.Fatalf("frame %d: %d subscribers closed", i, closed)
		}
		full += dropped
	}
	for i, s := range subs[:n] {
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("subscriber %d: %d of %d frames", i, s.got.Load(), frames)
		}
		if err, _ := s.err.Load().(error); err != nil {
			t.Fatalf("subscriber %d: %v", i, err)
		}
	}
	if full == 0 {
		t.Fatal("the subscriber that never reads was never refused")
	}
	var queued atomic.Int64
	done := make(chan struct{})
	if err := slow.Run(func(c *Conn) { queued.Store(int64(c.outBytes)); close(done) }); err != nil {
		t.Fatalf("the slow subscriber: %v", err)
	}
	<-done
	if q := queued.Load(); q > int64(cfg.OutQueueBytes) {
		t.Errorf("the slow subscriber holds %d bytes queued, over its budget %d", q, cfg.OutQueueBytes)
	}
	t.Logf("slow subscriber refused %d of %d frames, %d bytes queued", full, frames, queued.Load())
}

// TestFanoutZeroAllocs: a Fanout's steady state (encode once, one task per
// loop, a copy into each out-queue) allocates nothing per frame.
func TestFanoutZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's bookkeeping allocates")
	}
	p := newDrainedFanout(t)
	defer p.stop()
	for i := 0; i < 1000; i++ {
		p.send()
	}
	if a := testing.AllocsPerRun(2000, p.send); a > 0.05 {
		t.Errorf("%.2f allocations per fanned-out frame, want 0", a)
	}
}

// drainedFanout is a Fanout to 8 subscribers on two loops that read
// everything, for the allocation test and the benchmark.
type drainedFanout struct {
	f     *Fanout
	conns []*Conn
	subs  []*fanoutSub
	frame []byte
	retry []*Conn
	wg    sync.WaitGroup
}

func newDrainedFanout(t testing.TB) *drainedFanout {
	e, conns, subs := fanoutSetup(t, 8, Config{})
	p := &drainedFanout{f: e.NewFanout(), conns: conns, subs: subs, frame: fanFrame(0)}
	for _, s := range subs {
		p.wg.Add(1)
		go func() { defer p.wg.Done(); io.Copy(io.Discard, s.c) }()
	}
	return p
}

// send delivers the frame to every subscriber, retrying those a full
// queue refused after a short wait, as a publisher would.
func (p *drainedFanout) send() {
	for to := p.conns; p.f.Send(p.frame, to) < len(to); to = p.retry {
		p.retry = p.retry[:0]
		for _, fl := range p.f.Failed {
			p.retry = append(p.retry, fl.Conn)
		}
		time.Sleep(10 * time.Microsecond)
	}
}

// stop closes the subscribers and waits for their readers.
func (p *drainedFanout) stop() {
	for _, s := range p.subs {
		s.c.Close()
	}
	p.wg.Wait()
}

// TestFanoutFloodManySubscribers: a publisher floods one topic of 10,000
// subscribers (or as many as RLIMIT_NOFILE allows, two descriptors each)
// on two loops from another goroutine, retrying what a full queue or
// inbox refused; every subscriber then holds every frame, in order, and
// no connection was closed.
func TestFanoutFloodManySubscribers(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	n := min(10000, (int(lim.Cur)-256)/2)
	if n < 1000 {
		t.Skipf("RLIMIT_NOFILE %d leaves room for %d subscribers", lim.Cur, n)
	}
	const frames = 100
	h := newTestHandler()
	h.opened = make(chan *Conn, n)
	e := start(t, Config{Loops: 2, Codec: protocol.Delimited{}, MaxConns: n + 16}, h)
	subs := make([]net.Conn, n)
	conns := make([]*Conn, n)
	for i := range subs {
		subs[i] = dial(t, e)
		conns[i] = h.nextOpen(t)
	}
	f := e.NewFanout()
	for i := 0; i < frames; i++ {
		if closed, _ := sendAll(t, f, fmt.Appendf(nil, "f-%05d", i), conns, nil); closed > 0 {
			t.Fatalf("frame %d: %d subscribers closed", i, closed)
		}
	}
	// 8 bytes a frame: everything fits the sockets' buffers, read one by one
	want := make([]byte, 0, 8*frames)
	for i := 0; i < frames; i++ {
		want = fmt.Appendf(want, "f-%05d\n", i)
	}
	got := make([]byte, len(want))
	for i, c := range subs {
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != string(want) {
			t.Fatalf("subscriber %d of %d: %v, %q...", i, n, err, got[:min(len(got), 32)])
		}
	}
	select {
	case ev := <-h.closed:
		t.Fatalf("a subscriber closed: %v", ev.cause)
	default:
	}
	t.Logf("%d subscribers, %d frames each", n, frames)
}

// BenchmarkFanout: one 1 KiB frame fanned out from another goroutine to 8
// subscribers on two loops that read everything; ns/op and allocs/op are
// per frame (8 deliveries).
func BenchmarkFanout(b *testing.B) {
	p := newDrainedFanout(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.send()
	}
	b.StopTimer()
	p.stop()
}
