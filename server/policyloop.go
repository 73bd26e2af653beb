package server

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/protocol/envelope"
	"github.com/valyala/bytebufferpool"
	"golang.org/x/sys/unix"
)

// Timing of the policy work on a loop.
const (
	// policyTickNanos spaces a loop's calls to Admitter.Tick (which itself
	// does real work at most once per its SampleInterval, 10 ms by
	// default), so a busy loop does not take the tick lock every turn.
	policyTickNanos = int64(time.Millisecond)
	// sampleNanos spaces a loop's accept-queue samples (one getsockopt),
	// and is how often a loop wakes while the listen gate is closed or an
	// admission signal is hot, so that the gate can reopen after its dwell
	// and the signals can cool even when no connection has anything to say.
	sampleNanos = int64(10 * time.Millisecond)
	// maxTenantKeyBytes is room for any built-in tenant key: a tag byte and
	// the longest envelope tenant (or an IPv6 address).
	maxTenantKeyBytes = 1 + envelope.MaxTenantBytes
)

// Reasons for refusals that are not admission reasons; the envelope and
// HTTP rejecters answer them with a conflict rather than "unavailable".
const (
	reasonInProgress = "in_progress" // idempotency key claimed by a request still running
	reasonMismatch   = "mismatch"    // idempotency key reused with another payload
)

// loopPolicy is one loop's part of the admission wiring and its refusal
// counters. The loop owns every plain field; the atomics are what Stats and
// the other loops read.
type loopPolicy struct {
	on        bool
	adm       *admission.Admitter
	lp        *admission.Loop
	key       admission.TenantKeyFunc
	classify  func(*Conn, []byte, *admission.Frame)
	costBytes bool
	chargeRds bool          // ChargeReadBytes
	readCap   int           // ChargeReadBytes: largest read the quota can ever admit (0: unknown)
	readOver  bool          // the bytes being dispatched took their tenant past its quota
	readRetry time.Duration // and when the quota has room again
	shedDelay bool
	maxDelay  int64 // MaxQueueDelay in ns; 0: none
	rejDelay  int64 // RejectFlushDelay in ns; 0: rejects are flushed like replies
	slowReads bool  // RejectFlushDelay and MaxQueueDelay: defer reads whose frames would all be refused

	frame  admission.Frame
	keyBuf []byte
	claim  *Conn // the connection whose frame holds frame.Claim during OnFrame

	readySince   int64  // earliest arrival of the bytes this turn's events report (loop clock)
	evBound      int64  // readySince, or 0 when the previous wait filled its array
	evSince      int64  // evBound while dispatching a connection this turn's events reported and the last wait did not fill its array; else 0
	since        int64  // earliest arrival of the frames being dispatched (queueing delay)
	writingRej   bool   // answerReject is queueing a reject (keeps fRejOnly)
	othersQueued int    // the other loops' queued bytes at this turn's start (MaxQueuedBytes)
	rejBuf       []byte // scratch for reject replies
	nextTick     int64
	nextSample   int64
	rejecting    bool // the gate is GateRejecting: accept, reject, close
	gate         admission.GateState

	info         tcpInfo
	depth, limit uint32

	// counters, published by publishPolicy
	rejects        [admission.NumReasons]uint64 // by reason; ReasonNone: reasons that are not admission reasons
	backlogRejects uint64
	framesHeld     uint64 // dispatches stopped by MaxFramesPerTurn
	pubRejects     [admission.NumReasons]atomic.Uint64
	pubBacklogRej  atomic.Uint64
	pubFramesHeld  atomic.Uint64
	pubDepth       atomic.Uint32
	pubLimit       atomic.Uint32
	pubInflight    atomic.Int64
}

