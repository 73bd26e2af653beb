package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/protocol"
)

// TestPoolEcho: blocking frames run on workers and reply through the inbox;
// the context carries the request deadline; a peer that half-closes after
// sending still gets every reply before the connection closes.
func TestPoolEcho(t *testing.T) {
	ph := &poolHandler{deadlines: make(chan time.Duration, 64)}
	h := newTestHandler()
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{},
		Pool: PoolConfig{Handler: ph, Workers: 1, RequestTimeout: 3 * time.Second}}, h)
	c := dial(t, e)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("1a\n1b\n1c\n"))
	c.CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "1a\n1b\n1c\n" {
		t.Fatalf("replies %q, %v", got, err)
	}
	sc := h.nextOpen(t)
	if cause := h.closeOf(t, sc, 5*time.Second); !errors.Is(cause, ErrPeerClosed) {
		t.Errorf("close cause %v", cause)
	}
	d := <-ph.deadlines
	if d <= 2*time.Second || d > 3*time.Second {
		t.Errorf("deadline in %v, want about 3s", d)
	}
	// a worker counts a task served before its loop hears of it (through
	// the inbox) and publishes the in-flight count: wait for both, and a
	// count that never returns to zero fails the wait
	waitStats(t, e, "3 served and nothing in flight", func(s Stats) bool {
		return s.Admission.Pool.Served == 3 && s.Admission.InflightReqs == 0
	})
}

// TestPoolQueueFull: a full queue refuses at once with reason "queue"; the
// connection keeps working.
func TestPoolQueueFull(t *testing.T) {
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{},
		Pool: PoolConfig{Handler: &poolHandler{}, Workers: 1, QueueLen: 2, Unordered: true}}, newTestHandler())
	c := dial(t, e)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	// one running (50ms), two queued, the rest refused
	c.Write([]byte("5a\n"))
	waitStats(t, e, "one running", func(s Stats) bool { return s.Admission.Pool.Running == 1 })
	c.Write([]byte("5b\n5c\n5d\n5e\n"))
	r := bufio.NewReader(c)
	var replies, rejects int
	for i := 0; i < 5; i++ {
		s, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if reason, _, ok := protocol.ParseRejectText([]byte(strings.TrimSpace(s))); ok {
			if reason != "queue" {
				t.Errorf("reason %q", reason)
			}
			rejects++
		} else {
			replies++
		}
	}
	if replies != 3 || rejects != 2 {
		t.Errorf("%d replies, %d rejects; want 3 and 2", replies, rejects)
	}
	c.Write([]byte("0z\n"))
	if s, err := r.ReadString('\n'); err != nil || s != "0z\n" {
		t.Fatalf("after the rejects: %q, %v", s, err)
	}
	waitStats(t, e, "queue rejects counted", func(s Stats) bool { return s.Admission.Rejects[admission.ReasonQueue] == 2 })
}

// TestPoolOrdered: with several workers and frames that take different
// times (the slow ones first), a connection's pipelined replies leave in
// request order by default, while two connections are served at once;
// with Unordered they come back in the order the workers finish.
func TestPoolOrdered(t *testing.T) {
	const req = "3a\n0b\n2c\n0d\n1e\n0f\n"
	for _, unordered := range []bool{false, true} {
		t.Run(map[bool]string{false: "ordered", true: "unordered"}[unordered], func(t *testing.T) {
			ph := &poolHandler{started: make(chan string, 16)}
			e := start(t, Config{Loops: 1, Codec: protocol.Delimited{},
				Pool: PoolConfig{Handler: ph, Workers: 4, Unordered: unordered}}, newTestHandler())
			a, b := dial(t, e), dial(t, e)
			for _, c := range []net.Conn{a, b} {
				c.SetDeadline(time.Now().Add(10 * time.Second))
			}
			t0 := time.Now()
			a.Write([]byte(req))
			b.Write([]byte("3x\n"))
			got := make([]byte, len(req))
			if _, err := io.ReadFull(a, got); err != nil {
				t.Fatal(err)
			}
			bGot := make([]byte, 3)
			if _, err := io.ReadFull(b, bGot); err != nil || string(bGot) != "3x\n" {
				t.Fatalf("b: %q, %v", bGot, err)
			}
			took := time.Since(t0)
			if !unordered {
				if string(got) != req {
					t.Fatalf("replies %q, want them in request order %q", got, req)
				}
				// a's frames one after the other (60 ms of sleeps: never
				// sooner), b's beside them: b's frame started before a's last
				if took < 60*time.Millisecond {
					t.Errorf("took %v, less than a's frames one after the other", took)
				}
				var order []string
				for len(ph.started) > 0 {
					order = append(order, <-ph.started)
				}
				if i, j := slices.Index(order, "3x"), slices.Index(order, "0f"); i < 0 || j < 0 || i > j {
					t.Errorf("frames started in the order %q: want b's 3x beside a's, before a's last", order)
				}
				return
			}
			if string(got) == req {
				t.Errorf("unordered: replies came back in request order %q; want the fast ones first", got)
			}
			if lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n"); len(lines) != 6 {
				t.Errorf("unordered: %d replies %q", len(lines), got)
			}
		})
	}
}

