package server

import (
	"math"
	"time"

	"github.com/sluicenet/sluice/admission"
)

// The admission stage. A loop has one when Config.Admission is set (nil
// otherwise, and the mechanism files then do nothing for admission beyond
// checking for it). The loop calls it at these hooks, in turn order:
//
//	afterWait     turn start: queueing-delay bounds, loop lag, Admitter.Tick
//	              (with the accept-queue samples), the listen gate, and the
//	              deferred connections that are due (to the ready and dirty
//	              lists)
//	beforeRead    may this connection be read now? (parked, or every byte
//	              waiting is too old to admit: then it waits on the slow list)
//	readStart     before each read(2): the clock for the arrival bound
//	readBytes     the bytes read, before decoding (charged to the tenant)
//	readEnd       after the read's frames: whether the socket was drained;
//	              park a connection over its tenant's byte quota
//	admitFrame    every decoded frame: the decision; a refusal is answered
//	holdRejects   a flush of an out-queue holding only refusals: hold it back
//	afterFlush    the per-connection budgets (close above Max, pause at High)
//	mayResume     a paused connection wants to read again
//	beforeSleep   the loop found nothing to do: deferred reads instead?
//	wakeAt        when the timerfd must wake the loop for the stage
//	publish       end of turn: the loop's load to the Admitter
//
// and, at the edges, opened (a new connection), acceptError (EMFILE), and
// rejectQueued (a refusal went into an out-queue).

// Timing of the policy's work on a loop.
const (
	// policyTickNanos spaces a loop's calls to Admitter.Tick (which itself
	// does real work at most once per its SampleInterval, 10 ms by
	// default), so a busy loop does not take the tick lock every turn.
	policyTickNanos = int64(time.Millisecond)
	// maxTenantKeyBytes is the stage's key buffer: room for any built-in
	// tenant key (a tag byte and an envelope tenant of at most 64 bytes, or
	// an IPv6 address); a longer key from a TenantKey still works, through
	// the slice its append returns.
	maxTenantKeyBytes = 128
)

// stage is one loop's admission stage: what it asks (an AdmitFunc, or the
// Admitter's loop handle with the policy's options), its per-frame scratch,
// the queueing-delay bounds of the frames being dispatched, and the two
// lists of deferred connections. The loop goroutine owns all of it.
type stage struct {
	l  *loop
	fn AdmitFunc // the AdmitFunc; nil with a policy

	adm        *admission.Admitter // the policy's; nil with an AdmitFunc
	lp         *admission.Loop
	key        admission.TenantKeyFunc
	classify   func(*Conn, []byte, *admission.Frame)
	costBytes  bool
	chargeRds  bool  // ChargeReadBytes
	readCap    int   // ChargeReadBytes: largest read the quota can ever admit (0: unknown)
	shedDelay  bool  // the Admitter has a CoDel: measure queueing delay
	maxDelay   int64 // MaxQueueDelay in ns; 0: none (or derived, with auto)
	rejDelay   int64 // RejectFlushDelay in ns; 0: rejects are flushed like replies
	slowReads  bool  // RejectFlushDelay and a cap: defer reads whose frames would all be refused
	longPark   bool  // auto, the long hold, no Classify: a deferred read may wait for its connection's held refusals (deferRead)
	perConn    bool  // connections carry connStage state
	poolShares bool  // the worker pool shares what it serves by tenant (poolSlot): it keeps shares (derived target), no tenant quota, no loop shares
	auto       bool  // the queueing-delay caps are derived (MaxQueueDelay zero with CoDel)
	timed      bool  // auto with inline handlers: time each handler call (afterFrame)

	svcNanos int64      // auto: average handler time per frame (EWMA)
	capShort int64      // auto: C, the cap while CoDel sees a standing queue
	capLong  int64      // auto: L, the cap otherwise (and critical frames')
	admitAt  int64      // auto: clock at the last admission, start of the handler's time
	doneAt   int64      // timed: clock when the last handler returned, the next admission's now; 0 once used, or after a read or a wait
	fair     *fairShare // auto without a tenant quota: max-min shares while overloaded
	idleNs   int64      // auto: time asleep in epoll_wait in the current window
	winEnd   int64      // auto: end of the current utilisation window
	hot      bool       // auto: the last window was busy (a standing queue)
	awakeAt  int64      // auto: when the loop last woke from a sleep, the start of its busy period

	frame  admission.Frame
	keyBuf []byte
	claim  *Conn // the connection whose frame holds frame.Claim during OnFrame

	readySince int64 // earliest arrival of the bytes this turn's events report (loop clock)
	evBound    int64 // readySince, or 0 when the previous wait filled its array
	since      int64 // earliest arrival of the frames being dispatched (queueing delay)
	readOver   bool  // the bytes being dispatched took their tenant past its quota
	readRetry  time.Duration

	lazy      [2]lazyList // reject-only out-queues held back (holdRejects): the short hold, the long one
	slow      *Conn       // connections not read until slowAt (beforeRead, readEnd)
	lazyDue   int64       // earliest due time on the lazy lists (0: none); the timerfd wakes the loop for it
	slowDue   int64       // the same for the slow list
	slowNow   bool        // the loop had nothing else to do: release every slow connection
	slowEarly int32       // connections on the slow list that an idle loop reads at once (all but quota and long parks)
	slowLong  int32       // long parks on the slow list (sLongPark): an idle loop reads the autoIdleParkReads due first
	slowFirst bool        // the loop, judged overloaded, had nothing else to do and no slowEarly: release the long parks due first
	nextTick  int64
	gate      admission.GateState // the gate state last logged
}