// initPolicy sets up the loop's policy state from the engine's config.
func (l *loop) initPolicy() {
	p := &l.pol
	pc := &l.cfg.Policy
	if !pc.enabled() {
		return
	}
	p.on = true
	p.adm = pc.Admitter
	p.lp = pc.Admitter.Loop(l.id)
	p.key = pc.TenantKey
	if p.key == nil {
		p.key = admission.KeyByIP()
	}
	p.classify = pc.Classify
	p.costBytes = pc.CostBytes
	p.chargeRds = pc.ChargeReadBytes
	if tl, ok := pc.Admitter.Tenants().(*admission.TenantLimiter); ok && p.chargeRds {
		p.readCap = int(min(tl.Quota().Burst, math.MaxInt32))
	}
	p.shedDelay = pc.ShedOnQueueDelay
	p.maxDelay = int64(pc.MaxQueueDelay)
	p.rejDelay = int64(pc.RejectFlushDelay)
	p.slowReads = p.rejDelay > 0 && p.maxDelay > 0
	p.keyBuf = make([]byte, 0, maxTenantKeyBytes)
}

// wallTime converts a loop clock reading to the time.Time the admission
// policies take (monotonic, anchored at the engine's start).
func (e *Engine) wallTime(nanos int64) time.Time { return e.start.Add(time.Duration(nanos)) }

func (l *loop) wallTime(nanos int64) time.Time { return l.e.wallTime(nanos) }

// policyTurn runs after the wait phase: it notes when this turn's input
// may have arrived (for queueing delay), feeds loop lag, ticks the
// admission policy, samples the accept queue and makes the listener follow
// the policy's gate. prev is the previous turn's clock.
func (l *loop) policyTurn(prev int64) {
	p := &l.pol
	var lag int64
	if l.slept {
		p.readySince = l.now // woken by this turn's events: they just arrived
	} else {
		p.readySince = prev // busy: they may have arrived any time since the last look
		lag = l.now - prev
	}
	p.evBound = p.readySince
	if l.prevFull {
		p.evBound = 0 // edges from before the last wait may be reported only now
	}
	if l.now >= p.nextSample {
		p.nextSample = l.now + sampleNanos
		l.sampleAcceptQueue()
	}
	if l.cfg.MaxQueuedBytes > 0 {
		p.othersQueued = 0
		for _, o := range l.e.loops {
			if o != l {
				p.othersQueued += int(o.pub[gOutBytes].Load() + o.pub[gInBytes].Load())
			}
		}
	}
	if !p.on {
		return
	}
	now := l.wallTime(l.now)
	if l.slept {
		p.lp.QueueEmpty(now) // the loop slept: it had no queue
	}
	p.lp.ObserveLag(now, time.Duration(lag))
	if l.now >= p.nextTick {
		p.nextTick = l.now + policyTickNanos
		if _, changed := p.adm.Tick(now); changed {
			l.logGate()
		}
	}
	l.followGate()
}

// sampleAcceptQueue reads this loop's listener's accept queue (a shared
// listener is read by loop 0 only) and, with a policy, feeds the fullest
// queue of all loops to the gate.
func (l *loop) sampleAcceptQueue() {
	p := &l.pol
	if l.lfd < 0 || l.lfdShared && l.id != 0 {
		return
	}
	depth, limit, ok := listenQueue(l.lfd, &p.info)
	if !ok {
		return
	}
	p.depth, p.limit = depth, limit
	p.pubDepth.Store(depth)
	p.pubLimit.Store(limit)
	if !p.on {
		return
	}
	var worstD, worstL uint32
	worst := -1.0
	for _, o := range l.e.loops {
		d, lim := o.pol.pubDepth.Load(), o.pol.pubLimit.Load()
		if lim == 0 {
			continue
		}
		if r := float64(d) / float64(lim); r > worst {
			worst, worstD, worstL = r, d, lim
		}
	}
	if worst >= 0 {
		p.adm.Gate().Backlog(worstD, worstL)
	}
}

