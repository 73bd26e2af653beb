package server

import (
	"context"
	"sync"
	"time"
)

// reqCtx is the context a worker hands ServeFrame: the request's deadline,
// its idempotency claim, and the pool's end (the engine stopping), without
// a context.WithDeadline per frame (a timer context, its timer and a value
// context would be the only allocations on the pool's steady-state path).
//
// A worker reuses its reqCtx from frame to frame, as it does the frame's
// buffer, so the context belongs to the ServeFrame call (BlockingHandler
// says so). Deadline, Err and Value answer from the fields. Done is the
// slow path: the first call makes a context.WithDeadline under the pool's
// context, whose channel closes at the deadline or when the engine stops,
// and then Err, Value and context.Cause answer from it, so a context
// derived from this one attaches to it as to any standard context. Such a
// reqCtx is cancelled when its ServeFrame returns and is never reused: a
// goroutine the handler left selecting on Done sees it closed, as with a
// per-request context.
type reqCtx struct {
	p *pool

	mu       sync.Mutex
	deadline int64 // loop clock; 0: none (the request's ends only with the engine)
	claim    *poolClaim
	std      context.Context // made by the first Done; nil until then
	cancel   context.CancelFunc
}

// begin readies r for a task with the given deadline and claim, and
// returns the reqCtx to use: r, or a fresh one when r's Done was asked for
// since it was last reset (by a goroutine that kept it, against the
// contract; its channel must not serve another request).
func (r *reqCtx) begin(deadline int64, claim *poolClaim) *reqCtx {
	r.mu.Lock()
	if r.std != nil {
		r.cancel()
		r.mu.Unlock()
		r = &reqCtx{p: r.p}
		r.mu.Lock()
	}
	r.deadline, r.claim = deadline, claim
	r.mu.Unlock()
	return r
}

// end is called when ServeFrame returns. It returns the reqCtx for the
// worker's next task: r reset, or a fresh one when Done was asked for (r's
// channel is closed now and stays so).
func (r *reqCtx) end() *reqCtx {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.std != nil {
		r.cancel() // its fields stay, so a late reader sees this request, cancelled
		return &reqCtx{p: r.p}
	}
	r.deadline, r.claim = 0, nil
	return r
}

// Deadline returns the request's deadline.
func (r *reqCtx) Deadline() (time.Time, bool) {
	r.mu.Lock()
	d := r.deadline
	r.mu.Unlock()
	if d == 0 {
		return time.Time{}, false
	}
	return r.p.e.timeAt(d), true
}

// Done returns a channel closed at the deadline, when the engine stops, or
// when ServeFrame has returned.
func (r *reqCtx) Done() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.std == nil {
		if r.deadline != 0 {
			r.std, r.cancel = context.WithDeadline(r.p.ctx, r.p.e.timeAt(r.deadline))
		} else {
			r.std, r.cancel = context.WithCancel(r.p.ctx)
		}
	}
	return r.std.Done()
}

// Err returns context.DeadlineExceeded once the deadline has passed,
// context.Canceled once the engine stops (or, after Done, once ServeFrame
// has returned), and nil before.
func (r *reqCtx) Err() error {
	r.mu.Lock()
	std, d := r.std, r.deadline
	r.mu.Unlock()
	if std != nil {
		return std.Err()
	}
	if err := r.p.ctx.Err(); err != nil {
		return err
	}
	if d != 0 && r.p.e.clock() >= d {
		return context.DeadlineExceeded
	}
	return nil
}

// Value returns the frame's claim for claimCtxKey (FrameClaimFrom). Other
// keys: the standard context's values once Done made it (what
// context.Cause and derived contexts look up), nil before; the pool's own
// context carries no values.
func (r *reqCtx) Value(key any) any {
	r.mu.Lock()
	std, claim := r.std, r.claim
	r.mu.Unlock()
	if _, ok := key.(claimCtxKey); ok {
		if claim == nil {
			return nil
		}
		return claim
	}
	if std != nil {
		return std.Value(key)
	}
	return nil
}

// String names the context, as the standard ones do.
func (r *reqCtx) String() string { return "sluice.poolRequestContext" }
