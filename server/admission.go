package server

import (
	"fmt"
	"time"

	"github.com/sluicenet/sluice/admission"
)

// Admission is the engine's one admission seam (Config.Admission). The
// engine builds an admission stage on every loop from it, and the loop
// calls the stage at a few named hooks of its turn (the stage file lists
// them; the package doc says what each does). There are two
// implementations:
//
//   - AdmitFunc, a function asked about every decoded frame: the simple
//     case, a stage with the frame hook only;
//   - AdmissionPolicy, an admission.Admitter (global caps, tenant quotas,
//     the connection's queue, idempotency, CoDel) with the engine-side
//     options that need the loop: queueing delay, read charging, batched
//     refusals, the listen gate.
//
// The interface is sealed: its method is unexported, so a value from
// outside this package cannot be one. Policies plug in through
// admission.Admitter's own interfaces (TenantQuota, Store) or an AdmitFunc.
type Admission interface {
	stageConfig() stageConfig
}

// AdmitFunc is the simple Admission: it is asked about every decoded frame
// before the handler, on the loop goroutine, and must not block or
// allocate. now is the loop's clock for this turn. A Verdict with Reject
// set refuses the frame: the codec's Rejecter answers it with the reason
// and retry-after (or the connection closes with ErrRejected when the codec
// has none), the refusal is counted by reason, and the connection stays
// open.
type AdmitFunc func(c *Conn, frame []byte, now time.Time) Verdict

func (f AdmitFunc) stageConfig() stageConfig { return stageConfig{frame: f} }

// Verdict is an AdmitFunc's decision for one frame.
type Verdict struct {
	// Reject refuses the frame: OnFrame is not called.
	Reject bool
	// Reason names the refusal for the client and the counters
	// ("tenant", "global", ...; a reason that is not an admission.Reason
	// is counted as "other").
	Reason string
	// RetryAfter tells the client when trying again may succeed.
	RetryAfter time.Duration
}