// followGate makes the engine's gate follow the policy's: closed or paused
// takes every loop's listener out of epoll (gateAdmission); open and
// rejecting put it back, rejecting with an explicit reject for each new
// connection.
func (l *loop) followGate() {
	p := &l.pol
	st := p.adm.Gate().State()
	p.rejecting = st == admission.GateRejecting
	closed := !st.Listening()
	if held := l.e.gate.Load()&gateAdmission != 0; closed != held {
		if closed {
			l.e.pauseAccept(gateAdmission)
		} else {
			l.e.resumeAccept(gateAdmission)
		}
	}
}

// logGate logs a policy gate transition this loop's Tick (or accept error)
// caused: once per transition, with the pressure behind it.
func (l *loop) logGate() {
	p := &l.pol
	g := p.adm.Gate().Stats()
	from := p.gate
	p.gate = g.State
	if lg := l.cfg.Logger; lg != nil && from != g.State {
		st := p.adm.Stats()
		lg.Info("sluice: admission gate", "from", from.String(), "to", g.State.String(),
			"pressure", g.Pressure, "worst", st.Worst.String(), "conns", st.Load.Conns,
			"inflight", st.Load.InflightReqs, "queued_bytes", st.Load.QueuedBytes,
			"transitions", g.Transitions)
	}
}

// policyWakeAt returns when the loop must wake even without events: every
// sampleNanos while the listen gate is closed (for a reason other than
// shutdown) or an admission signal is hot, so the gate reopens after its
// dwell and signals cool on an idle engine; math.MaxInt64 otherwise.
func (l *loop) policyWakeAt() int64 {
	p := &l.pol
	if l.draining {
		return math.MaxInt64
	}
	if l.e.gate.Load()&^gateShutdown != 0 || p.on && p.adm.Hot().Signals() != 0 {
		return max(p.nextSample, l.now+1)
	}
	return math.MaxInt64
}

// policyAcceptError feeds an accept error that paused the listener to the
// policy's gate, which pauses every loop's listener.
func (l *loop) policyAcceptError(en errno) {
	p := &l.pol
	if !p.on {
		return
	}
	if _, paused := p.adm.Gate().AcceptError(l.wallTime(l.now), en); paused {
		l.logGate()
		l.followGate()
	}
}

// publishPolicy copies the loop's load and refusal counters to where the
// policy and Stats read them; it runs with every publish (end of turn,
// before sleeping).
func (l *loop) publishPolicy() {
	p := &l.pol
	p.pubInflight.Store(int64(l.poolInflight))
	for i := range p.rejects {
		if p.pubRejects[i].Load() != p.rejects[i] {
			p.pubRejects[i].Store(p.rejects[i])
		}
	}
	if p.pubBacklogRej.Load() != p.backlogRejects {
		p.pubBacklogRej.Store(p.backlogRejects)
	}
	if p.pubFramesHeld.Load() != p.framesHeld {
		p.pubFramesHeld.Store(p.framesHeld)
	}
	if p.on {
		p.lp.Load = admission.LoopLoad{
			Conns:        int64(l.nconns),
			InflightReqs: int64(l.poolInflight),
			QueuedBytes:  int64(l.outBytes + l.inBytes),
		}
		p.lp.Publish()
	}
}

// frameIn runs a decoded frame through admission (Policy, then the custom
// FrameAdmitter) and, with a pool, hands it to a worker. It reports whether
// OnFrame should run on the loop now; false means the frame was refused
// (and answered) or queued for a worker.
func (l *loop) frameIn(c *Conn, frame []byte) bool {
	if l.pol.on && !l.admitPolicy(c, frame) {
		return false
	}
	if l.admit != nil {
		if v := l.admit.AdmitFrame(c, frame, l.now); v.Reject {
			l.countReject(v.Reason)
			l.answerReject(c, frame, v.Reason, v.RetryAfter)
			return false
		}
	}
	if pl := l.e.pool; pl != nil {
		pl.submit(l, c, frame, l.poolClaim(c))
		return false
	}
	return true
}

