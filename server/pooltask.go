package server

import (
	"context"

	"github.com/sluicenet/sluice/admission"
	"github.com/valyala/bytebufferpool"
)

// The worker pool's unit of work: a task, the idempotency claim it may
// carry, and the ring that queues the tasks of one priority.

// poolTask is one frame waiting for, or held by, a worker.
type poolTask struct {
	l        *loop
	c        *Conn
	fd       int32
	gen      uint64
	buf      *bytebufferpool.ByteBuffer
	enq      int64 // loop clock at ingress
	deadline int64 // loop clock; 0: none
	claim    *poolClaim
	prio     admission.Priority
	slot     int16 // its tenant's fair-share slot; -1: none
}

// poolClaim is the idempotency claim (ClaimNew) the policy made for a
// pooled frame: the handler gets it through FrameClaimFrom, and a task the
// pool refuses abandons it so that a retry runs again.
type poolClaim struct {
	claim admission.Claim
	key   []byte // a copy: the frame's own bytes are gone by then
	store admission.Store
}

// claimCtxKey keys the claim in a pooled request's context.
type claimCtxKey struct{}

// FrameClaimFrom returns the idempotency claim the admission policy made
// for the frame a PoolHandler is serving (ClaimNew: the handler runs and
// should Finish or Abandon it with its Token on the Admitter's store), and
// false when the frame has none. It is the pool's counterpart of
// Conn.FrameClaim. A frame the pool refuses instead of serving (queue
// full, deadline, draining, CoDel) has its claim abandoned by the engine.
func FrameClaimFrom(ctx context.Context) (admission.Claim, bool) {
	pc, ok := ctx.Value(claimCtxKey{}).(*poolClaim)
	if !ok || pc == nil {
		return admission.Claim{}, false
	}
	return pc.claim, true
}

// abandon releases t's claim, if any, after the pool refused t.
func (p *pool) abandon(t *poolTask) {
	if pc := t.claim; pc != nil {
		_ = pc.store.Abandon(context.Background(), p.e.timeAt(p.e.clock()), pc.key, pc.claim.Token)
		t.claim = nil
	}
}

// poolRing is the pool's queue of one priority: a ring of tasks.
type poolRing struct {
	q       []poolTask
	head, n int
}

// push appends t; the ring has room (the pool holds QueueLen frames in all).
func (r *poolRing) push(t poolTask) {
	r.q[(r.head+r.n)%len(r.q)] = t
	r.n++
}

// pop takes the newest task, or the oldest; the ring is not empty.
func (r *poolRing) pop(newest bool) poolTask {
	i := r.head
	if newest {
		i = (r.head + r.n - 1) % len(r.q)
	} else {
		r.head = (r.head + 1) % len(r.q)
	}
	t := r.q[i]
	r.q[i] = poolTask{}
	r.n--
	return t
}
