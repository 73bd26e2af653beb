package server

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/admission/shed"
	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/protocol"
	"github.com/valyala/bytebufferpool"
)

// PoolStats is the worker pool's state.
type PoolStats struct {
	// Workers is the number of worker goroutines.
	Workers int
	// Queued is the frames waiting for a worker; Running those being
	// served.
	Queued, Running int64
	// Submitted counts frames the loops handed to the pool (refusals for a
	// full queue excluded); Served counts frames a handler ran for.
	Submitted, Served uint64
	// Rejects counts the pool's refusals by reason: "queue" (queue full,
	// enqueue deadline or request deadline passed in the queue), "codel"
	// (shed by CoDel), "draining" (engine shutting down).
	Rejects admission.RejectCounts
	// RejectsByPriority counts the same refusals by the frame's priority
	// (AdmissionPolicy.Classify; normal without one).
	RejectsByPriority [admission.NumPriorities]uint64
}

// pool is the engine's bounded worker pool for a BlockingHandler (see
// PoolConfig). The queue is a ring per priority under one mutex, QueueLen
// frames in all: loops push (never waiting), workers take from the most
// urgent ring that holds a frame, from its front, or from its back (newest
// first) while CoDel reports a standing queue.
type pool struct {
	e   *Engine
	cfg PoolConfig
	rj  protocol.Rejecter // the codec's; nil: a refusal closes the connection

	// backlog counts the connections (ordered pool) whose input waits in
	// c.in behind their frame in the pool (fPoolBacklog).
	backlog atomic.Int64
	// busy counts the tasks queued or running, for the loops to read
	// without p.mu (active).
	busy atomic.Int64

	mu       sync.Mutex
	cond     sync.Cond
	rings    [admission.NumPriorities]poolRing // by priority; a ring's slice is made with its first frame
	n        int                               // frames queued in all the rings
	fair     *shed.Fair                        // auto: tenants' shares of the frames served (see submit)
	codel    *admission.CoDel
	auto     bool         // CoDel's target is derived from the service time (CoDelConfig.Target zero)
	capC     atomic.Int64 // auto: C, twice CoDel's derived target, for the loops to read without p.mu (heldLong)
	caps     shed.Caps    // auto: the workers' service time per frame and the caps derived from it
	running  atomic.Int64 // tasks a worker is serving; written under mu, read without it by starved
	draining bool
	closed   bool
	idle     chan struct{} // closed when draining and nothing is queued or running
	st       PoolStats

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newPool(e *Engine) (*pool, error) {
	cfg := e.cfg.Pool
	p := &pool{e: e, cfg: cfg}
	p.rings[admission.PriorityNormal].q = make([]poolTask, cfg.QueueLen)
	p.rj, _ = e.cfg.Codec.(protocol.Rejecter)
	p.cond.L = &p.mu
	p.st.Workers = cfg.Workers
	if cfg.CoDel != nil {
		cd, err := admission.NewCoDel(*cfg.CoDel)
		if err != nil {
			return nil, fmt.Errorf("%w: Pool.CoDel: %w", ErrInvalidConfig, err)
		}
		p.codel = cd
		if cfg.CoDel.Target == 0 {
			p.auto = true
			p.caps = shed.NewCaps(shed.PoolMinCap, 0)
			p.deriveLocked()
			p.fair = &shed.Fair{}
		}
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// start starts the workers.
func (p *pool) start() {
	p.wg.Add(p.cfg.Workers)
	for i := 0; i < p.cfg.Workers; i++ {
		go p.worker()
	}
}

// submit queues frame for a worker, on loop l. A full queue or a draining
// pool refuses it at once: the loop never waits.
//
// A frame with a tenant (slot, see stage.poolSlot) is counted as offered
// by its tenant, and with a derived target refused with reason fair once
// its tenant had its share of a window's frames served, paced over the
// window (shed.Fair.OverPaced; the workers' sleep counts as the loop's):
// the pool is where frames wait when the work runs on it, and paced so
// that a heavy tenant does not spend its share at the start of each
// window and take the queue's place from light ones
// (docs/OVERLOAD.md#fair-shares).
func (p *pool) submit(l *loop, c *Conn, frame []byte, claim *poolClaim, prio admission.Priority, slot int) {
	// enq is when the frame's bytes were read, not this turn: a frame held
	// in its connection's input (the ordered pool, backpressure) has been
	// waiting since, and the pool's CoDel judges the whole wait
	t := poolTask{l: l, c: c, fd: c.fd, gen: c.gen, enq: l.arrived, claim: claim, prio: prio, slot: -1}
	if cfg := &p.cfg; cfg.Deadline != nil {
		if d := p.deadline(l, c, frame, l.e.timeAt(l.now)); !d.IsZero() {
			t.deadline = max(int64(d.Sub(p.e.start)), 1)
		}
	}
	if t.deadline == 0 && p.cfg.RequestTimeout > 0 {
		t.deadline = l.now + int64(p.cfg.RequestTimeout)
	}
	p.mu.Lock()
	v := admission.Admitted()
	if f := p.fair; f != nil && slot >= 0 {
		t.slot = int16(slot)
		f.Roll(l.now)
		if f.OverPaced(slot, l.now) {
			v = admission.Reject(admission.ReasonFair, time.Duration(max(f.Until()-l.now, int64(p.shedAfter()))))
		}
	}
	if v.Admit && p.stale(l.now-t.enq, prio) {
		// this frame already waited past what the pool would serve (held
		// in its connection's input): refused here, on the loop, rather
		// than after a trip through the queue
		v = p.judge(l.now, t.enq, prio)
	}
	if v.Admit {
		switch {
		case p.draining || p.closed:
			v = admission.Reject(admission.ReasonDraining, 0)
		case p.n == p.cfg.QueueLen:
			v = admission.Reject(admission.ReasonQueue, p.cfg.RetryAfter)
		case p.predictedLong(prio):
			v = admission.Reject(admission.ReasonCoDel, p.shedAfter())
		}
	}
	if !v.Admit {
		p.refuseLocked(l, c, frame, &t, v)
		return
	}
	t.buf = bytebufferpool.Get()
	t.buf.B = append(t.buf.B[:0], frame...)
	stageSubmit(c.fd, t.enq, l.now)
	r := &p.rings[prio]
	if r.q == nil {
		r.q = make([]poolTask, p.cfg.QueueLen) // the first frame of a class other than normal
	}
	r.push(t)
	p.n++
	p.busy.Add(1)
	p.st.Submitted++
	p.mu.Unlock()
	p.cond.Signal()
	c.pending++
	l.poolInflight++
}

// refuseLocked answers frame of c on loop l with v's refusal instead of
// queueing t: counted, t's claim abandoned. p.mu is held; it releases it.
func (p *pool) refuseLocked(l *loop, c *Conn, frame []byte, t *poolTask, v admission.Verdict) {
	p.st.Rejects[v.Reason]++
	p.st.RejectsByPriority[t.prio]++
	p.mu.Unlock()
	p.abandon(t)
	l.answerReject(c, frame, v.Reason.String(), v.RetryAfter)
}

// take blocks until a task is available and returns it with the CoDel
// verdict on its queueing delay; false when the pool is closed and empty.
func (p *pool) take() (poolTask, admission.Verdict, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.n == 0 {
		if p.closed {
			return poolTask{}, admission.Verdict{}, false
		}
		if p.codel != nil && p.backlog.Load() == 0 {
			// an empty queue, unless (ordered) connections hold input
			// behind their frames in the pool: their queue is not empty
			p.codel.Empty(p.e.timeAt(p.e.clock()))
		}
		var t0 int64
		if p.fair != nil && p.fair.AllFull() {
			t0 = p.e.clock() // a worker idle with every limited tenant at its share: room the shares left
		}
		p.cond.Wait()
		if t0 != 0 {
			p.fair.AddIdle((p.e.clock() - t0) / int64(p.cfg.Workers))
		}
	}
	now := p.e.clock()
	prio := admission.PriorityCritical
	for p.rings[prio].n == 0 {
		prio++ // the most urgent class with a frame queued
	}
	for q := prio + 1; q < admission.NumPriorities; q++ {
		// a less urgent class's oldest frame past its cap is taken first,
		// for judge to refuse: behind a steady flow of more urgent frames
		// it would wait unanswered, and in ordered mode so would its
		// connection (docs/OVERLOAD.md#priorities)
		if r := &p.rings[q]; r.n > 0 && p.stale(now-r.q[r.head].enq, q) {
			prio = q
			break
		}
	}
	r := &p.rings[prio]
	oldest := r.q[r.head].enq
	// first in, first out; and while serving newest first, the oldest
	// once it has waited past the threshold or the long cap, for judge
	// to refuse (adaptive LIFO's short timeout: without it the oldest
	// frames starve behind fresher ones, and in ordered mode so do their
	// connections)
	lifo := p.codel != nil && p.codel.ServeNewestFirst() && !p.stale(now-oldest, prio)
	t := r.pop(lifo)
	p.n--
	p.running.Add(1)
	v := admission.Admitted()
	switch {
	case lifo:
		// CoDel judges the standing queue by its oldest frame, not by
		// the newest it serves: a fresh frame's short sojourn would
		// otherwise end the overload it was served under. The newest is
		// younger than the oldest, which is not stale: it is admitted.
		p.codel.Observe(p.e.timeAt(now), p.e.timeAt(oldest))
	case p.codel != nil:
		v = p.judge(now, t.enq, t.prio)
	}
	return t, v, true
}

// worker serves tasks until the pool is closed and empty.
func (p *pool) worker() {
	defer p.wg.Done()
	yieldAt := p.e.clock()
	rc := &reqCtx{p: p}
	for {
		t, v, ok := p.take()
		if !ok {
			return
		}
		var now int64
		if now, rc = p.serve(&t, v, rc); now-yieldAt >= poolYieldNanos {
			// let a loop that shares this P have it (see poolYieldNanos)
			yieldAt = now
			runtime.Gosched()
		}
	}
}

// poolYieldNanos is how long a worker serves frames back to back before it
// yields its P. Loops and workers share the Ps: a worker with a full queue
// would keep a loop from its P for the scheduler's 10 ms time slice, and
// connections would wait unread (docs/ARCHITECTURE.md#why-the-loop-yields).
const poolYieldNanos = int64(500 * time.Microsecond)

// active reports whether a task is queued or running: a worker may need a
// P, so a loop that sleeps gives its P up at once (Dispatcher.Park).
func (p *pool) active() bool { return p.busy.Load() > 0 }

// starved reports whether a frame waits in the queue while a worker is not
// running one: a worker that cannot get a P (the loop's end of turn yields
// it then, see loop.controlPhase). The loop asks every turn, so it reads
// the two counters without p.mu (queued = busy - running): while a worker
// takes or finishes a task the two may be a task apart for a moment, which
// costs one yield too many or one a turn late.
func (p *pool) starved() bool {
	r := p.running.Load()
	return p.busy.Load() > r && r < int64(p.cfg.Workers)
}

// serve runs one task with the worker's request context rc, or refuses it
// when it should not run any more. It returns its last clock reading (the
// handler's end, for a served task) and the request context for the
// worker's next task.
func (p *pool) serve(t *poolTask, v admission.Verdict, rc *reqCtx) (int64, *reqCtx) {
	now := p.e.clock()
	reason, retry := admission.ReasonNone, time.Duration(0)
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	switch {
	case closed:
		reason = admission.ReasonDraining
	case !v.Admit:
		reason, retry = v.Reason, v.RetryAfter
	case p.cfg.QueueTimeout > 0 && now-t.enq > int64(p.cfg.QueueTimeout),
		t.deadline != 0 && now >= t.deadline:
		reason, retry = admission.ReasonQueue, p.cfg.RetryAfter
	}
	served := reason == admission.ReasonNone
	var took int64
	if served {
		rc = rc.begin(t.deadline, t.claim)
		a := p.serveFrame(rc, t.c, t.buf.B)
		took = p.e.clock() - now
		rc = rc.end()
		stageServe(t.fd, now, now+took)
		switch a {
		case Close:
			t.c.Close()
		case Shutdown:
			p.e.beginShutdown(p.e.clock() + int64(p.e.cfg.DrainTimeout))
		}
	} else {
		p.abandon(t)
		p.reject(t, reason, retry)
	}
	bytebufferpool.Put(t.buf)
	t.buf = nil
	p.finish(t, served, reason, took)
	return now + took, rc
}

// reject answers t off the loop with the codec's reject (through the
// connection's inbox), or closes the connection when the codec has none.
func (p *pool) reject(t *poolTask, r admission.Reason, retry time.Duration) {
	if a := p.e.adm; a != nil {
		a.Count(r)
	}
	if p.rj == nil {
		t.c.CloseWithError(fmt.Errorf("%w: %s", ErrRejected, r))
		return
	}
	bb := bytebufferpool.Get()
	bb.B = p.rj.AppendReject(bb.B[:0], t.buf.B, r.String(), retry)
	err := t.l.submit(task{kind: taskWrite, fd: t.fd, gen: t.gen, seg: ioflush.Segment{Buf: bb.B, Pooled: bb}})
	if err != nil {
		bytebufferpool.Put(bb)
	}
}

// finish accounts a finished task and tells its loop, which owns the
// in-flight counts. The loop must hear of every task, so a full inbox is
// retried (it drains every turn) until the loop has exited.
func (p *pool) finish(t *poolTask, served bool, r admission.Reason, took int64) {
	p.mu.Lock()
	p.busy.Add(-1)
	p.running.Add(-1)
	if served {
		p.st.Served++
		if t.slot >= 0 && p.fair != nil {
			p.fair.Admit(int(t.slot))
		}
		if p.auto {
			p.caps.Observe(took)
			p.deriveLocked()
		}
	} else {
		p.st.Rejects[r]++
		p.st.RejectsByPriority[t.prio]++
	}
	if p.draining && p.n == 0 && p.running.Load() == 0 && p.idle != nil {
		close(p.idle)
		p.idle = nil
	}
	p.mu.Unlock()
	for {
		err := t.l.submit(task{kind: taskDone, fd: t.fd, gen: t.gen})
		if err != ErrInboxFull {
			return
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// drain stops taking new frames (they are refused with reason "draining")
// and waits until every queued and running frame is done, or ctx ends.
func (p *pool) drain(ctx context.Context) error {
	p.mu.Lock()
	p.draining = true
	if p.n == 0 && p.running.Load() == 0 {
		p.mu.Unlock()
		return nil
	}
	if p.idle == nil {
		p.idle = make(chan struct{})
	}
	idle := p.idle
	p.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop cancels every request context, refuses what is still queued and
// waits for the workers to exit. Handlers must return once their ctx ends.
func (p *pool) stop() {
	p.mu.Lock()
	p.closed, p.draining = true, true
	p.mu.Unlock()
	p.cancel()
	p.cond.Broadcast()
	p.wg.Wait()
}

// stats returns a snapshot.
func (p *pool) stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.st
	s.Queued, s.Running = int64(p.n), p.running.Load()
	return s
}

// poolDone is a worker's taskDone on the loop: the task's frame is no
// longer in flight. A connection that reached end of file while its frames
// were in the pool closes once the last one is done.
func (l *loop) poolDone(t *task) {
	stageDone(t.fd, l.now)
	l.poolInflight--
	c := l.conn(int(t.fd))
	if c == nil || c.gen != t.gen || c.flags&fClosed != 0 {
		return
	}
	c.pending--
	if c.pending == 0 && c.flags&fEOF != 0 {
		l.requestClose(c, ErrPeerClosed)
	}
	if c.pending == 0 && c.flags&fPoolWait != 0 {
		l.e.pool.unblock(c)
		c.flags &^= fPoolWait
		l.ready(c, fNeedRead) // its next frame, held in c.in or still in the socket
	}
}
