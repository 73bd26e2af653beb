package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/protocol"
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

// TestPausedConns: the gauge counts a connection while backpressure has
// reading paused, and uncounts it on resume and on close.
func TestPausedConns(t *testing.T) {
	// reads (raw frames) of at most 4 KiB, so every echo fits the 16 KiB budget
	e := start(t, Config{Loops: 1, ReadBudgetBytes: 4 << 10, OutQueueBytes: 16 << 10,
		IdleTimeout: -1, FrameTimeout: -1, WriteStallTimeout: -1}, newTestHandler())
	pause := func() *net.TCPConn {
		c, err := dialSmallWindow(e.Addr().String(), 4096)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		go func() { // until the server stops reading and the windows close
			c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			chunk := make([]byte, 32<<10)
			for {
				if _, err := c.Write(chunk); err != nil {
					return
				}
			}
		}()
		return c
	}
	a := pause()
	waitStats(t, e, "one paused connection", func(s Stats) bool { return s.PausedConns == 1 })
	b := pause()
	waitStats(t, e, "two paused connections", func(s Stats) bool { return s.PausedConns == 2 })
	b.SetLinger(0) // RST: a paused connection is not reading, so it sees EPOLLHUP/ERR, not EOF
	b.Close()
	waitStats(t, e, "closed connection uncounted", func(s Stats) bool { return s.PausedConns == 1 && s.ConnsOpen == 1 })
	a.SetWriteDeadline(time.Now()) // stop the writer, then read the echoes until the input is gone
	buf := make([]byte, 64<<10)
	waitUntil(t, 10*time.Second, "reading resumed", func() bool {
		a.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		a.Read(buf)
		return e.Stats().PausedConns == 0
	})
}

// TestQueuedBytesBudget: peers that send far more than they read cannot
// take the engine's queued bytes much past the policy's global budget: at
// the cap their frames are refused and a connection with output pending
// stops being read, while a well-behaved connection keeps being served.
func TestQueuedBytesBudget(t *testing.T) {
	const budget = 1 << 20
	const peers = 24 // × the per-connection high watermark (128 KiB) = 3 MiB without the budget
	adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1,
		SampleInterval: time.Millisecond,
	})
	e := start(t, Config{Loops: 1, Codec: protocol.LengthPrefixed{}, WriteStallTimeout: -1, IdleTimeout: -1,
		MaxQueuedBytes: budget, Admission: AdmissionPolicy{Admitter: adm}}, newTestHandler())
	var conns []net.Conn
	for i := 0; i < peers; i++ {
		c, err := dialSmallWindow(e.Addr().String(), 4096)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	var maxQueued atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	frame := binary.BigEndian.AppendUint32(nil, 4092)
	frame = append(frame, bytes.Repeat([]byte("x"), 4092)...)
	chunk := bytes.Repeat(frame, 16) // 64 KiB of frames
	var sent atomic.Int64
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
				n, _ := c.Write(chunk)
				sent.Add(int64(n))
			}
		}()
	}
	good := dial(t, e)
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		s := e.Stats()
		if q := s.QueuedOutBytes + s.QueuedInBytes; q > maxQueued.Load() {
			maxQueued.Store(q)
		}
		time.Sleep(time.Millisecond)
	}
	// a reading connection is still served (its frames may be refused with
	// "global" while the budget is spent: either answer is a reply)
	good.SetDeadline(time.Now().Add(5 * time.Second))
	good.Write(append(binary.BigEndian.AppendUint32(nil, 16), bytes.Repeat([]byte("y"), 16)...))
	var hdr [4]byte
	if _, err := io.ReadFull(good, hdr[:]); err != nil {
		t.Fatalf("well-behaved connection: %v", err)
	}
	close(stop)
	wg.Wait()
	s := e.Stats()
	t.Logf("peers sent %d MiB; max queued %d KiB against a budget of %d KiB; %d frames refused for global, %d pauses",
		sent.Load()>>20, maxQueued.Load()>>10, budget>>10, s.Admission.Rejects[admission.ReasonGlobal], s.Pauses)
	if sent.Load() < 4*budget {
		t.Errorf("peers sent only %d bytes", sent.Load())
	}
	// the budget, plus a small read (4 KiB in, 4 KiB out) per connection
	// whose queue was empty in the turn that crossed it
	if limit := int64(budget + peers*8<<10); maxQueued.Load() > limit {
		t.Errorf("queued bytes reached %d, budget %d (limit %d)", maxQueued.Load(), budget, limit)
	}
}
