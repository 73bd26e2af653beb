package server

import (
	"math"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/admission/shed"
)

// The admission stage: the shedder (shedder.go) of a loop with
// Config.Admission. It asks the policy (an AdmitFunc, or the Admitter with
// the law of package admission/shed) and keeps what carrying out its
// answers takes on one loop: the arrival bounds of the frames being
// dispatched, the connections whose reads are deferred (the slow list) and
// those whose refusals are held back (the lazy lists), and each
// connection's admission state, by fd. It reads the loop only through its
// turnView and acts on connections only through stageLoop.

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
	v   *turnView    // the loop's turn, read only
	act stageLoop    // the loop's mechanism
	e   *Engine      // the engine's clock, gate and loops
	st  *counters    // the loop's counters, for the stage's own
	fn  AdmitFunc    // the AdmitFunc; nil with a policy
	cs  []*connStage // by fd: the admission state of the connection open on it (of)

	adm         *admission.Admitter // the policy's; nil with an AdmitFunc
	lp          *admission.Loop
	key         admission.TenantKeyFunc
	classify    func(*Conn, []byte, *admission.Frame)
	costBytes   bool
	chargeRds   bool  // ChargeReadBytes
	maxRead     int   // ChargeReadBytes: largest read the quota can ever admit (0: unknown)
	shedDelay   bool  // the Admitter has a CoDel: measure queueing delay
	maxDelay    int64 // MaxQueueDelay in ns; 0: none (or derived, with auto)
	rejDelay    int64 // RejectFlushDelay in ns; 0: rejects are flushed like replies
	slowReads   bool  // RejectFlushDelay and a cap: defer reads whose frames would all be refused
	longPark    bool  // auto, the long hold, no Classify: a deferred read may wait for its connection's held refusals (deferRead)
	perConn     bool  // connections carry connStage state
	poolShares  bool  // the worker pool shares what it serves by tenant (poolSlot): it keeps shares (derived target), no tenant quota, no loop shares
	auto        bool  // the queueing-delay caps are derived (MaxQueueDelay zero with CoDel)
	rations     bool  // auto, or the worker pool's law derived: the loop judges its busy windows and rations what refusing costs (stage_ration.go)
	timed       bool  // auto with inline handlers: time each handler call (afterFrame)
	relBytes    int64 // what the reads that end a ration's hold may bring (rationRead)
	goAwayAfter int64 // auto: AdmissionPolicy.GoAwayAfter in ns; 0: no final refusals (goaway.go)

	caps   shed.Caps   // auto: the service time and the caps C and L derived from it
	busy   shed.Busy   // auto: the overload judgement
	fair   *shed.Fair  // auto without a tenant quota: max-min shares while overloaded
	ration shed.Ration // auto: what refusing costs the loop, and the rationed reads' hold
	rd     readAccount // auto: the read being dispatched, for ration
	// kernel is recv mode's part of refusing that no read times: the
	// turn's non-blocking wait, where the kernel received and sent its
	// bytes (io_uring_enter), charged at the turn's end in the share of
	// its frames refused since rej0 and frames0 (chargeKernel)
	kernel        int64
	rej0, frames0 uint64
	held          heldList // auto: connections not read while the loop rations (rationRead); an idle loop reads them early
	barren        heldList // auto: the same, barren ones (connStage.barren): read only when due
	// barrenWindow: a barren connection was held or released in the
	// current busy window (the ration goes on while it holds barren
	// connections: shed.Ration's holding)
	barrenWindow bool
	light        lightCount // auto: the connections that sent frames, window by window, and the pace that makes one light
	admitAt      int64      // auto: clock at the last admission, start of the handler's time
	doneAt       int64      // timed: clock when the last handler returned, the next admission's now; 0 once used, or after a read or a wait

	frame  admission.Frame
	keyBuf []byte
	claim  *Conn // the connection whose frame holds frame.Claim during OnFrame

	readySince int64 // earliest arrival of the bytes this turn's events report (loop clock)
	evBound    int64 // readySince, or 0 when the previous wait filled its array
	since      int64 // earliest arrival of the frames being dispatched (queueing delay)
	readOver   bool  // the bytes being dispatched took their tenant past its quota
	readRetry  time.Duration

	lazy      [2]lazyList // reject-only out-queues held back (holdRejects): the short hold, the long one
	slow      *connStage  // connections not read until slowAt (beforeRead, readEnd)
	lazyDue   int64       // earliest due time on the lazy lists (0: none); the timerfd wakes the loop for it
	slowDue   int64       // the same for the slow list
	slowNow   bool        // the loop had nothing else to do: release every slow connection
	slowEarly int32       // connections on the slow list that an idle loop reads at once (all but quota and long parks)
	slowLong  int32       // long parks on the slow list (sLongPark): an idle loop reads the shed.IdleParkReads due first
	slowFirst bool        // the loop, judged overloaded, had nothing else to do and no slowEarly: release the long parks due first
	nextTick  int64
	gate      admission.GateState // the gate state last logged
}

