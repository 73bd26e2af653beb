package admission

import (
	"fmt"
	"math"
	"runtime/debug"
)

// Resource names a global budget.
type Resource uint8

// The global budgets whose pressure drives the listen gate.
const (
	// ResourceNone: no budget is configured or none is under pressure.
	ResourceNone Resource = iota
	// ResourceConns: open connections.
	ResourceConns
	// ResourceInflight: requests admitted and not yet answered.
	ResourceInflight
	// ResourceQueuedBytes: bytes buffered inbound plus queued outbound, all
	// connections.
	ResourceQueuedBytes
	// ResourceMemory: Go runtime memory against the memory limit.
	ResourceMemory
	numResources
)

var resourceNames = [numResources]string{"none", "conns", "inflight", "queued_bytes", "memory"}

// String returns the budget's metrics-label name.
func (r Resource) String() string {
	if r < numResources {
		return resourceNames[r]
	}
	return fmt.Sprintf("resource(%d)", uint8(r))
}

// GlobalBudgets are the process-wide hard caps. A zero field disables that
// budget. Pressure is each budget's usage divided by its cap, so 1.0 means
// "at the cap"; the listen gate closes at the gate watermark's High, which
// should sit below 1 so that the cap is rarely reached.
type GlobalBudgets struct {
	// MaxConns caps open connections.
	MaxConns int64
	// MaxInflightReqs caps requests admitted and not yet answered.
	MaxInflightReqs int64
	// MaxQueuedBytes caps bytes buffered inbound plus queued outbound over
	// all connections.
	MaxQueuedBytes int64
	// MemoryLimitBytes caps Go runtime memory (as the GC counts it against
	// GOMEMLIMIT: total mapped minus released heap). Zero means "use
	// GOMEMLIMIT when it is set"; negative disables the memory budget.
	MemoryLimitBytes int64
}

// Validate rejects negative caps (other than MemoryLimitBytes, where
// negative means disabled).
func (b GlobalBudgets) Validate() error {
	if b.MaxConns < 0 || b.MaxInflightReqs < 0 || b.MaxQueuedBytes < 0 {
		return fmt.Errorf("%w: negative global budget %+v", ErrBadConfig, b)
	}
	return nil
}

// ResolveMemoryLimit returns the memory cap in bytes that b implies: the
// configured value, or the runtime's GOMEMLIMIT when the field is zero and a
// limit is set, or 0 (no memory budget).
func (b GlobalBudgets) ResolveMemoryLimit() int64 {
	switch {
	case b.MemoryLimitBytes > 0:
		return b.MemoryLimitBytes
	case b.MemoryLimitBytes < 0:
		return 0
	}
	if lim := debug.SetMemoryLimit(-1); lim > 0 && lim != math.MaxInt64 {
		return lim
	}
	return 0
}

// Load is the current usage of the global budgets, as summed over loops.
type Load struct {
	Conns        int64
	InflightReqs int64
	QueuedBytes  int64
	MemoryBytes  int64
}

// Pressure returns the maximum normalised pressure over the configured
// budgets (usage/cap, 0 when no budget is set) and the budget that has it.
// memLimit is the resolved memory cap (ResolveMemoryLimit), 0 for none.
func (b GlobalBudgets) Pressure(l Load, memLimit int64) (float64, Resource) {
	p, worst := 0.0, ResourceNone
	consider := func(used, limit int64, r Resource) {
		if limit <= 0 {
			return
		}
		if q := float64(used) / float64(limit); q > p {
			p, worst = q, r
		}
	}
	consider(l.Conns, b.MaxConns, ResourceConns)
	consider(l.InflightReqs, b.MaxInflightReqs, ResourceInflight)
	consider(l.QueuedBytes, b.MaxQueuedBytes, ResourceQueuedBytes)
	consider(l.MemoryBytes, memLimit, ResourceMemory)
	return p, worst
}

// AtCap reports whether a per-request global cap (in-flight requests or
// queued bytes) is reached, which refuses new frames with ReasonGlobal.
// Connections are not included: they are governed by the gate.
func (b GlobalBudgets) AtCap(l Load) bool {
	return (b.MaxInflightReqs > 0 && l.InflightReqs >= b.MaxInflightReqs) ||
		(b.MaxQueuedBytes > 0 && l.QueuedBytes >= b.MaxQueuedBytes)
}

// Budget is a per-connection budget in one unit (bytes or messages): at High
// the engine stops reading the connection (its TCP window closes), at Low it
// resumes, and at Max the connection has broken its budget and is closed. A
// zero field disables that threshold. The gap between High and Low keeps a
// connection from toggling its read interest on every message.
type Budget struct {
	Max  int64
	High int64
	Low  int64
}

// Validate requires 0 <= Low <= High <= Max (ignoring zero fields).
func (b Budget) Validate() error {
	if b.Low < 0 || b.High < 0 || b.Max < 0 ||
		(b.High > 0 && b.Low > b.High) || (b.Max > 0 && b.High > b.Max) {
		return fmt.Errorf("%w: budget needs 0 <= Low <= High <= Max, got %+v", ErrBadConfig, b)
	}
	return nil
}

// ConnBudgets are the per-connection budgets.
type ConnBudgets struct {
	// QueuedBytes bounds bytes queued for the connection (outbound plus any
	// unparsed inbound tail).
	QueuedBytes Budget
	// QueuedMsgs bounds messages in the connection's out-queue.
	QueuedMsgs Budget
	// MaxPipelinedReqs bounds requests from one connection admitted and not
	// yet answered; the next frame is refused with ReasonQueue. Zero: no cap.
	MaxPipelinedReqs int
}

// Validate checks each budget.
func (c ConnBudgets) Validate() error {
	if err := c.QueuedBytes.Validate(); err != nil {
		return err
	}
	if err := c.QueuedMsgs.Validate(); err != nil {
		return err
	}
	if c.MaxPipelinedReqs < 0 {
		return fmt.Errorf("%w: negative MaxPipelinedReqs", ErrBadConfig)
	}
	return nil
}

// ConnAction is what the engine should do with one connection's reading.
type ConnAction uint8

// Connection actions returned by ConnBudgets.Check.
const (
	// ConnKeep: no change.
	ConnKeep ConnAction = iota
	// ConnPauseRead: stop reading (High reached).
	ConnPauseRead
	// ConnResumeRead: read again (back at or below Low).
	ConnResumeRead
	// ConnClose: the connection broke its hard budget; close it with ErrShed
	// or the engine's equivalent cause.
	ConnClose
)

// Check returns the action for a connection that has queuedBytes and
// queuedMsgs queued and whose reading is currently paused or not. It keeps no
// state: the engine stores the paused bit per connection.
func (c ConnBudgets) Check(queuedBytes, queuedMsgs int64, paused bool) ConnAction {
	over := func(v, lim int64) bool { return lim > 0 && v > lim }
	if over(queuedBytes, c.QueuedBytes.Max) || over(queuedMsgs, c.QueuedMsgs.Max) {
		return ConnClose
	}
	if !paused {
		if (c.QueuedBytes.High > 0 && queuedBytes >= c.QueuedBytes.High) ||
			(c.QueuedMsgs.High > 0 && queuedMsgs >= c.QueuedMsgs.High) {
			return ConnPauseRead
		}
		return ConnKeep
	}
	low := func(v int64, b Budget) bool { return b.High == 0 || v <= b.Low }
	if low(queuedBytes, c.QueuedBytes) && low(queuedMsgs, c.QueuedMsgs) {
		return ConnResumeRead
	}
	return ConnKeep
}