// AdmissionPolicy wires an admission.Admitter into the engine. The engine
// hands the Admitter what it owns when New binds it (admission.Binding:
// Config.Loops, MaxConns and MaxQueuedBytes) and carries out what the
// policy decides:
//
//   - per frame, in order: global caps → tenant quota → connection queue →
//     idempotency claim (admission.Loop.Admit), then, when the Admitter has
//     a CoDel (admission.Config.CoDel), CoDel on the frame's queueing delay
//     and MaxQueueDelay; a refusal is answered through the codec's
//     Rejecter with the reason and retry-after and the connection stays
//     open;
//   - per turn: the loop's load (connections, requests in the worker pool,
//     queued bytes) is published, Admitter.Tick runs (it does real work at
//     most once per its SampleInterval), and the listen fd follows
//     Admitter.Gate().State() on every loop;
//   - EMFILE and ENFILE from accept4 are fed to the gate
//     (GatePolicy.AcceptError), which pauses every loop's listener;
//   - the listeners' accept-queue depth and limit (TCP_INFO) are fed to the
//     gate (GatePolicy.Backlog); in GateRejecting the loops accept and
//     answer each new connection with a reject and a close;
//   - loop lag (readiness to the end of the turn) goes to the lag signal,
//     and every flushed connection's queue to the per-connection budgets
//     (ConnBudgets.Check): a connection above its Max is closed with
//     ErrShed, one above its High stops being read until its Low.
//
// An Admitter belongs to one engine (New binds it; a second engine's New
// fails): Shutdown sets it draining (new frames are refused with reason
// "draining" while admitted ones finish) and leaves it so. Its tenant quota
// and idempotency store must not block: they are called on the loop (the
// in-memory TenantLimiter and MemoryStore do not block; a Redis-backed
// limiter or store belongs in a worker, not here).
type AdmissionPolicy struct {
	// Admitter decides; it must be set.
	Admitter *admission.Admitter

	// TenantKey computes a frame's tenant key from the peer address (and,
	// through Classify, the protocol's tenant field). Nil:
	// admission.KeyByIP().
	TenantKey admission.TenantKeyFunc

	// Classify, when set, fills in what the engine cannot know about a
	// frame before admission: a protocol tenant (overwrite f.Tenant, which
	// holds the peer's key), cost, priority, idempotency key, operation and
	// payload. It runs on the loop for every frame and must not block or
	// retain frame; f's slices may alias frame. The priority it sets also
	// orders and caps the frame in the worker pool (PoolConfig.CoDel).
	Classify func(c *Conn, frame []byte, f *admission.Frame)

	// CostBytes charges each frame's length to its tenant, in bytes,
	// instead of 1 request (the quota's units must then be bytes).
	CostBytes bool

	// ChargeReadBytes charges every read's bytes to the connection's
	// tenant as they are read, before anything is decoded (the quota's
	// units must be bytes; TenantKey is called with the peer address and
	// no frame, since no protocol tenant is known yet). When a read takes
	// the tenant past its quota, the frames decoded from it are refused
	// with reason "tenant" and the quota's retry-after, and the connection
	// is not read again until that has passed: a flood waits in its own
	// TCP window instead of being read and refused. With an in-memory
	// admission.TenantLimiter a read is capped at the quota's burst (a
	// bigger one could never pass). Frames are then not charged again at
	// admission; not together with CostBytes.
	ChargeReadBytes bool

	// MaxQueueDelay caps a frame's queueing delay on the loop. It needs the
	// Admitter's CoDel: with one, the stage measures each frame's queueing
	// delay on the loop — from the earliest moment its bytes could have
	// arrived unseen to its dispatch — which is the queue of inline
	// handlers (the socket buffers and the turn itself). The earliest
	// arrival is the later of two bounds that each hold on their own: the
	// start of the connection's last read that left its socket empty (the
	// bytes came after it), and, for a connection reported by this turn's
	// epoll_wait, the previous wait (edge-triggered readiness is reported
	// by the first wait after the bytes arrive, unless that wait filled its
	// event array); after a sleep, the wake-up. Bytes that waited in a
	// connection the loop did not get to are never counted as fresh. It
	// costs one clock read per read(2) and one per frame.
	//
	// Zero (the default) derives the cap from what the loop measures, the
	// adaptive timeout of Facebook's request queues with CoDel as its
	// detector: the loop keeps an average of its handlers' service time per
	// frame S (one more clock read per frame) and sets a short cap C =
	// 2·S, at least 0.7 ms and at most 1 s, and a long cap L = max(8·C,
	// C + 2·RejectFlushDelay). Once a window of max(100 ms, 5·C) finds the
	// loop busy (not asleep in epoll_wait) 95% of the time or more — its
	// queue has not been empty for long recently — and until a window finds
	// it busy less than 85%, a normal frame that waited more than C is
	// refused (reason "codel"), a best-effort one more than C/2, a
	// critical one more than L; otherwise any frame that waited more than
	// L is refused (reason "queue"), so a burst on an idle server is
	// served. The loop's CoDel then only observes (its target kept at
	// C/2) for the Admitter's overload signal. Without a tenant quota,
	// tenants also get max-min fair shares while the loop sheds (reason
	// "fair"). docs/OVERLOAD.md has the measurements and the reasoning.
	//
	// A positive value is a fixed cap for every frame whatever CoDel says
	// (reason "queue"); CoDel then refuses frames that waited more than
	// twice its configured target while the loop has a standing queue
	// (reason "codel"). Off: CoDel alone.
	MaxQueueDelay time.Duration

	// RejectFlushDelay lets refusals wait up to this long to be written:
	// a connection whose out-queue holds only rejects is not flushed at
	// once but with its next reply, or at the first turn that starts this
	// long after its first queued reject, whichever comes first (an idle
	// loop sleeps until then). A shedding loop otherwise spends a writev
	// per connection per turn on refusals (on loopback the kernel delivers
	// to the peer inside that writev), which is the capacity it is
	// shedding to protect; a reject's latency grows by at most this.
	//
	// With MaxQueueDelay set as well, a connection reported readable whose
	// bytes cannot be proven younger than MaxQueueDelay (every frame in
	// them would be refused) is not read in that turn but put on a slow
	// list and read once RejectFlushDelay has passed, or as soon as the
	// loop has nothing else to do: a batch of refusals then costs one read
	// and one write, and the turn goes on to connections whose requests
	// can still be served in time. Its arrival bound stays that of its
	// last draining read or, with Classify, what was proven when it was
	// deferred (the previous wait, for a fresh edge), so that a critical
	// frame is judged by its own wait; waiting never makes its bytes look
	// younger.
	// Stats.SlowReads and Stats.LazyFlushes count both deferrals. Zero:
	// derived when the queueing-delay cap is (MaxQueueDelay zero with the
	// Admitter's CoDel) or the worker pool's CoDel target is (Pool.CoDel
	// with Target zero), none otherwise. Derived, reads are deferred 10 ms
	// and refusals held 10 ms or 200 ms: at 1,000 connections a connection
	// is refused only every 12–60 ms and 10 ms batches nothing, but
	// holding a refusal from a peer that waits for it only delays the
	// peer. So a connection's batch of refusals is held 200 ms, or until
	// it gathers 16 (written at once), unless in the last 25 s a long
	// hold of its refusals ended with one refusal or with nothing read
	// from the peer in its second half (the peer waited); then 10 ms. A
	// peer that waits for each answer pays one 200 ms hold per 25 s while
	// it is refused. While refusing takes more than a tenth of a loop's
	// time, the loop rations its reads (docs/OVERLOAD.md#rationed-reads). Without Classify, the reads of a sparse connection
	// (its next 16 frames take 100 ms or more) whose refusals are held are
	// deferred with them, until 16 of its frames are due or the hold ends;
	// a loop judged overloaded that has nothing else to do reads the 8 of
	// those due first (not in io_uring's recv mode, where the recv armed
	// before such a park brings the bytes anyway). Off: rejects are
	// written at once like any reply, and every readable connection is
	// read every turn.
	RejectFlushDelay time.Duration

	// GoAwayAfter closes a connection that the loop has refused for this
	// long without admitting one of its frames, 255 of them or more in a
	// row, while the loop rations its reads: instead of another hold it
	// gets a final refusal (reason
	// "goaway", retry-after GoAwayAfter) and is closed once that is
	// written, and its tenant's (TenantKey's) new connections are refused
	// at accept with the same refusal and a close until the retry-after
	// has passed. A client that keeps sending past any share the loop can
	// give it then costs the loop an accept, a write and a close per
	// attempt instead of reads and refusals. A client that waits for each
	// answer, or is paced below its share, is not refused 255 times in a
	// row in that time; light connections are never held, and one that has
	// sent a critical frame is never closed this way
	// (docs/OVERLOAD.md#final-refusals). Zero: DefaultGoAwayAfter with
	// derived caps (MaxQueueDelay zero with the Admitter's CoDel), none
	// otherwise; Off: none.
	GoAwayAfter time.Duration
}