// connStage is the admission state of one connection, allocated only when
// the stage needs it (queueing delay, batched refusals, read charging).
// The lists link these, not connections: a closed connection's state may
// stay on a list until its turn comes, while a newer connection on its fd
// has a state of its own.
type connStage struct {
	c            *Conn
	flags        stageFlag
	lazyQ        uint8     // which lazy list it is on: index into stage.lazy
	rejHeld      int32     // the refusals in its reject-only out-queue
	drainedAt    int64     // start of the last read that left the socket empty, with nothing held back; the accept's turn at first (opened)
	rejAt        int64     // when the first reject of a reject-only out-queue was queued
	waitsUntil   int64     // until then its refusals get the short hold: the peer waited for them
	lazyAt       int64     // the turn that put it on its lazy list
	slowAt       int64     // when a connection on the slow list is read
	heldUntil    int64     // when a rationed connection is read again (sRationed)
	relLeft      int64     // bytes the reads ending its hold may still bring (sReleased: rationRead)
	refusedSince int64     // auto: when the first of the frames refusedRun counts was refused (0: none); goAwayDue
	pace         shed.Pace // auto or long parks: its time between frames, sparse or dense, light or not
	window       uint32    // auto: the busy window in which it last sent a frame (lightCount)
	slot         uint8     // auto: its tenant's slot (shed.Slot of its peer's key), for lightCount
	refusedRun   uint8     // auto: its frames refused for an admission reason since one was admitted (saturating; lightConn)
	barren       bool      // auto: the reads that ended its last hold brought the release budget and left bytes behind, and nothing of it was admitted since (hold)
	critical     bool      // it sent a critical frame (Classify): the ration's holds stay short for it (hold)
	prevLazy     *connStage
	nextLazy     *connStage
	nextSlow     *connStage
	nextHeld     *connStage
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
	sRationed                       // not read until heldUntil: its reads brought only refusals while the loop rations (rationRead)
	sReleased                       // its hold just ended: the next read may refuse everything without a new hold, and its refusals go out at once
)