// connStage is the admission state of one connection, allocated only when
// the stage needs it (queueing delay, batched refusals, read charging).
type connStage struct {
	flags      stageFlag
	lazyQ      uint8 // which lazy list it is on: index into stage.lazy
	rejHeld    int32 // the refusals in its reject-only out-queue
	drainedAt  int64 // start of the last read that left the socket empty, with nothing held back; the accept's turn at first (opened)
	rejAt      int64 // when the first reject of a reject-only out-queue was queued
	waitsUntil int64 // until then its refusals get the short hold: the peer waited for them
	lazyAt     int64 // the turn that put it on its lazy list
	slowAt     int64 // when a connection on the slow list is read
	readAt     int64 // with longPark: the turn of its last read
	gapNanos   int64 // with longPark: its average time between frames (notePace)
	frames     int32 // with longPark: frames decoded since readAt
	prevLazy   *Conn
	nextLazy   *Conn
	nextSlow   *Conn
}

// stageFlag is a connection's admission state.
type stageFlag uint8

const (
	sFresh    stageFlag = 1 << iota // the last read left the socket empty and no edge since went unread
	sLazy                           // on the lazy list
	sSlow                           // on the slow list: not read until slowAt
	sQuota                          // on the slow list for its tenant's byte quota: read at slowAt only
	sLong                           // its refusals get the long hold (holdRejects)
	sLongPark                       // on the slow list until its held refusals are written (deferRead); an idle loop does not read it early
)

// newStage builds loop l's stage from its Admission.
func newStage(l *loop, sc stageConfig) *stage {
	s := &stage{l: l, fn: sc.frame}
	p := sc.policy
	if s.fn != nil || p.Admitter == nil {
		return s
	}
	s.adm = p.Admitter
	s.lp = p.Admitter.Loop(l.id) // bound by New before the loops are built
	s.key = p.TenantKey
	if s.key == nil {
		s.key = admission.KeyByIP()
	}
	s.classify = p.Classify
	s.costBytes = p.CostBytes
	s.chargeRds = p.ChargeReadBytes
	if tl, ok := p.Admitter.Tenants().(*admission.TenantLimiter); ok && s.chargeRds {
		s.readCap = int(min(tl.Quota().Burst, math.MaxInt32))
	}
	s.shedDelay = p.Admitter.CoDel() != nil
	s.maxDelay = max(0, int64(p.MaxQueueDelay))
	s.auto = s.shedDelay && p.MaxQueueDelay == 0
	s.timed = s.auto && l.e.pool == nil
	s.rejDelay = max(0, int64(p.RejectFlushDelay))
	if p.RejectFlushDelay == 0 && (s.auto || l.e.pool != nil && l.e.pool.auto) {
		// the loop's derived shedding, or the pool's: either refuses
		// enough to make a write per refusal the loop's main cost (pool,
		// one core, 10x: 38k writes/s against 7k with it, goodput 3.14k
		// against 2.64k frames/s)
		s.rejDelay = autoRejectFlushNanos
		s.lazy[1].hold = autoRejectHoldNanos
	}
	s.lazy[0].hold = s.rejDelay
	s.lazy[1].hold = max(s.lazy[1].hold, s.rejDelay) // the long hold: the short one unless derived
	s.slowReads = s.rejDelay > 0 && (s.maxDelay > 0 || s.auto)
	s.longPark = s.slowReads && s.auto && s.lazy[1].hold > s.lazy[0].hold && s.classify == nil
	s.perConn = s.shedDelay || s.rejDelay > 0 || s.chargeRds
	if s.auto {
		s.derive()
		s.awakeAt = l.e.clock()
		s.winEnd = s.awakeAt + autoBusyNanos
		if p.Admitter.Tenants() == nil {
			s.fair = &fairShare{}
		}
	}
	s.poolShares = s.fair == nil && p.Admitter.Tenants() == nil && l.e.pool != nil && l.e.pool.fair != nil
	s.keyBuf = make([]byte, 0, maxTenantKeyBytes)
	return s
}