// Off turns off an AdmissionPolicy setting whose zero value derives it:
// MaxQueueDelay (no cap beyond CoDel's) and RejectFlushDelay (refusals are
// written at once).
const Off time.Duration = -1

func (p AdmissionPolicy) stageConfig() stageConfig { return stageConfig{policy: p} }

// stageConfig is what an Admission asks of the stage: a function per frame
// (AdmitFunc), or a policy.
type stageConfig struct {
	frame  AdmitFunc
	policy AdmissionPolicy
}

// admitter returns the policy's Admitter, or nil (no Admission, or an
// AdmitFunc).
func admitterOf(a Admission) *admission.Admitter {
	if a == nil {
		return nil
	}
	return a.stageConfig().policy.Admitter
}

// validateAdmission checks Config.Admission.
func validateAdmission(a Admission) error {
	if a == nil {
		return nil
	}
	sc := a.stageConfig()
	if sc.frame != nil {
		return nil
	}
	p := sc.policy
	bad := func(why string) error { return fmt.Errorf("%w: Admission: %s", ErrInvalidConfig, why) }
	switch {
	case p.Admitter == nil:
		return bad("AdmissionPolicy without an Admitter (use nil for no admission)")
	case p.MaxQueueDelay < 0 && p.MaxQueueDelay != Off || p.MaxQueueDelay > 0 && p.Admitter.CoDel() == nil:
		return bad(fmt.Sprintf("MaxQueueDelay = %v: must be Off, zero (derived) or positive, and a positive cap needs the Admitter's CoDel", p.MaxQueueDelay))
	case p.ChargeReadBytes && (p.CostBytes || p.Admitter.Tenants() == nil):
		return bad("ChargeReadBytes needs the Admitter's tenant quota and excludes CostBytes")
	case p.GoAwayAfter < 0 && p.GoAwayAfter != Off || p.GoAwayAfter > time.Hour:
		return bad(fmt.Sprintf("GoAwayAfter = %v: must be Off or in [0, 1h]", p.GoAwayAfter))
	case p.RejectFlushDelay < 0 && p.RejectFlushDelay != Off || p.RejectFlushDelay > time.Second:
		return bad(fmt.Sprintf("RejectFlushDelay = %v: must be Off or in [0, 1s]", p.RejectFlushDelay))
	}
	return nil
}