// admitPolicy runs the Admitter's order for one frame, then its idempotency
// outcome, then (ShedOnQueueDelay) CoDel on the frame's queueing delay. It
// reports whether the frame may proceed.
func (l *loop) admitPolicy(c *Conn, frame []byte) bool {
	p := &l.pol
	if p.readOver { // ChargeReadBytes: the read that brought this frame was over quota
		l.refuse(c, frame, admission.ReasonTenant, p.readRetry)
		return false
	}
	f := &p.frame
	f.Tenant = p.key(p.keyBuf[:0], c.remote, nil)
	f.Cost = 1
	if p.costBytes {
		f.Cost = int64(len(frame))
	}
	if p.chargeRds {
		f.Tenant = nil // charged as read
	}
	f.Priority = admission.PriorityNormal
	f.ConnPending = int(c.pending)
	f.IdempotencyKey, f.Op, f.Payload = nil, nil, nil
	if p.classify != nil {
		p.classify(c, frame, f)
	}
	v := p.lp.Admit(context.Background(), l.wallTime(l.now), f)
	if !v.Admit {
		l.refuse(c, frame, v.Reason, v.RetryAfter)
		return false
	}
	if f.Claimed {
		switch f.Claim.State {
		case admission.ClaimDone:
			// replay the stored reply without running the handler
			if err := l.writeCopy(c, f.Claim.Response); err != nil {
				l.requestClose(c, err)
			}
			return false
		case admission.ClaimInProgress:
			l.refuseText(c, frame, reasonInProgress, f.Claim.RetryAfter)
			return false
		case admission.ClaimMismatch:
			l.refuseText(c, frame, reasonMismatch, 0)
			return false
		}
		p.claim = c // ClaimNew: the handler finishes it (Conn.FrameClaim)
	}
	if p.shedDelay {
		t := l.e.clock()
		if v := p.lp.Dequeue(l.wallTime(t), l.wallTime(p.since)); !v.Admit {
			l.refuse(c, frame, v.Reason, v.RetryAfter)
			return false
		}
		if p.maxDelay > 0 && t-p.since > p.maxDelay {
			// come back no sooner than this reject may have been held
			l.refuse(c, frame, admission.ReasonQueue, time.Duration(max(p.maxDelay, p.rejDelay)))
			return false
		}
	}
	return true
}

// refuse answers a frame refused for an admission reason and counts it. A
// refusal for global pressure (queued bytes, in-flight, memory) also stops
// reading a connection that has output queued: it is not reading what we
// send, and every further frame would only queue another reject.
func (l *loop) refuse(c *Conn, frame []byte, r admission.Reason, retryAfter time.Duration) {
	l.pol.rejects[r]++
	l.answerReject(c, frame, r.String(), retryAfter)
	if (r == admission.ReasonGlobal || r == admission.ReasonMemory) && c.outBytes > 0 && c.flags&fClosed == 0 {
		l.pauseRead(c)
	}
}

// refuseText answers a frame refused for a reason that is not an admission
// reason and counts it under ReasonNone ("other").
func (l *loop) refuseText(c *Conn, frame []byte, reason string, retryAfter time.Duration) {
	l.pol.rejects[admission.ReasonNone]++
	l.answerReject(c, frame, reason, retryAfter)
}