// The derived queueing-delay caps (AdmissionPolicy.MaxQueueDelay zero).
const (
	autoCapPerService    = 2                             // C = 2 × the average service time
	autoMinCapNanos      = int64(700 * time.Microsecond) // C's floor: turn and syscall costs dominate below it
	autoMaxCapNanos      = int64(time.Second)
	autoLongCapFactor    = 8 // L = max(8 × C, C + 2 × RejectFlushDelay)
	autoServiceShift     = 4 // the service time average weighs each frame 1/16
	autoRejectFlushNanos = int64(10 * time.Millisecond)
	// autoBusyNanos, autoBusyPerCap, autoBusyPermille and
	// autoCoolPermille: the loop judges itself overloaded (a standing
	// queue) after a window of max(100 ms, 5·C) in which it was busy — not
	// asleep in epoll_wait — at least 95% of the time, and judged so, not
	// overloaded any more only after a window busy less than 85% of it. An
	// edge-triggered loop sleeps only with every socket drained, so its
	// idle time is when its queue was empty; a loop that sheds a standing
	// load still sleeps now and then between two arrivals, which is why
	// one sleep is not the test. The gap between the two is hysteresis: a
	// shedding loop whose clients paused for a few milliseconds (measured:
	// 5–9% of one window asleep, in 2–3 ms sleeps, the generator stalling
	// while 10× its capacity stayed offered) read "not overloaded" at 95%,
	// and for the next whole window admitted frames up to the long cap L
	// while the backlog came back (p99 10–17 ms against 0.9 ms in 6 of 23
	// runs by hand).
	autoBusyNanos    = int64(100 * time.Millisecond)
	autoBusyPerCap   = 5
	autoBusyPermille = 950
	autoCoolPermille = 850
)