// TestPoolShutdownDrains: Shutdown lets queued and running frames finish
// and reply before connections close.
func TestPoolShutdownDrains(t *testing.T) {
	e, err := New(Config{Loops: 1, Codec: protocol.Delimited{},
		Pool: PoolConfig{Handler: &poolHandler{}, Workers: 2, Unordered: true}}, newTestHandler())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", e.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("9a\n9b\n9c\n9d\n"))
	waitStats(t, e, "in flight", func(s Stats) bool { return s.Admission.InflightReqs == 4 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	got, _ := io.ReadAll(c)
	if len(got) != len("9a\n9b\n9c\n9d\n") {
		t.Fatalf("replies before the close: %q", got)
	}
}

// testReqCtx returns a worker's first request context on a pool that has
// only what reqCtx reads (the engine's clock, the pool's context), and
// the pool's cancel (the engine stopping).
func testReqCtx(t *testing.T) (*reqCtx, context.CancelFunc) {
	t.Helper()
	p := &pool{e: &Engine{start: time.Now()}}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	t.Cleanup(p.cancel)
	return &reqCtx{p: p}, p.cancel
}

// TestReqCtx: the worker's reused request context answers as a
// context.WithDeadline per frame would, within the call: its deadline and
// claim, DeadlineExceeded past the deadline with or without Done, a Done
// that closes at the deadline and when the engine stops, derived contexts
// and context.Cause; and it is reused only while nobody asked for Done.
func TestReqCtx(t *testing.T) {
	t.Run("fields", func(t *testing.T) {
		rc, _ := testReqCtx(t)
		pc := &poolClaim{key: []byte("k")}
		d := rc.p.e.clock() + int64(time.Hour)
		r := rc.begin(d, pc)
		if r != rc {
			t.Fatal("a fresh reqCtx was replaced")
		}
		if got, ok := r.Deadline(); !ok || !got.Equal(rc.p.e.timeAt(d)) {
			t.Errorf("Deadline = %v, %v; want %v, true", got, ok, rc.p.e.timeAt(d))
		}
		if r.Err() != nil {
			t.Errorf("Err = %v before the deadline", r.Err())
		}
		if got := r.Value(claimCtxKey{}); got != pc {
			t.Errorf("claim = %v, want %v", got, pc)
		}
		if r.Value("other") != nil {
			t.Error("a value for a key nobody set")
		}
		if r2 := r.end(); r2 != r {
			t.Fatal("a reqCtx whose Done nobody asked for was not reused")
		}
		if _, ok := r.Deadline(); ok || r.Value(claimCtxKey{}) != nil {
			t.Error("the deadline or the claim survived end")
		}
		if _, ok := FrameClaimFrom(r); ok {
			t.Error("FrameClaimFrom found a claim after end")
		}
	})
	t.Run("deadline without Done", func(t *testing.T) {
		rc, _ := testReqCtx(t)
		r := rc.begin(rc.p.e.clock()+int64(time.Millisecond), nil)
		time.Sleep(2 * time.Millisecond)
		if err := r.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Err = %v past the deadline, want DeadlineExceeded", err)
		}
		if err := context.Cause(r); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Cause = %v past the deadline, want DeadlineExceeded", err)
		}
	})
	t.Run("Done at the deadline", func(t *testing.T) {
		rc, _ := testReqCtx(t)
		r := rc.begin(rc.p.e.clock()+int64(5*time.Millisecond), nil)
		select {
		case <-r.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("Done not closed 5 s after a 5 ms deadline")
		}
		if err := r.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Err = %v, want DeadlineExceeded", err)
		}
		if next := r.end(); next == r {
			t.Error("a reqCtx whose Done was asked for was reused")
		}
	})
	t.Run("engine stops", func(t *testing.T) {
		for _, withDone := range []bool{false, true} {
			rc, stop := testReqCtx(t)
			r := rc.begin(0, nil)
			var done <-chan struct{}
			if withDone {
				done = r.Done()
			}
			stop()
			if err := r.Err(); !errors.Is(err, context.Canceled) {
				t.Errorf("Done asked first %v: Err = %v after the engine stopped, want Canceled", withDone, err)
			}
			if withDone {
				select {
				case <-done:
				case <-time.After(5 * time.Second):
					t.Fatal("Done not closed when the engine stopped")
				}
			}
		}
	})
	t.Run("kept past the call", func(t *testing.T) {
		rc, _ := testReqCtx(t)
		r := rc.begin(rc.p.e.clock()+int64(time.Hour), nil)
		child, cancel := context.WithTimeout(r, time.Hour) // asks for Done
		defer cancel()
		gone := make(chan error, 1)
		go func() { <-child.Done(); gone <- context.Cause(child) }()
		next := r.end()
		if next == r {
			t.Fatal("a reqCtx whose Done was asked for was reused")
		}
		select {
		case err := <-gone:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("a derived context ended with %v, want Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a context derived in the call did not end when the call did")
		}
		if !errors.Is(r.Err(), context.Canceled) {
			t.Errorf("the retired reqCtx's Err = %v, want Canceled", r.Err())
		}
		// the next task's context is a fresh one, untouched by the old
		n := next.begin(0, nil)
		if n.Err() != nil {
			t.Errorf("the next task's Err = %v", n.Err())
		}
	})
	t.Run("Done between tasks", func(t *testing.T) {
		rc, _ := testReqCtx(t)
		r := rc.begin(0, nil).end()
		kept := r.Done() // a goroutine that kept the last task's context, against the contract
		n := r.begin(rc.p.e.clock()+int64(time.Hour), nil)
		if n == r {
			t.Fatal("the next task got the context whose Done a stray goroutine holds")
		}
		select {
		case <-kept:
		default:
			t.Error("the stray Done was not closed")
		}
		if n.Err() != nil {
			t.Errorf("the next task's Err = %v", n.Err())
		}
	})
}