// answerReject writes the codec's reject for frame, or closes the
// connection with ErrRejected when the codec has none (a refusal is never
// silent). The connection stays usable otherwise.
func (l *loop) answerReject(c *Conn, frame []byte, reason string, retryAfter time.Duration) {
	l.st[cRejects]++
	if l.rejecter == nil {
		l.requestClose(c, fmt.Errorf("%w: %s", ErrRejected, reason))
		return
	}
	// copied into the out-queue's chunks like any reply, so a burst of
	// rejects coalesces instead of taking one out-queue slot each
	p := &l.pol
	p.rejBuf = l.rejecter.AppendReject(p.rejBuf[:0], frame, reason, retryAfter)
	rejOnly := c.outBytes == 0 || c.flags&fRejOnly != 0
	p.writingRej = true
	err := l.writeCopy(c, p.rejBuf)
	p.writingRej = false
	if err != nil {
		l.requestClose(c, err)
		return
	}
	if rejOnly && p.rejDelay > 0 && c.flags&(fRejOnly|fOutArmed) == 0 {
		c.flags |= fRejOnly // flushEarly and flushPhase may defer it (deferRejects)
		c.rejAt = l.now
	}
}

// countReject counts a refusal decided by a custom FrameAdmitter, by its
// reason when it names an admission reason.
func (l *loop) countReject(reason string) {
	r, err := admission.ParseReason(reason)
	if err != nil {
		r = admission.ReasonNone
	}
	l.pol.rejects[r]++
}

// rejectConn answers a connection accepted while the gate is
// GateRejecting: one write of the codec's reject (reason "global", the
// policy's retry hint) and a close. The write is best effort: a peer that
// already sent data may see a reset instead (closing a socket with unread
// input sends RST), which is still faster than a dropped handshake.
func (l *loop) rejectConn(fd int) {
	p := &l.pol
	p.backlogRejects++
	p.rejects[admission.ReasonGlobal]++
	if l.rejecter != nil {
		b := l.rejecter.AppendReject(l.buf[:0], nil, admission.ReasonGlobal.String(), backlogRetryAfter)
		sysWrite(fd, b)
	}
	sysClose(fd)
}

// backlogRetryAfter is the retry-after hint of a connection refused while
// the gate is rejecting.
const backlogRetryAfter = 100 * time.Millisecond

// connBudget applies the policy's per-connection budgets after c was
// flushed: it reports true when c broke its Max and was closed (ErrShed).
// Pausing above High is applied here; resuming is decided with the
// engine's own watermarks (canResume).
func (l *loop) connBudget(c *Conn) bool {
	p := &l.pol
	if !p.on || c.flags&fClosed != 0 {
		return false
	}
	switch p.lp.CheckConn(int64(c.outBytes+len(c.in)), int64(c.outMsgs), c.flags&fPaused != 0) {
	case admission.ConnClose:
		l.closeNow(c, ErrShed)
		return true
	case admission.ConnPauseRead:
		l.pauseRead(c)
	}
	return false
}

// pauseRead stops reading c (backpressure) until flushConn resumes it.
func (l *loop) pauseRead(c *Conn) {
	if c.flags&fPaused != 0 {
		return
	}
	c.flags |= fPaused
	l.nPaused++
	c.full.Store(true)
	l.st[cPauses]++
}

// policyAllowsResume reports whether the per-connection budgets let a
// paused connection read again (they are at or below their Low).
func (l *loop) policyAllowsResume(c *Conn) bool {
	p := &l.pol
	if c.outBytes > 0 && (l.overQueued() || p.on && l.e.gate.Load()&gateAdmission != 0) {
		return false // global pressure: only a connection that read everything reads more
	}
	if !p.on {
		return true
	}
	return p.lp.CheckConn(int64(c.outBytes+len(c.in)), int64(c.outMsgs), true) == admission.ConnResumeRead
}

// overQueuedReadBytes is what a connection with nothing queued may read
// per turn while the engine is at MaxQueuedBytes: enough to keep a
// well-behaved client moving, little enough that many of them cannot take
// the engine far past its budget in one turn.
const overQueuedReadBytes = 4 << 10

