package server

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
)

// poolEcho is a BlockingHandler that echoes each frame and reads its
// context the way a handler that never blocks does (the deadline, the
// error, the claim), without asking for Done.
type poolEcho struct{}

func (poolEcho) ServeFrame(ctx context.Context, c *Conn, frame []byte) Action {
	if _, ok := ctx.Deadline(); !ok || ctx.Err() != nil {
		c.CloseWithError(context.Cause(ctx))
		return None
	}
	_, _ = FrameClaimFrom(ctx)
	if err := c.WriteFrame(frame); err != nil {
		c.CloseWithError(err)
	}
	return None
}

// TestPoolZeroAllocs: the worker pool's steady state (16 pipelined 64-byte
// frames per round trip through the pool, ordered and unordered, its CoDel
// target derived, on each backend) allocates nothing: the request context
// is the worker's own, not a context.WithDeadline per frame. With an
// admission policy whose Classify makes every other round's frames
// critical, the pool's rings by priority and its tenants' shares run too.
func TestPoolZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's bookkeeping allocates")
	}
	for _, b := range []Backend{BackendEpoll, BackendIOURing} {
		for _, unordered := range []bool{false, true} {
			for _, classified := range []bool{false, true} {
				name := b.String() + "/ordered"
				if unordered {
					name = b.String() + "/unordered"
				}
				if classified {
					name += "/classified"
				}
				t.Run(name, func(t *testing.T) {
					cfg := Config{Loops: 1, Codec: codecByName(t, "length", 0), Backend: b,
						Pool: PoolConfig{Handler: poolEcho{}, Workers: 1, Unordered: unordered, CoDel: &admission.CoDelConfig{}}}
					var critical atomic.Bool
					if classified {
						cfg.Admission = AdmissionPolicy{Admitter: newAdmitter(t, admission.Config{MemoryLimitBytes: -1}),
							Classify: func(_ *Conn, _ []byte, f *admission.Frame) {
								if critical.Load() {
									f.Priority = admission.PriorityCritical
								}
							}}
					}
					e := start(t, cfg, HandlerFuncs{})
					if classified && (e.pool.fair == nil || !loopStage(e).poolShares) {
						t.Fatal("the pool keeps no tenants' shares")
					}
					echo, _, _ := echoRounds(t, e)
					round := func() {
						critical.Store(!critical.Load())
						echo()
					}
					round()
					round() // both classes' rings made
					if a := testing.AllocsPerRun(500, round); a != 0 {
						t.Errorf("%.2f allocations per round trip of 16 frames through the pool, want 0", a)
					}
					e.pool.mu.Lock()
					made := e.pool.rings[admission.PriorityCritical].q != nil
					e.pool.mu.Unlock()
					if made != classified {
						t.Errorf("classified %v: the critical ring made %v", classified, made)
					}
				})
			}
		}
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

// BenchmarkPoolEcho is BenchmarkEcho through the worker pool (unordered,
// one worker per connection, no shedding: the rounds count bytes, so every
// frame must be served): ns/op and allocs/op are per echoed frame, client
// included.
func BenchmarkPoolEcho(b *testing.B) {
	for _, conns := range []int{1, 16} {
		b.Run(map[int]string{1: "conns=1", 16: "conns=16"}[conns], func(b *testing.B) {
			e := start(b, Config{Loops: 1, Codec: protocolLength(),
				Pool: PoolConfig{Handler: poolEcho{}, Workers: conns, Unordered: true}},
				HandlerFuncs{})
			echoBench(b, e, conns)
		})
	}
}