// newStage builds loop l's stage from its Admission.
func newStage(l *loop, sc stageConfig) *stage {
	s := &stage{v: &l.turnView, act: l, e: l.e, st: &l.st, fn: sc.frame}
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
	s.relBytes = int64(releaseBudget * l.cfg.ReadBudgetBytes)
	s.costBytes = p.CostBytes
	s.chargeRds = p.ChargeReadBytes
	if tl, ok := p.Admitter.Tenants().(*admission.TenantLimiter); ok && s.chargeRds {
		s.maxRead = int(min(tl.Quota().Burst, math.MaxInt32))
	}
	s.shedDelay = p.Admitter.CoDel() != nil
	s.maxDelay = max(0, int64(p.MaxQueueDelay))
	s.auto = s.shedDelay && p.MaxQueueDelay == 0
	s.timed = s.auto && s.e.pool == nil
	s.rejDelay = max(0, int64(p.RejectFlushDelay))
	if p.RejectFlushDelay == 0 && (s.auto || s.e.pool != nil && s.e.pool.auto) {
		// derived shedding, the loop's or the pool's, refuses enough that a
		// write per refusal would be the loop's main cost
		// (docs/OVERLOAD.md#held-refusals-and-parked-reads)
		s.rejDelay = shed.DerivedRejectFlush
		s.lazy[1].hold = shed.LongHold
	}
	s.lazy[0].hold = s.rejDelay
	s.lazy[1].hold = max(s.lazy[1].hold, s.rejDelay) // the long hold: the short one unless derived
	s.slowReads = s.rejDelay > 0 && (s.maxDelay > 0 || s.auto)
	s.rations = s.auto || s.e.pool != nil && s.e.pool.auto
	s.longPark = s.slowReads && s.auto && s.lazy[1].hold > s.lazy[0].hold && s.classify == nil
	s.perConn = s.shedDelay || s.rejDelay > 0 || s.chargeRds
	if s.rations {
		s.busy = shed.NewBusy(s.e.clock())
	}
	if s.auto {
		switch {
		case p.GoAwayAfter == 0:
			s.goAwayAfter = int64(DefaultGoAwayAfter)
		case p.GoAwayAfter > 0:
			s.goAwayAfter = int64(p.GoAwayAfter)
		}
		s.caps = shed.NewCaps(shed.LoopMinCap, s.rejDelay)
		s.lp.SetCoDelTarget(s.caps.Target())
		s.light.window = 1 // a new connection's zero is no window
		if p.Admitter.Tenants() == nil {
			s.fair = &shed.Fair{}
		}
	}
	s.poolShares = s.fair == nil && p.Admitter.Tenants() == nil && s.e.pool != nil && s.e.pool.fair != nil
	s.keyBuf = make([]byte, 0, maxTenantKeyBytes)
	return s
}

// parksLong reports whether a deferred read may wait for its
// connection's held refusals (a long park). Not in recv mode, where a recv
// armed before a park brings the connection's bytes anyway: a long park
// saves no read there and only ages the frames it holds
// (docs/OVERLOAD.md#held-refusals-and-parked-reads).
func (s *stage) parksLong() bool { return s.longPark && !s.v.recvMode }

// of returns c's admission state, or nil when the stage keeps none for it.
func (s *stage) of(c *Conn) *connStage {
	if fd := int(c.fd); fd >= 0 && fd < len(s.cs) {
		if a := s.cs[fd]; a != nil && a.c == c {
			return a
		}
	}
	return nil
}

// track gives c the admission state a, replacing whatever an earlier
// connection on its fd left.
func (s *stage) track(c *Conn, a *connStage) {
	fd := int(c.fd)
	if fd >= len(s.cs) {
		grown := make([]*connStage, max(64, 2*len(s.cs), fd+1))
		copy(grown, s.cs)
		s.cs = grown
	}
	a.c = c
	s.cs[fd] = a
}

// overloaded reports the loop's overload judgement (shed.Busy): its queue
// (the sockets and the turn) has not been empty for long recently.
func (s *stage) overloaded() bool { return s.busy.Overloaded() }

// standing reports whether a frame gets the caps of a standing queue
// (shed.Busy.Standing). The reads' deferral (deferRead) follows the
// window's judgement only.
func (s *stage) standing() bool { return s.busy.Standing(s.v.now, s.caps.Long()) }

// noteIdle is the afterWait part of the overload judgement: the wait's
// sleep goes into the window (and, with every limited tenant at its fair
// share, into the room the share left), and the window closes when due.
func (s *stage) noteIdle() {
	if s.v.slept {
		d := max(0, s.v.now-s.v.turnEnd)
		s.busy.Slept(s.v.now, d)
		if s.fair != nil && (s.fair.AllFull() || s.barren.n > 0) {
			// room the share left, or the loop's only waiting work is
			// barren connections' stale frames: room either way
			s.fair.AddIdle(d)
		}
	}
	if busy, closed := s.busy.Judge(s.v.now, s.caps.Short()); closed {
		s.ration.Judge(busy, s.busy.Overloaded(), s.barren.n > 0 || s.barrenWindow)
		s.barrenWindow = false
		s.countHeld()
		s.light.roll(s.v.now, s.caps.Service())
		s.st[gRefuseShare] = uint64(s.ration.Share())
	}
}