// How long refusals wait to be written when RejectFlushDelay is derived.
// On loopback a write carries the peer's receive path, about 7–8 µs per
// refusal written alone. At 1,000 connections each connection is refused
// once every 12–60 ms, so the 10 ms hold batched almost nothing and the
// writes of refusals crowded out the work (inline 50 µs at 5×: 6.0k
// frames/s served with a write per refusal, 9.5k with a 100 ms hold).
// Holding a refusal only pays if the peer sends more meanwhile; a peer that
// waits for its answer (one request at a time, or a window it has filled)
// is only delayed. Which one a peer is shows in a long hold: a peer that
// waits sends nothing more, and the hold ends holding one refusal, or
// having read nothing from it for its second half. It gets the short hold
// (RejectFlushDelay's 10 ms) for autoRejectProbeNanos, and then the long
// hold is tried again. A hold that gathers rejectBatchMsgs refusals is
// written at once and the next one is long again: a peer refused densely
// gets its refusals in batches of that size.
//
// The reads of a sparse connection (autoSparseNanos) whose refusals wait
// on the long hold are parked with them (deferRead), and an idle loop reads
// only the autoIdleParkReads long parks due first, so that a loop short of
// admissible frames gets connections back a few at a time. Together, by
// hand against 100 ms holds, the short hold for 5 s once a hold filled,
// and reads deferred 10 ms (3 rounds, docs/overload/sparse-park): inline
// 200 µs, 1,000 connections, 1.210× the frames served at 10× and 1.097×
// at 5× (92% of capacity in the matrix), 50 µs 5× 1.308×; the admitted
// p99 at or under, and 64 connections within 2%.
const (
	// autoRejectHoldNanos is the long hold.
	autoRejectHoldNanos = int64(500 * time.Millisecond)
	// rejectBatchMsgs ends a long hold early: it is written at once.
	rejectBatchMsgs = 16
	// autoRejectProbeNanos is how long a peer found waiting for its
	// refusals gets the short hold: a peer that waits pays one long hold
	// per this (2% of its time while it is refused).
	autoRejectProbeNanos = 50 * autoRejectHoldNanos
	// autoSparseNanos: a connection whose next rejectBatchMsgs frames take
	// at least this long at its own pace is sparse, and its reads may be
	// parked with its refusals; a dense one's window would fill meanwhile
	// (a park of the long hold on a connection sent 530 frames/s kept its
	// 64 requests in flight full for 0.35 s).
	autoSparseNanos = int64(100 * time.Millisecond)
	// autoIdleParkReads is how many long parks an idle loop reads at once.
	autoIdleParkReads = 8
)

// overloaded reports whether the last utilisation window was busy (see
// autoBusyNanos; a loop judged overloaded stays so through windows busy
// 85% of the time or more): the loop's queue (the sockets and the turn)
// has not been empty for long recently.
func (s *stage) overloaded() bool { return s.hot }

// standing reports whether a frame gets the caps of a standing queue: the
// loop is judged overloaded, or it has not slept for longer than the long
// cap L. A queue that has not been empty for longer than L is standing
// whatever the last window said, as with Facebook's adaptive LIFO (the
// short timeout once the queue has not been empty for a while): a window
// judged not overloaded because the clients paused (see autoBusyNanos) let
// frames queue up to L until the next window closed, 100 ms later. By
// hand, inline 200 µs of work, 64 connections, 10×, with the generator
// stopped three times for 25 ms: admitted p99 0.88–1.29 ms against
// 21–23 ms, 3 rounds (docs/overload/busy-period-by-hand). The reads'
// deferral (deferRead) still follows the window only.
func (s *stage) standing() bool { return s.hot || s.l.now-s.awakeAt > s.capLong }

// noteIdle is the afterWait part of the overload judgement: it adds the
// wait's sleep to the window's idle time and closes the window when due.
func (s *stage) noteIdle() {
	l := s.l
	if l.pace.slept {
		d := max(0, l.now-l.pace.turnEnd)
		s.idleNs += d
		if s.fair != nil && s.fair.allFull() {
			s.fair.idleNs += d // room the fair share left unused
		}
		s.awakeAt = l.now
	}
	if l.now < s.winEnd {
		return
	}
	w := max(autoBusyNanos, autoBusyPerCap*s.capShort)
	span := l.now - (s.winEnd - w) // the window, stretched by a long sleep at its end
	need := int64(autoBusyPermille)
	if s.hot {
		need = autoCoolPermille
	}
	s.hot = (span-s.idleNs)*1000 >= need*span
	s.idleNs, s.winEnd = 0, l.now+w
}

// derive sets the caps and the loop CoDel's target from the average
// service time: C = 2·S in [0.7 ms, 1 s], L = max(8·C, C + 2·RejectFlushDelay),
// CoDel's target C/2 (CoDel then only feeds the Admitter's overload signal;
// the caps follow overloaded).
func (s *stage) derive() {
	c := min(max(autoCapPerService*s.svcNanos, autoMinCapNanos), autoMaxCapNanos)
	s.capShort = c
	s.capLong = max(autoLongCapFactor*c, c+2*s.rejDelay)
	s.lp.SetCoDelTarget(time.Duration(c / 2))
}

// ewma folds a service time d into the average avg (weight 1/16); the
// first measurement (avg zero) is taken whole, so the caps do not start
// from the floor with a slow handler.
func ewma(avg, d int64) int64 {
	if avg == 0 {
		return max(d, 1)
	}
	return avg + (d-avg)>>autoServiceShift
}