// readWhileOver decides a read while the engine is at MaxQueuedBytes: a
// connection with output queued stops being read until that output is gone
// (false); one with nothing queued reads at most overQueuedReadBytes this
// turn (budget is lowered; false once spent, with c on the ready list).
func (l *loop) readWhileOver(c *Conn, budget *int) bool {
	if c.outBytes > 0 {
		l.pauseRead(c) // flushConn resumes it once its output is gone
		return false
	}
	if c.readBytes >= overQueuedReadBytes {
		l.ready(c, fNeedRead)
		return false
	}
	*budget = min(*budget, overQueuedReadBytes-c.readBytes)
	return true
}

// overQueued reports whether the engine's queued bytes are at
// Config.MaxQueuedBytes: this loop's exactly, the others' as of their last
// publish (summed once per turn in policyTurn).
func (l *loop) overQueued() bool {
	m := l.cfg.MaxQueuedBytes
	return m > 0 && l.outBytes+l.inBytes+l.pol.othersQueued >= m
}

// poolClaim hands the policy's new idempotency claim for c's current
// frame, if any, to the worker pool (FrameClaimFrom), with a copy of its
// key.
func (l *loop) poolClaim(c *Conn) *poolClaim {
	p := &l.pol
	if !p.on || p.claim != c || !p.frame.Claimed || p.frame.Claim.State != admission.ClaimNew {
		return nil
	}
	p.claim = nil
	return &poolClaim{claim: p.frame.Claim, key: bytes.Clone(p.frame.IdempotencyKey), store: p.adm.Idempotency()}
}

// FrameClaim returns the idempotency claim the policy made for the frame
// being handled (ClaimNew: the handler runs and should Finish or Abandon
// the claim with its Token), and false when the current frame has none. It
// is valid only inside OnFrame, on the loop.
func (c *Conn) FrameClaim() (admission.Claim, bool) {
	l := c.loop
	if !l.onLoop() || l.pol.claim != c || !l.pol.frame.Claimed {
		return admission.Claim{}, false
	}
	return l.pol.frame.Claim, true
}

// Reject answers frame with the codec's reject (see RejecterFor) for
// reason, with a retry-after hint, and counts it by reason in
// Stats.Admission.Rejects: for refusals the handler decides itself (a
// concurrency limit, a dependency's circuit breaker). The connection stays
// open. Off the loop the reject goes through the loop's inbox. Without a
// Rejecter for the codec it returns ErrRejected and sends nothing; the
// caller decides whether to close. Other errors are those of Write.
func (c *Conn) Reject(frame []byte, reason string, retryAfter time.Duration) error {
	l := c.loop
	rj := l.rejecter
	if rj == nil {
		return ErrRejected
	}
	r, err := admission.ParseReason(reason)
	if err != nil {
		r = admission.ReasonNone
	}
	if l.onLoop() {
		l.pol.rejects[r]++
		if l.pol.on {
			l.pol.lp.Count(r)
		}
		l.st[cRejects]++
		l.pol.rejBuf = rj.AppendReject(l.pol.rejBuf[:0], frame, reason, retryAfter)
		return l.writeCopy(c, l.pol.rejBuf)
	}
	l.e.offRejects.Inc(r)
	if a := l.cfg.Policy.Admitter; a != nil {
		a.Count(r)
	}
	if err := c.precheck(); err != nil {
		return err
	}
	bb := bytebufferpool.Get()
	bb.B = rj.AppendReject(bb.B[:0], frame, reason, retryAfter)
	err = l.submit(task{kind: taskWrite, fd: c.fd, gen: c.gen, seg: ioflush.Segment{Buf: bb.B, Pooled: bb}})
	if err != nil {
		bytebufferpool.Put(bb)
	}
	return err
}