// afterFrame is the hook after an inline handler returned (timed stages
// only): the frame's service time goes into the average, and the caps and
// the loop CoDel's target (C/2, so that CoDel only feeds the Admitter's
// overload signal; the caps decide) follow it.
func (s *stage) afterFrame() {
	t := s.e.clock()
	s.caps.Observe(t - s.admitAt)
	s.rd.serve += t - s.admitAt // the open read's handler time (rationRead)
	s.lp.SetCoDelTarget(s.caps.Target())
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
	return s.e.clock()
}

// delayCap returns the queueing delay above which a frame of priority p
// from c is refused, and the reason; 0 means no cap. A light connection's
// normal frames get L (docs/OVERLOAD.md#light-connections).
func (s *stage) delayCap(c *Conn, p admission.Priority) (int64, admission.Reason) {
	limit, r := s.capFor(p, s.standing())
	if s.auto && p == admission.PriorityNormal && limit < s.caps.Long() && s.isLight(c) {
		limit = s.caps.Long()
	}
	return limit, r
}

// capFor is delayCap with the judgement of a standing queue given: the
// caps C (standing) or L (not), or MaxQueueDelay when they are not derived.
func (s *stage) capFor(p admission.Priority, standing bool) (int64, admission.Reason) {
	if !s.auto {
		return s.maxDelay, admission.ReasonQueue
	}
	return s.caps.For(p, standing)
}

// at converts a loop clock reading to the time the admission package
// takes: the one conversion between the engine's clock and the seam's.
func (s *stage) at(nanos int64) time.Time { return s.e.timeAt(nanos) }

// opened gives a new connection its admission state. With queueing delay
// on, the accept counts as a draining read: bytes already waiting are
// reported by the next wait after the registration, as a fresh edge, and
// bytes a deferral or a budget leaves unread keep the accept's turn as
// their bound. (Without it, a connection's first bytes, read late off the
// slow list, took the reading turn's bound and passed as fresh after
// waiting out the deferral.)
func (s *stage) opened(c *Conn) {
	if s.perConn {
		a := &connStage{}
		if s.shedDelay {
			a.drainedAt, a.flags = s.v.now, sFresh
		}
		if s.auto {
			a.slot = uint8(shed.Slot(s.key(s.keyBuf[:0], c.remote, nil)))
		}
		s.track(c, a)
	}
}