// afterFrame is the hook after an inline handler returned (timed stages
// only): the frame's service time goes into the average, and the caps
// follow it.
func (s *stage) afterFrame() {
	t := s.l.e.clock()
	s.svcNanos = ewma(s.svcNanos, t-s.admitAt)
	s.derive()
	s.doneAt = t // the next frame of this read is admitted at this reading, not another
}

// now returns the clock for a frame's admission: the reading taken when
// the previous handler returned, if no read or wait came since (only the
// decoding of this frame did), else a fresh one.
func (s *stage) now() int64 {
	if t := s.doneAt; t != 0 {
		s.doneAt = 0
		return t
	}
	return s.l.e.clock()
}

// delayCap returns the queueing delay above which a frame of priority p is
// refused, and the reason; 0 means no cap.
func (s *stage) delayCap(p admission.Priority) (int64, admission.Reason) {
	return s.capFor(p, s.standing())
}

// capFor is delayCap with the judgement of a standing queue given: the
// caps C (standing) or L (not), or MaxQueueDelay when they are not derived.
func (s *stage) capFor(p admission.Priority, standing bool) (int64, admission.Reason) {
	if !s.auto {
		return s.maxDelay, admission.ReasonQueue
	}
	if !standing {
		return s.capLong, admission.ReasonQueue
	}
	switch p {
	case admission.PriorityCritical:
		return s.capLong, admission.ReasonCoDel
	case admission.PriorityBestEffort:
		return s.capShort / 2, admission.ReasonCoDel
	}
	return s.capShort, admission.ReasonCoDel
}

// at converts a loop clock reading to the time the admission package
// takes: the one conversion between the engine's clock and the seam's.
func (s *stage) at(nanos int64) time.Time { return s.l.e.timeAt(nanos) }

// opened gives a new connection its admission state. With queueing delay
// on, the accept counts as a draining read: bytes already waiting are
// reported by the next wait after the registration, as a fresh edge, and
// bytes a deferral or a budget leaves unread keep the accept's turn as
// their bound. (Without it, a connection's first bytes, read late off the
// slow list, took the reading turn's bound and passed as fresh after
// waiting out the deferral.)
func (s *stage) opened(c *Conn) {
	if s.perConn {
		c.adm = &connStage{}
		if s.shedDelay {
			c.adm.drainedAt, c.adm.flags = s.l.now, sFresh
		}
	}
}

// pollsFirst reports whether the loop must poll before it sleeps: a policy
// reads "the wait slept" as "woken by fresh events" (queue delay, loop
// lag), which a blocking wait after a quiet turn would not guarantee. It is
// safe on a nil stage.
func (s *stage) pollsFirst() bool { return s != nil && s.lp != nil }

// afterWait is the turn-start hook. It notes when this turn's input may
// have arrived (queueing delay), feeds loop lag and the accept queues to
// the Admitter, ticks it, makes the listener follow its gate, and moves
// the deferred connections that are due to the ready list (slow reads) and
// the dirty list (held refusals). prev is the previous turn's clock.
func (s *stage) afterWait(prev int64) {
	l := s.l
	s.doneAt = 0
	var lag int64
	if l.pace.slept {
		s.readySince = l.now // woken by this turn's events: they just arrived
	} else {
		s.readySince = prev // busy: they may have arrived any time since the last look
		lag = l.now - prev
	}
	s.evBound = s.readySince
	if l.pace.prevFull {
		s.evBound = 0 // edges from before the last wait may be reported only now
	}
	if s.slow != nil {
		s.releaseSlow()
	}
	if s.lazyDue != 0 {
		s.releaseLazy()
	}
	if s.lp == nil {
		return
	}
	if s.auto {
		s.noteIdle()
	}
	now := s.at(l.now)
	if l.pace.slept {
		s.lp.QueueEmpty(now) // the loop slept: it had no queue
	}
	s.lp.ObserveLag(now, time.Duration(lag))
	if l.now >= s.nextTick {
		s.nextTick = l.now + policyTickNanos
		s.feedBacklog()
		if _, changed := s.adm.Tick(now); changed {
			s.logGate()
		}
	}
	s.followGate()
}

