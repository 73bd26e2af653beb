package server

import (
	"math"
	"net/netip"
	"time"

	"github.com/sluicenet/sluice/admission"
)

// shedder is the loop's one seam to admission: the loop calls it at these
// moments of a turn and carries out its answers. The admission stage
// (stage.go) implements it when Config.Admission is set; otherwise the
// loop has noShed, which admits everything and defers nothing, so the
// mechanism files never check for a policy. The stage reads the loop
// only through its turnView and acts only through stageLoop. The law it
// applies lives in package admission/shed (docs/OVERLOAD.md#the-law).
type shedder interface {
	// The turn.

	// afterWait starts a turn: arrival bounds, loop lag, the Admitter's
	// tick and gate, and the deferred connections that are due.
	afterWait(prev int64)
	// idle is asked when the loop would sleep: true means it has deferred
	// reads to do instead.
	idle() bool
	// turnEnd ends a turn: it publishes the loop's load and returns when
	// the timerfd must wake the loop for the stage (math.MaxInt64: never).
	// sampleAt is the loop's next accept-queue sample.
	turnEnd(load admission.LoopLoad, sampleAt int64) int64

	// Connections.

	// opened gives a new connection its admission state.
	opened(c *Conn)
	// cooling returns how long peer's tenant is still refused at accept
	// after a final refusal (0: not).
	cooling(peer netip.AddrPort) time.Duration
	// acceptError feeds an accept error that paused the listener (EMFILE)
	// to the policy's gate.
	acceptError(en errno)

	// Reads.

	// beforeRead reports whether c may be read now; edge: this turn's
	// events reported it.
	beforeRead(c *Conn, edge bool) bool
	// readCap is the most one read may take (a tenant's byte quota), or 0.
	readCap() int
	// readStart runs before each read (in recv mode, with each
	// completion: edge then means c held no earlier bytes) and returns a
	// clock reading for readEnd, or 0.
	readStart(c *Conn, edge bool) int64
	// readBytes charges the n bytes just read to c's tenant, before they
	// are decoded.
	readBytes(c *Conn, n int)
	// readEnd runs after the read's frames were dispatched: drained
	// reports that it left the socket empty.
	readEnd(c *Conn, t0 int64, drained bool)

	// Frames.

	// admitFrame decides one decoded frame: false means it was refused and
	// answered (or replayed).
	admitFrame(c *Conn, frame []byte) bool
	// admitted returns what the worker pool needs of the frame just
	// admitted: its priority, its idempotency claim (taken), and its
	// tenant's fair-share slot (-1: none).
	admitted(c *Conn) (admission.Priority, *poolClaim, int)
	// handled runs after an inline handler returned; true: the turn has
	// spent its time for inline work, c's further frames wait for the
	// next turn.
	handled(c *Conn) bool
	// frameClaim returns the claim of the frame c is handling (OnFrame).
	frameClaim(c *Conn) (admission.Claim, bool)

	// Output.

	// rejectQueued runs when a refusal left c's out-queue holding only
	// refusals (held: it did before).
	rejectQueued(c *Conn, held bool)
	// holdRejects is asked before flushing an out-queue that holds only
	// refusals: true holds it back.
	holdRejects(c *Conn) bool
	// refusalsWritten charges d nanoseconds spent writing an out-queue
	// that held only refusals to what refusing costs the loop.
	refusalsWritten(d int64)
	// afterFlush applies the policy's per-connection budgets after a flush:
	// true means c was closed.
	afterFlush(c *Conn) bool
	// mayResume reports whether a paused c may read again.
	mayResume(c *Conn) bool
	// countDecision counts a refusal decided outside the policy (a
	// handler's Conn.Reject).
	countDecision(r admission.Reason)
}

// stageLoop is what the admission stage may do to its loop's connections
// beyond their own methods (a replayed reply is a Conn.writeCopy, a paused
// read a Conn.pauseRead): the
// mechanism that carries out its answers (the loop implements it).
type stageLoop interface {
	ready(c *Conn, f connFlag)
	markDirty(c *Conn)
	answerReject(c *Conn, frame []byte, reason string, retryAfter time.Duration)
	closeNow(c *Conn, cause error)
	requestClose(c *Conn, cause error)
}

// noShed is the shedder of a loop without Config.Admission.
type noShed struct{}

func (noShed) afterWait(int64)                          {}
func (noShed) idle() bool                               { return false }
func (noShed) turnEnd(admission.LoopLoad, int64) int64  { return math.MaxInt64 }
func (noShed) opened(*Conn)                             {}
func (noShed) acceptError(errno)                        {}
func (noShed) cooling(netip.AddrPort) time.Duration     { return 0 }
func (noShed) beforeRead(*Conn, bool) bool              { return true }
func (noShed) readCap() int                             { return 0 }
func (noShed) readStart(*Conn, bool) int64              { return 0 }
func (noShed) readBytes(*Conn, int)                     {}
func (noShed) readEnd(*Conn, int64, bool)               {}
func (noShed) admitFrame(*Conn, []byte) bool            { return true }
func (noShed) handled(*Conn) bool                       { return false }
func (noShed) frameClaim(*Conn) (admission.Claim, bool) { return admission.Claim{}, false }
func (noShed) rejectQueued(*Conn, bool)                 {}
func (noShed) holdRejects(*Conn) bool                   { return false }
func (noShed) afterFlush(*Conn) bool                    { return false }
func (noShed) refusalsWritten(int64)                    {}
func (noShed) mayResume(*Conn) bool                     { return true }
func (noShed) countDecision(admission.Reason)           {}
func (noShed) admitted(*Conn) (admission.Priority, *poolClaim, int) {
	return admission.PriorityNormal, nil, -1
}
