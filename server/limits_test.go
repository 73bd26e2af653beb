package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestNonReadingPeer: a peer that sends but never reads. Its out-queue
// stays within its budget, it is closed by the write-stall timeout, and
// another connection is served meanwhile, never held up to that timeout.
func TestNonReadingPeer(t *testing.T) {
	const budget, stall = 64 << 10, 2 * time.Second
	// The replies to one read must fit above the high watermark (budget/2):
	// with the default 64 KiB read budget one read could queue past the
	// budget and close the peer with ErrQueueFull before it stalls (seen
	// once in a loaded make test run, on the io_uring backend).
	cfg := Config{Loops: 1, OutQueueBytes: budget, ReadBudgetBytes: 16 << 10, WriteStallTimeout: stall,
		IdleTimeout: -1, FrameTimeout: -1}
	h := newTestHandler()
	e := start(t, cfg, h)

	bad, err := dialSmallWindow(e.Addr().String(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	badConn := h.nextOpen(t)
	good := dial(t, e)
	h.nextOpen(t)

	var maxQueued atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the flood: write until the server gives up on us
		defer wg.Done()
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		bad.SetWriteDeadline(time.Now().Add(20 * time.Second))
		for {
			if _, err := bad.Write(chunk); err != nil {
				return
			}
		}
	}()
	go func() { // watch the queue from outside, as an operator would
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if q := e.Stats().QueuedOutBytes; q > maxQueued.Load() {
				maxQueued.Store(q)
			}
		}
	}()

	// meanwhile the good connection echoes with low latency
	var worst time.Duration
	msg := []byte("ping")
	buf := make([]byte, len(msg))
	good.SetDeadline(time.Now().Add(20 * time.Second))
	closed := make(chan error, 1)
	go func() { closed <- h.closeOf(t, badConn, 15*time.Second) }()
	var cause error
	for rounds := 0; ; rounds++ {
		t0 := time.Now()
		if _, err := good.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(good, buf); err != nil {
			t.Fatal(err)
		}
		worst = max(worst, time.Since(t0))
		select {
		case cause = <-closed:
		case <-time.After(10 * time.Millisecond):
			continue
		}
		break
	}
	close(stop)
	wg.Wait()
	if !errors.Is(cause, ErrWriteStall) {
		t.Errorf("non-reading peer closed with %v, want ErrWriteStall", cause)
	}
	if q := maxQueued.Load(); q > budget {
		t.Errorf("queued bytes reached %d, budget %d", q, budget)
	}
	// a loop held by the flooding peer would keep the good connection
	// waiting until it was closed: the bound is the test's write-stall
	// timeout, not a machine's speed
	if worst >= stall {
		t.Errorf("good connection's worst echo latency %v while a peer flooded, the write-stall timeout %v", worst, stall)
	}
	waitStats(t, e, "a pause and one write stall", func(s Stats) bool {
		return s.Pauses > 0 && s.Closed[CauseWriteStall] == 1
	})
	t.Logf("max queued %d bytes (budget %d), worst good-peer latency %v", maxQueued.Load(), budget, worst)
}

// TestFrameTimeout: half a frame then silence closes with ErrFrameTimeout,
// not before the timeout.
func TestFrameTimeout(t *testing.T) {
	const ft = 300 * time.Millisecond
	h := newTestHandler()
	e := start(t, Config{Loops: 1, Codec: codecByName(t, "length", 0), FrameTimeout: ft, IdleTimeout: 10 * time.Second}, h)
	c := dial(t, e)
	sc := h.nextOpen(t)
	frame := binary.BigEndian.AppendUint32(nil, 100)
	c.Write(append(frame, "only half of the body"...))
	t0 := time.Now()
	cause := h.closeOf(t, sc, 10*time.Second)
	if !errors.Is(cause, ErrFrameTimeout) {
		t.Fatalf("cause %v, want ErrFrameTimeout", cause)
	}
	if d := time.Since(t0); d < ft-20*time.Millisecond {
		t.Errorf("closed after %v, before the %v frame timeout", d, ft)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("client read %v, want EOF", err)
	}
}