// feedBacklog gives the Admitter's gate the fullest accept queue of all
// loops, as they last sampled them.
func (s *stage) feedBacklog() {
	var worstD, worstL uint32
	worst := -1.0
	for _, o := range s.l.e.loops {
		d, lim := o.pub[gAcceptDepth].Load(), o.pub[gAcceptLimit].Load()
		if lim == 0 {
			continue
		}
		if r := float64(d) / float64(lim); r > worst {
			worst, worstD, worstL = r, uint32(d), uint32(lim)
		}
	}
	if worst >= 0 {
		s.adm.Gate().Backlog(worstD, worstL)
	}
}

// followGate makes the engine's gate follow the policy's: closed or paused
// takes every loop's listener out of epoll (gateAdmission); open and
// rejecting put it back, rejecting with an explicit reject for each new
// connection.
func (s *stage) followGate() {
	l := s.l
	st := s.adm.Gate().State()
	l.lis.rejecting = st == admission.GateRejecting
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
func (s *stage) logGate() {
	g := s.adm.Gate().Stats()
	from := s.gate
	s.gate = g.State
	if lg := s.l.cfg.Logger; lg != nil && from != g.State {
		st := s.adm.Stats()
		lg.Info("sluice: admission gate", "from", from.String(), "to", g.State.String(),
			"pressure", g.Pressure, "worst", st.Worst.String(), "conns", st.Load.Conns,
			"inflight", st.Load.InflightReqs, "queued_bytes", st.Load.QueuedBytes,
			"transitions", g.Transitions)
	}
}

// acceptError feeds an accept error that paused the listener to the
// policy's gate, which pauses every loop's listener.
func (s *stage) acceptError(en errno) {
	if s.lp == nil {
		return
	}
	if _, paused := s.adm.Gate().AcceptError(s.at(s.l.now), en); paused {
		s.logGate()
		s.followGate()
	}
}

// beforeSleep is asked when the loop found nothing to do and would sleep:
// it reports true, and releases every slow connection at the next turn
// start, when some that are not parked for a byte quota or a long hold
// wait on the slow list (read them rather than sleep). Failing those, a
// loop judged overloaded reads the autoIdleParkReads long parks due first:
// it is short of connections that can bring admissible frames. Quota parks
// and, otherwise, long ones are read only when due:
// a loop with nothing else on the list sleeps until then (the timerfd
// wakes it, wakeAt). It used to report true for them too, and the loop
// spun through its turns until the quota had room: 198,169 turns in the
// 100 ms of TestChargeReadBytes's park. It is safe on a nil stage.
func (s *stage) beforeSleep() bool {
	if s == nil {
		return false
	}
	switch {
	case s.slowEarly > 0:
		s.slowNow = true
	case s.slowLong > 0 && s.overloaded():
		s.slowFirst = true // short of admissible frames: bring a few back
	default:
		return false
	}
	return true
}

// wakeAt returns when the loop must wake for the stage: while an admission
// signal is hot, every sampleNanos, so signals cool on an idle engine; and
// when the deferred connections are due.
func (s *stage) wakeAt() int64 {
	l := s.l
	next := int64(math.MaxInt64)
	if !l.draining && s.lp != nil && s.adm.Hot().Signals() != 0 {
		next = max(l.lis.nextSample, l.now+1)
	}
	if s.lazyDue != 0 {
		next = min(next, s.lazyDue)
	}
	if s.slowDue != 0 {
		next = min(next, s.slowDue)
	}
	return next
}

// publish copies the loop's load to the Admitter; it runs with every
// publish of the loop (end of turn, before sleeping).
func (s *stage) publish() {
	if s.lp == nil {
		return
	}
	l := s.l
	l.st[gDelayCap] = uint64(s.capShort)
	l.st[gServiceNanos] = uint64(s.svcNanos)
	s.lp.Load = admission.LoopLoad{
		Conns:        int64(l.nconns),
		InflightReqs: int64(l.poolInflight),
		QueuedBytes:  int64(l.bp.outBytes + l.bp.inBytes),
	}
	s.lp.Publish()
}

// countDecision counts a refusal decided outside the Admitter (a handler's
// Conn.Reject) in the Admitter's decisions.
func (s *stage) countDecision(r admission.Reason) {
	if s.lp != nil {
		s.lp.Count(r)
	}
}