// AdmissionStats is the engine's admission snapshot: the refusals it
// carried out by reason, the listener's accept queue, the worker pool, and
// the Admitter's own state when an AdmissionPolicy is set.
type AdmissionStats struct {
	// Enabled reports that Config.Admission is an AdmissionPolicy.
	Enabled bool
	// Gate is the policy's listen gate (open, closed, paused, rejecting)
	// with its transitions; zero without a policy.
	Gate admission.GateStats
	// Rejects counts refused frames by reason, from the loops (policy,
	// AdmitFunc, backlog rejects, Conn.Reject) and the worker pool; index
	// ReasonNone counts refusals whose reason is not an admission reason
	// (an AdmitFunc's own words, idempotency conflicts).
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
	// RejectsByPriority counts the policy's refusals on the loops by the
	// frame's priority (AdmissionPolicy.Classify sets it; normal
	// otherwise).
	RejectsByPriority [admission.NumPriorities]uint64
	// QueueDelayCap is the derived short queueing-delay cap (the largest
	// over the loops and the worker pool) and ServiceTime the average
	// handler time per frame it derives from (see
	// AdmissionPolicy.MaxQueueDelay and PoolConfig.CoDel); zero unless a
	// cap is derived.
	QueueDelayCap, ServiceTime time.Duration
	// RefuseShare is the part of a loop's busy time its last busy window
	// spent on frames it refused (the largest over the loops), from 0 to
	// 1; past shed.RefuseSharePermille the loop rations its reads.
	// RationHolds counts the reads it held back because they brought only
	// refusals, RationPulls the held connections it read before their hold
	// ended because it had nothing else to do, and HeldConns the
	// connections held back now (see docs/OVERLOAD.md#rationed-reads). Zero
	// unless a cap is derived.
	RefuseShare float64
	RationHolds uint64
	RationPulls uint64
	HeldConns   int64
	// GoAways counts connections closed with a final refusal (reason
	// "goaway") after AdmissionPolicy.GoAwayAfter of refusals, and
	// GoAwayConns the connections refused at accept while their tenant
	// cooled after one (docs/OVERLOAD.md#final-refusals).
	GoAways, GoAwayConns uint64
	// Pool is the worker pool's state; zero without a pool.
	Pool PoolStats
	// Policy is Admitter.Stats (zero without a policy): load, pressure,
	// the signals, decisions per reason as the Admitter counted them.
	Policy admission.Stats
}

// admissionStats builds the admission part of Stats from the loops'
// summed counters.
func (e *Engine) admissionStats(sum *counters, queuedBytes int64) AdmissionStats {
	s := AdmissionStats{
		QueuedBytes:      queuedBytes,
		BacklogRejects:   sum[cBacklogRejects],
		InflightReqs:     int64(sum[gInflight]),
		AcceptQueueDepth: int64(sum[gAcceptDepth]),
		AcceptQueueLimit: int64(sum[gAcceptLimit]),
		RationHolds:      sum[cRationHolds],
		RationPulls:      sum[cRationPulls],
		GoAways:          sum[cGoAways],
		GoAwayConns:      sum[cGoAwayConns],
		HeldConns:        int64(sum[gHeldConns]),
	}
	for i := range s.Rejects {
		s.Rejects[i] = sum[cRefusedBase+i]
	}
	for i := range s.RejectsByPriority {
		s.RejectsByPriority[i] = sum[cRefusedPrioBase+i]
	}
	for _, l := range e.loops {
		s.RefuseShare = max(s.RefuseShare, float64(l.pub[gRefuseShare].Load())/1000)
		if c := time.Duration(l.pub[gDelayCap].Load()); c > s.QueueDelayCap {
			s.QueueDelayCap, s.ServiceTime = c, time.Duration(l.pub[gServiceNanos].Load())
		}
	}
	if e.pool != nil {
		if c, svc := e.pool.derived(); c > s.QueueDelayCap {
			s.QueueDelayCap, s.ServiceTime = c, svc
		}
		s.Pool = e.pool.stats()
		s.Rejects = s.Rejects.Add(s.Pool.Rejects)
	}
	s.Rejects = s.Rejects.Add(e.offRejects.Snapshot())
	if a := e.adm; a != nil {
		s.Enabled = true
		s.Policy = a.Stats()
		s.Gate = s.Policy.Gate
	}
	return s
}

// FrameClaim returns the idempotency claim the policy made for the frame
// being handled (ClaimNew: the handler runs and should Finish or Abandon
// the claim with its Token), and false when the current frame has none. It
// is valid only inside OnFrame, on the loop.
func (c *Conn) FrameClaim() (admission.Claim, bool) {
	l := c.loop
	if !l.onLoop() {
		return admission.Claim{}, false
	}
	return l.shed.frameClaim(c)
}
