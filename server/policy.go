package server

import (
	"fmt"
	"time"

	"github.com/sluicenet/sluice/admission"
)

// AdmissionPolicy wires an admission.Admitter into the engine. The engine
// carries out what the policy decides:
//
//   - per frame, in order: global caps → tenant quota → connection queue →
//     idempotency claim (admission.Loop.Admit), then, with
//     ShedOnQueueDelay, CoDel on the frame's queueing delay; a refusal is
//     answered through the codec's Rejecter with the reason and retry-after
//     and the connection stays open;
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
// An Admitter belongs to one engine: Shutdown sets it draining (new frames
// are refused with reason "draining" while admitted ones finish) and leaves
// it so. The Admitter must have been built with at least Config.Loops loops, and
// its tenant quota and idempotency store must not block: they are called on
// the loop (the in-memory TenantLimiter and MemoryStore do not block; a
// Redis-backed limiter or store belongs in a worker, not here).
type AdmissionPolicy struct {
	// Admitter decides; nil turns the policy off.
	Admitter *admission.Admitter

	// TenantKey computes a frame's tenant key from the peer address (and,
	// through Classify, the protocol's tenant field). Nil:
	// admission.KeyByIP().
	TenantKey admission.TenantKeyFunc

	// Classify, when set, fills in what the engine cannot know about a
	// frame before admission: a protocol tenant (overwrite f.Tenant, which
	// holds the peer's key), cost, priority, idempotency key, operation and
	// payload. It runs on the loop for every frame and must not block or
	// retain frame; f's slices may alias frame.
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

	// ShedOnQueueDelay measures each frame's queueing delay on the loop —
	// from the earliest moment its bytes could have arrived unseen to its
	// dispatch — and passes it to the loop's CoDel
	// (admission.Config.CoDel must be set): while the loop has a standing
	// queue, frames that waited more than twice the target are refused
	// with reason "codel". This is what sheds for inline handlers, whose
	// queue is the socket buffers and the turn itself. The earliest
	// arrival is the later of two bounds that each hold on their own: the
	// start of the connection's last read that left its socket empty (the
	// bytes came after it), and, for a connection reported by this turn's
	// epoll_wait, the previous wait (edge-triggered readiness is reported
	// by the first wait after the bytes arrive, unless that wait filled
	// its event array); after a sleep, the wake-up. Bytes that waited in
	// a connection the loop did not get to are never counted as fresh.
	// It costs one clock read per read(2) and one per frame.
	ShedOnQueueDelay bool

	// MaxQueueDelay, with ShedOnQueueDelay, refuses a frame whose queueing
	// delay is above it whatever CoDel says (reason "queue"): CoDel judges
	// overload once per interval, and a loop that is not yet judged
	// overloaded would otherwise serve a whole interval's arrivals, however
	// late. It is the "normal" timeout of adaptive shedding, CoDel's twice
	// the target the "overloaded" one. Zero: none.
	MaxQueueDelay time.Duration

	// RejectFlushDelay lets refusals wait up to this long to be written:
	// a connection whose out-queue holds only rejects is not flushed at
	// once but with its next reply, or at the first turn that starts this
	// long after its first queued reject, or before the loop sleeps,
	// whichever comes first. A shedding loop otherwise spends a writev per
	// connection per turn on refusals (on loopback the kernel delivers to
	// the peer inside that writev), which is the capacity it is shedding
	// to protect; a reject's latency grows by at most this.
	//
	// With MaxQueueDelay set as well, a connection reported readable whose
	// bytes cannot be proven younger than MaxQueueDelay (see
	// ShedOnQueueDelay: every frame in them would be refused) is not read
	// in that turn but put on a slow list and read once RejectFlushDelay
	// has passed, or as soon as the loop has nothing else to do: a batch of
	// refusals then costs one read and one write, and the turn goes on to
	// connections whose requests can still be served in time. Its
	// arrival bound stays that of its last draining read, so waiting never
	// makes its bytes look younger. Stats.SlowReads and Stats.LazyFlushes
	// count both deferrals. Zero: rejects are written at once like any
	// reply, and every readable connection is read every turn.
	RejectFlushDelay time.Duration
}

// enabled reports whether the policy is on.
func (p *AdmissionPolicy) enabled() bool { return p.Admitter != nil }

// validate checks the policy against the engine's loop count.
func (p *AdmissionPolicy) validate(loops int) error {
	if p.Admitter == nil {
		if p.TenantKey != nil || p.Classify != nil || p.CostBytes || p.ChargeReadBytes || p.ShedOnQueueDelay || p.MaxQueueDelay != 0 || p.RejectFlushDelay != 0 {
			return fmt.Errorf("%w: Policy: options set without an Admitter", ErrInvalidConfig)
		}
		return nil
	}
	if p.MaxQueueDelay < 0 || p.MaxQueueDelay > 0 && !p.ShedOnQueueDelay {
		return fmt.Errorf("%w: Policy.MaxQueueDelay = %v: must not be negative and needs ShedOnQueueDelay", ErrInvalidConfig, p.MaxQueueDelay)
	}
	if p.ChargeReadBytes && (p.CostBytes || p.Admitter.Tenants() == nil) {
		return fmt.Errorf("%w: Policy.ChargeReadBytes needs the Admitter's tenant quota and excludes CostBytes", ErrInvalidConfig)
	}
	if p.RejectFlushDelay < 0 || p.RejectFlushDelay > time.Second {
		return fmt.Errorf("%w: Policy.RejectFlushDelay = %v: must be in [0, 1s]", ErrInvalidConfig, p.RejectFlushDelay)
	}
	if p.Admitter.Loop(loops-1) == nil {
		return fmt.Errorf("%w: Policy.Admitter has fewer loops than Loops = %d", ErrInvalidConfig, loops)
	}
	return nil
}