// AdmissionStats is the engine's admission snapshot: the refusals it
// carried out by reason, the listener's accept queue, the worker pool, and
// the Admitter's own state when a Policy is set.
type AdmissionStats struct {
	// Enabled reports that Config.Policy has an Admitter.
	Enabled bool
	// Gate is the policy's listen gate (open, closed, paused, rejecting)
	// with its transitions; zero without a policy.
	Gate admission.GateStats
	// Rejects counts refused frames by reason, from the loops (policy,
	// FrameAdmitter, backlog rejects) and the worker pool; index
	// ReasonNone counts refusals whose reason is not an admission reason
	// (a FrameAdmitter's own words, idempotency conflicts).
	Rejects admission.RejectCounts
	// BacklogRejects counts connections accepted and refused at once while
	// the gate was rejecting.
	BacklogRejects uint64
	// InflightReqs is the frames in the worker pool, queued or running.
	InflightReqs int64
	// QueuedBytes is unparsed input plus queued output, all connections.
	QueuedBytes int64
	// AcceptQueueDepth and AcceptQueueLimit are the listeners' accept
	// queues (TCP_INFO tcpi_unacked and tcpi_sacked), summed over the
	// listening sockets, sampled at most every 10 ms by each loop.
	AcceptQueueDepth, AcceptQueueLimit int64
	// Pool is the worker pool's state; zero without a pool.
	Pool PoolStats
	// Policy is Admitter.Stats (zero without a policy): load, pressure,
	// the signals, decisions per reason as the Admitter counted them.
	Policy admission.Stats
}

// admissionStats builds the admission part of Stats, and sums the frame
// budget counter that lives beside it.
func (e *Engine) admissionStats(queuedBytes int64) (AdmissionStats, uint64) {
	s := AdmissionStats{QueuedBytes: queuedBytes}
	var held uint64
	for _, l := range e.loops {
		p := &l.pol
		held += p.pubFramesHeld.Load()
		for i := range s.Rejects {
			s.Rejects[i] += p.pubRejects[i].Load()
		}
		s.BacklogRejects += p.pubBacklogRej.Load()
		s.InflightReqs += p.pubInflight.Load()
		s.AcceptQueueDepth += int64(p.pubDepth.Load())
		s.AcceptQueueLimit += int64(p.pubLimit.Load())
	}
	if e.pool != nil {
		s.Pool = e.pool.stats()
		s.Rejects = s.Rejects.Add(s.Pool.Rejects)
	}
	s.Rejects = s.Rejects.Add(e.offRejects.Snapshot())
	if a := e.cfg.Policy.Admitter; a != nil {
		s.Enabled = true
		s.Policy = a.Stats()
		s.Gate = s.Policy.Gate
	}
	return s, held
}

// acceptReject accepts one connection while the gate is rejecting and
// refuses it at once (rejectConn). It reports whether to go on accepting.
func (l *loop) acceptReject() bool {
	fd, _, en := sysAccept(l.lfd)
	switch en {
	case 0:
		l.rejectConn(fd)
		return true
	case unix.EINTR, unix.ECONNABORTED:
		return true
	case unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM:
		l.pauseForFds(en)
	}
	return false
}

// chargeRead charges n bytes just read from c to its tenant
// (ChargeReadBytes); over quota, the frames decoded from them are refused
// (admitPolicy) and afterRead parks c until the quota has room.
func (l *loop) chargeRead(c *Conn, n int) {
	p := &l.pol
	p.keyBuf = p.key(p.keyBuf[:0], c.remote, nil)
	if v, _ := p.lp.ChargeBytes(context.Background(), l.wallTime(l.now), p.keyBuf, int64(n)); !v.Admit {
		p.readOver, p.readRetry = true, max(v.RetryAfter, time.Millisecond)
	}
}

// afterRead ends a charged read's dispatch: a connection whose read went
// over its tenant's quota is not read again until the retry-after.
func (l *loop) afterRead(c *Conn) {
	p := &l.pol
	if !p.readOver {
		return
	}
	p.readOver = false
	if c.flags&(fClosed|fSlow) != 0 {
		return
	}
	c.flags |= fSlow | fQuota
	c.flags &^= fFresh
	l.parkSlow(c, l.now+int64(p.readRetry))
}