// TestFrameTimeoutNotForSteadyFrames: complete frames keep flowing past the
// frame timeout; only an incomplete one is timed.
func TestFrameTimeoutNotForSteadyFrames(t *testing.T) {
	h := newTestHandler()
	e := start(t, Config{Loops: 1, Codec: codecByName(t, "line", 0), FrameTimeout: 100 * time.Millisecond}, h)
	c := dial(t, e)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 3)
	for i := 0; i < 10; i++ {
		c.Write([]byte("ab\n"))
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		time.Sleep(30 * time.Millisecond)
	}
	if n := e.Stats().Closed[CauseFrameTimeout]; n != 0 {
		t.Errorf("%d frame timeouts on a connection with only complete frames", n)
	}
}

// TestIdleTimeout: a silent connection closes with ErrIdleTimeout; an
// active one outlives several idle periods.
func TestIdleTimeout(t *testing.T) {
	const idle = 250 * time.Millisecond
	h := newTestHandler()
	e := start(t, Config{Loops: 1, IdleTimeout: idle}, h)
	silent := dial(t, e)
	sc := h.nextOpen(t)
	active := dial(t, e)
	h.nextOpen(t)
	t0 := time.Now()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 1)
		active.SetDeadline(time.Now().Add(10 * time.Second))
		for {
			select {
			case <-stop:
				done <- nil
				return
			case <-time.After(50 * time.Millisecond):
			}
			active.Write([]byte("k"))
			if _, err := io.ReadFull(active, buf); err != nil {
				done <- err
				return
			}
		}
	}()
	cause := h.closeOf(t, sc, 10*time.Second)
	if !errors.Is(cause, ErrIdleTimeout) {
		t.Fatalf("cause %v, want ErrIdleTimeout", cause)
	}
	if d := time.Since(t0); d < idle-20*time.Millisecond {
		t.Errorf("closed after %v, before the %v idle timeout", d, idle)
	}
	time.Sleep(3 * idle)
	close(stop)
	if err := <-done; err != nil {
		t.Fatalf("active connection: %v", err)
	}
	silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("silent client read %v, want EOF", err)
	}
}

// TestOversizedFrame: a frame over the codec's limit closes that connection
// with ErrFrameTooLarge; another connection is unaffected.
func TestOversizedFrame(t *testing.T) {
	h := newTestHandler()
	e := start(t, Config{Loops: 1, Codec: codecByName(t, "length", 1000)}, h)
	good := dial(t, e)
	h.nextOpen(t)
	bad := dial(t, e)
	badConn := h.nextOpen(t)
	echo := func() error {
		f := append(binary.BigEndian.AppendUint32(nil, 5), "hello"...)
		good.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := good.Write(f); err != nil {
			return err
		}
		got := make([]byte, len(f))
		if _, err := io.ReadFull(good, got); err != nil {
			return err
		}
		if !bytes.Equal(got, f) {
			t.Errorf("echo %q, want %q", got, f)
		}
		return nil
	}
	if err := echo(); err != nil {
		t.Fatal(err)
	}
	bad.Write(binary.BigEndian.AppendUint32(nil, 5000))
	if cause := h.closeOf(t, badConn, 5*time.Second); !errors.Is(cause, ErrFrameTooLarge) {
		t.Fatalf("cause %v, want ErrFrameTooLarge", cause)
	}
	if err := echo(); err != nil {
		t.Fatalf("other connection after the oversized frame: %v", err)
	}
	waitStats(t, e, "one frame-too-large close", func(s Stats) bool { return s.Closed[CauseFrameTooLarge] == 1 })
}

// TestInBufferBackstop: a codec without a frame limit (line codec with a
// huge maximum) cannot make the engine keep more than MaxInBufferBytes.
func TestInBufferBackstop(t *testing.T) {
	h := newTestHandler()
	e := start(t, Config{Loops: 1, Codec: codecByName(t, "line", 1<<30), MaxInBufferBytes: 100 << 10}, h)
	c := dial(t, e)
	sc := h.nextOpen(t)
	go func() {
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		c.Write(bytes.Repeat([]byte("z"), 400<<10)) // no newline
	}()
	if cause := h.closeOf(t, sc, 10*time.Second); !errors.Is(cause, ErrFrameTooLarge) {
		t.Fatalf("cause %v, want ErrFrameTooLarge", cause)
	}
}
