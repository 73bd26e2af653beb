package admission

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Reason says why a unit of work was refused. The zero value, ReasonNone,
// means the work was admitted. Every refusal carries exactly one reason, and
// the client sees it in the protocol-level reject.
type Reason uint8

// The reject reasons, in no particular order of severity.
const (
	// ReasonNone marks an admitted request.
	ReasonNone Reason = iota
	// ReasonGlobal: a global budget (in-flight requests, queued bytes) is at
	// its cap.
	ReasonGlobal
	// ReasonTenant: the tenant's quota is spent; RetryAfter is exact.
	ReasonTenant
	// ReasonConcurrency: the class's concurrency limit (bulkhead) is full.
	ReasonConcurrency
	// ReasonQueue: the connection's own queue (pipelined requests) is full.
	ReasonQueue
	// ReasonCoDel: the request waited too long in an overloaded queue.
	ReasonCoDel
	// ReasonCPU: the process is CPU-saturated and the work is best-effort.
	ReasonCPU
	// ReasonMemory: the Go heap is above its high watermark.
	ReasonMemory
	// ReasonDraining: the server is shutting down gracefully.
	ReasonDraining
	// ReasonFair: the queue is overloaded and the tenant has had more
	// than its share of what was admitted recently (no quota configured).
	ReasonFair
	// ReasonGoAway: the connection kept sending while the server refused
	// it for a long time; the server closes it after this last refusal and
	// refuses the tenant's new connections until RetryAfter has passed
	// (the server package's AdmissionPolicy.GoAwayAfter).
	ReasonGoAway

	// NumReasons is the number of reasons including ReasonNone; arrays
	// indexed by Reason have this length.
	NumReasons
)

var reasonNames = [NumReasons]string{
	ReasonNone:        "none",
	ReasonGlobal:      "global",
	ReasonTenant:      "tenant",
	ReasonConcurrency: "concurrency",
	ReasonQueue:       "queue",
	ReasonCoDel:       "codel",
	ReasonCPU:         "cpu",
	ReasonMemory:      "memory",
	ReasonDraining:    "draining",
	ReasonFair:        "fair",
	ReasonGoAway:      "goaway",
}

// String returns the reason's lower-case name as used in metrics labels and
// reject messages ("tenant", "codel", ...).
func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// ParseReason returns the Reason whose String is s, or ErrUnknownReason.
func ParseReason(s string) (Reason, error) {
	for i, n := range reasonNames {
		if n == s {
			return Reason(i), nil
		}
	}
	return ReasonNone, fmt.Errorf("%w: %q", ErrUnknownReason, s)
}

// HTTPStatus returns the HTTP status a codec should send for a refusal with
// this reason: 429 Too Many Requests when the client itself exceeded its
// quota (tenant) or kept sending while refused (goaway), 503 Service
// Unavailable when the server is overloaded, and 200 for ReasonNone.
func (r Reason) HTTPStatus() int {
	switch r {
	case ReasonNone:
		return 200
	case ReasonTenant, ReasonGoAway:
		return 429
	default:
		return 503
	}
}

// Verdict is the answer to one admission question. Admit reports whether the
// work may proceed; when it may not, Reason says why and RetryAfter says
// when the client should try again (0: no useful hint). The zero value
// refuses with ReasonNone and should not be used; use Admitted or Reject.
type Verdict struct {
	Admit      bool
	Reason     Reason
	RetryAfter time.Duration
}

// Admitted returns the Verdict that admits work.
func Admitted() Verdict { return Verdict{Admit: true} }

// Reject returns a refusal with reason r and retry-after hint d.
func Reject(r Reason, d time.Duration) Verdict {
	return Verdict{Reason: r, RetryAfter: d}
}

// RejectCounts is a snapshot of refusals per reason, indexed by Reason.
// Index ReasonNone counts admitted work where the counter tracks it.
type RejectCounts [NumReasons]uint64

// Total returns the number of refusals (every index but ReasonNone).
func (c RejectCounts) Total() uint64 {
	var t uint64
	for r := ReasonNone + 1; r < NumReasons; r++ {
		t += c[r]
	}
	return t
}

// Add returns the element-wise sum of c and o.
func (c RejectCounts) Add(o RejectCounts) RejectCounts {
	for i := range c {
		c[i] += o[i]
	}
	return c
}

// RejectCounters counts refusals per reason. It is safe for concurrent use,
// but it is meant to be owned by one writer (one loop) and summed by readers,
// so the counters' cache line is not bounced between cores per message. The
// zero value is ready to use.
type RejectCounters struct {
	n [NumReasons]atomic.Uint64
	_ [64]byte // keep neighbouring per-loop counters off this cache line
}

// Inc counts one refusal (or, for ReasonNone, one admission).
func (c *RejectCounters) Inc(r Reason) {
	if r < NumReasons {
		c.n[r].Add(1)
	}
}

// Snapshot returns the current counts.
func (c *RejectCounters) Snapshot() RejectCounts {
	var s RejectCounts
	for i := range s {
		s[i] = c.n[i].Load()
	}
	return s
}