// afterWait is the turn-start hook. It notes when this turn's input may
// have arrived (queueing delay), feeds loop lag and the accept queues to
// the Admitter, ticks it, makes the listener follow its gate, and moves
// the deferred connections that are due to the ready list (slow reads) and
// the dirty list (held refusals). prev is the previous turn's clock.
func (s *stage) afterWait(prev int64) {
	s.doneAt = 0
	var lag int64
	if s.v.slept {
		s.readySince = s.v.now // woken by this turn's events: they just arrived
	} else {
		s.readySince = prev // busy: they may have arrived any time since the last look
		lag = s.v.now - prev
	}
	s.evBound = s.readySince
	if s.v.prevFull {
		s.evBound = 0 // edges from before the last wait may be reported only now
	}
	if s.slow != nil {
		s.releaseSlow()
	}
	if s.lazyDue != 0 {
		s.releaseLazy()
	}
	if s.held.head != nil || s.barren.head != nil {
		s.releaseHeld()
	}
	if s.lp == nil {
		return
	}
	if s.rations {
		s.noteIdle()
		if s.v.recvMode {
			s.kernel, s.rej0, s.frames0 = 0, s.st[cRejects], s.st[cFrames]
			if !s.v.slept {
				s.kernel = s.v.now - s.v.turnEnd
			}
		}
	}
	now := s.at(s.v.now)
	if s.v.slept {
		s.lp.QueueEmpty(now) // the loop slept: it had no queue
	}
	s.lp.ObserveLag(now, time.Duration(lag))
	if s.v.now >= s.nextTick {
		s.nextTick = s.v.now + policyTickNanos
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
	if d, lim, ok := s.e.worstBacklog(); ok {
		s.adm.Gate().Backlog(d, lim)
	}
}

// followGate makes the engine's gate follow the policy's: closed or paused
// takes every loop's listener out of epoll (gateAdmission); open and
// rejecting put it back, rejecting with an explicit reject for each new
// connection.
func (s *stage) followGate() {
	st := s.adm.Gate().State()
	s.e.rejecting.Store(st == admission.GateRejecting)
	closed := !st.Listening()
	if held := s.e.gate.Load()&gateAdmission != 0; closed != held {
		if closed {
			s.e.pauseAccept(gateAdmission)
		} else {
			s.e.resumeAccept(gateAdmission)
		}
	}
}

// logGate logs a policy gate transition this loop's Tick (or accept error)
// caused: once per transition, with the pressure behind it.
func (s *stage) logGate() {
	g := s.adm.Gate().Stats()
	from := s.gate
	s.gate = g.State
	if lg := s.e.cfg.Logger; lg != nil && from != g.State {
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
	if _, paused := s.adm.Gate().AcceptError(s.at(s.v.now), en); paused {
		s.logGate()
		s.followGate()
	}
}

// idle is asked when the loop found nothing to do and would sleep:
// it reports true, and releases every slow connection at the next turn
// start, when some that are not parked for a byte quota or a long hold
// wait on the slow list (read them rather than sleep). Failing those, a
// loop judged overloaded reads the shed.IdleParkReads long parks due first:
// it is short of connections that can bring admissible frames. Quota parks
// and, otherwise, long ones are read only when due:
// a loop with nothing else on the list sleeps until then (the timerfd
// wakes it, turnEnd) rather than spin through empty turns.
func (s *stage) idle() bool {
	switch {
	case s.held.head != nil:
		s.held.now = true // rationing is for a loop short of time: this one has some
	case s.slowEarly > 0:
		s.slowNow = true
	case s.slowLong > 0 && s.overloaded():
		s.slowFirst = true // short of admissible frames: bring a few back
	default:
		return false
	}
	return true
}

// turnEnd publishes the loop's load to the Admitter and returns when the
// loop must wake for the stage: while an admission signal is hot, at the
// next accept-queue sample (sampleAt), so signals cool on an idle engine;
// and when the deferred connections are due.
func (s *stage) turnEnd(load admission.LoopLoad, sampleAt int64) int64 {
	next := int64(math.MaxInt64)
	if s.kernel > 0 {
		s.chargeKernel()
	}
	if s.lp != nil {
		s.st[gDelayCap] = uint64(s.caps.Short())
		s.st[gServiceNanos] = uint64(s.caps.Service())
		s.lp.Load = load
		s.lp.Publish()
		if !s.v.draining && s.adm.Hot().Signals() != 0 {
			next = max(sampleAt, s.v.now+1)
		}
	}
	if s.lazyDue != 0 {
		next = min(next, s.lazyDue)
	}
	if s.slowDue != 0 {
		next = min(next, s.slowDue)
	}
	next = min(next, s.held.due(), s.barren.due())
	s.st[gHeldConns] = uint64(s.held.n + s.barren.n)
	return next
}

// chargeKernel charges the ration with the refused frames' share of the
// turn's wait in recv mode: the kernel's receives and sends, which happen
// in io_uring_enter and which no read's clock sees (read(2) mode times
// its reads), so that refusing in recv mode costs what it costs
// (docs/OVERLOAD.md#rationed-reads).
func (s *stage) chargeKernel() {
	rej := s.st[cRejects] - s.rej0
	if frames := max(s.st[cFrames]-s.frames0, rej); rej > 0 {
		s.ration.Refused(s.kernel * int64(rej) / int64(frames))
	}
	s.kernel = 0
}

// countDecision counts a refusal decided outside the Admitter (a handler's
// Conn.Reject) in the Admitter's decisions.
func (s *stage) countDecision(r admission.Reason) {
	if s.lp != nil {
		s.lp.Count(r)
	}
}
