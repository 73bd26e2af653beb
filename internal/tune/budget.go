package tune

import (
	"fmt"
	"math"
)

// The constants behind the budget arithmetic. Each is a planning figure, not
// a measurement of this host; the reason is in its comment.
const (
	// IdleConnBytes is the resident memory of one idle connection in the
	// engine: the engine issue's target (at most 2 KiB).
	IdleConnBytes = 2 << 10

	// RuntimeReserveBytes is memory set aside for the Go runtime, goroutine
	// stacks, code, metrics and the admin endpoint before any budget is
	// handed out.
	RuntimeReserveBytes = 64 << 20

	// FDReserve is the descriptors needed besides connections: stdio, the
	// admin listener and its clients, log files, DNS, Redis pools.
	FDReserve = 64

	// FDsPerLoop is the descriptors each loop holds: epoll, eventfd,
	// timerfd, and its SO_REUSEPORT listener.
	FDsPerLoop = 4

	// ConnsHeadroomPercent puts the connection high watermark this far above
	// the expected count, so normal churn (reconnects overlapping closes)
	// never closes the gate.
	ConnsHeadroomPercent = 25

	// ConnsLowPercent puts the low watermark at this percentage of the high
	// one: the gate reopens only after a tenth of the connections have gone,
	// so it cannot flap on every close.
	ConnsLowPercent = 90

	// GlobalLowPercent puts the global queued-bytes low watermark at this
	// percentage of the high one.
	GlobalLowPercent = 75

	// MinBudgetBytes and MaxBudgetBytes clamp the per-turn read and flush
	// budgets: below 16 KiB a busy connection costs too many turns; above
	// 256 KiB (about 100 us of copying) one fat connection holds up its
	// whole loop.
	MinBudgetBytes = 16 << 10
	MaxBudgetBytes = 256 << 10

	// MinOutQueueBytes is the smallest per-connection out-queue byte budget:
	// one page, so a reply of a few hundred bytes never hits ErrQueueFull.
	MinOutQueueBytes = 4 << 10

	// MaxOutQueueMsgs caps the out-queue ring (ringq needs a power of two).
	MaxOutQueueMsgs = 1 << 16

	// GatePauseSeconds is how long accepts may stop while the gate is shut
	// or after EMFILE (admission pauses 100 ms); the backlog must hold the
	// connections that arrive meanwhile.
	GatePauseSeconds = 0.1

	// MinBacklog and MaxBacklog clamp the listen backlog. 65535 is the
	// largest value every Linux since 2.6 accepts (somaxconn was 16 bits
	// until 4.1).
	MinBacklog = 512
	MaxBacklog = 65535
)

// Budgets is the engine configuration tune proposes for a target on a host.
type Budgets struct {
	// Loops is the number of event loops: one per usable core.
	Loops int `json:"loops"`
	// MaxConnsHigh closes the listen gate; MaxConnsLow reopens it.
	MaxConnsHigh int `json:"max_conns_high"`
	// MaxConnsLow is the low watermark of the connection budget.
	MaxConnsLow int `json:"max_conns_low"`
	// OutQueueMsgs is the per-connection out-queue capacity in messages (a
	// power of two).
	OutQueueMsgs int `json:"out_queue_msgs"`
	// OutQueueBytes is the per-connection out-queue byte budget.
	OutQueueBytes int `json:"out_queue_bytes"`
	// ReadBudgetBytes is the most a loop reads from one connection per turn.
	ReadBudgetBytes int `json:"read_budget_bytes"`
	// FlushBudgetBytes is the most a loop writes to one connection per turn.
	FlushBudgetBytes int `json:"flush_budget_bytes"`
	// GlobalQueuedBytesHigh closes the gate when all connections together
	// buffer this many bytes; 0 when the host's memory is unknown.
	GlobalQueuedBytesHigh int64 `json:"global_queued_bytes_high"`
	// GlobalQueuedBytesLow reopens it.
	GlobalQueuedBytesLow int64 `json:"global_queued_bytes_low"`
	// Backlog is the listen backlog.
	Backlog int `json:"backlog"`
	// MemLimitBytes is the suggested GOMEMLIMIT: the memory share; 0 when
	// the host's memory is unknown.
	MemLimitBytes int64 `json:"mem_limit_bytes"`
	// NoFileNeeded is the RLIMIT_NOFILE the budgets need.
	NoFileNeeded int64 `json:"nofile_needed"`
	// Reasons explains each value, in the order above.
	Reasons []Reason `json:"reasons"`
	// Warnings are the places where the host cannot give the target what
	// it asks, from the budgets' point of view.
	Warnings []string `json:"warnings,omitempty"`
}

// Reason explains one budget value in plain words.
type Reason struct {
	// Name is the budget's field name in Budgets.
	Name string `json:"name"`
	// Why is the explanation.
	Why string `json:"why"`
}

// nextPow2 returns the smallest power of two >= n (1 for n <= 1).
func nextPow2(n int64) int64 {
	p := int64(1)
	for p < n && p < math.MaxInt64/2 {
		p <<= 1
	}
	return p
}

// prevPow2 returns the largest power of two <= n (1 for n <= 1).
func prevPow2(n int64) int64 {
	p := int64(1)
	for p <= n/2 {
		p <<= 1
	}
	return p
}

func clamp(v, lo, hi int64) int64 { return max(lo, min(v, hi)) }

// Compute plans the engine's budgets for target t on host h. It returns an
// error (wrapping ErrInvalidTarget) only for a target that fails Validate;
// a host that is short of something yields budgets plus warnings.
func Compute(h Host, t Target) (Budgets, error) {
	if err := t.Validate(); err != nil {
		return Budgets{}, err
	}
	var b Budgets
	reasons := make(map[string]string, len(budgetOrder))
	why := func(name, format string, args ...any) { reasons[name] = fmt.Sprintf(format, args...) }
	warn := func(format string, args ...any) { b.Warnings = append(b.Warnings, fmt.Sprintf(format, args...)) }
	burst := t.burstBytes()

	b.Loops = h.CPU.Cores
	if b.Loops <= 0 {
		b.Loops = 1
		warn("the core count is unknown; planning for 1 loop (pass -loops to cmd/echo yourself)")
		why("Loops", "core count unknown, so 1")
	} else {
		why("Loops", "one loop per usable core (%s)", h.CPU.Why)
	}

	// Connections: the target plus headroom, low watermark below it.
	high := int64(t.Conns) + (int64(t.Conns)*ConnsHeadroomPercent+99)/100
	why("MaxConnsHigh", "%d expected connections + %d%% headroom, so reconnects overlapping closes never shut the gate", t.Conns, ConnsHeadroomPercent)

	// Per-connection budgets.
	msgs := clamp(nextPow2(2*int64(t.InflightMsgs)), 4, MaxOutQueueMsgs)
	b.OutQueueMsgs = int(msgs)
	why("OutQueueMsgs", "twice the %d pipelined replies of one burst, so a slow reader's second burst still fits (a power of two for the ring)", t.InflightMsgs)
	outBytes := max(nextPow2(msgs*int64(t.MsgBytes)), MinOutQueueBytes)
	outWhy := fmt.Sprintf("%d messages of %d bytes, rounded up to a power of two (at least %d)", msgs, t.MsgBytes, MinOutQueueBytes)
	budget := clamp(nextPow2(burst), MinBudgetBytes, MaxBudgetBytes)
	b.ReadBudgetBytes = int(budget)
	why("ReadBudgetBytes", "one pipelined burst (%d x %d bytes) in one read, clamped to %d..%d so one connection cannot starve its loop", t.InflightMsgs, t.MsgBytes, MinBudgetBytes, MaxBudgetBytes)
	b.FlushBudgetBytes = int(budget)
	why("FlushBudgetBytes", "one burst of replies in one writev, with the same clamp as the read budget")

	// Memory.
	mem := h.Memory.Bytes
	memSource := h.Memory.Why
	if t.MemBytes > 0 {
		mem, memSource = t.MemBytes, "-mem-bytes"
	}
	connBytes := IdleConnBytes + int64(t.MsgBytes)
	if mem <= 0 {
		warn("the host's memory is unknown; no global queued-bytes budget or GOMEMLIMIT is proposed (pass -mem-bytes to plan one)")
		b.MaxConnsHigh = int(high)
		why("GlobalQueuedBytesHigh", "memory unknown")
	} else {
		share := int64(float64(mem) * t.MemShare)
		b.MemLimitBytes = share
		fixed := int64(RuntimeReserveBytes) + int64(b.Loops)*budget
		// The global budget must at least let 16 connections fill their
		// out-queues, or the gate would shut on a handful of slow readers.
		minGlobal := 16 * outBytes
		usable := share - fixed - high*connBytes
		if usable < 2*minGlobal {
			fit := (share - fixed - 2*minGlobal) / connBytes
			if fit < 1 {
				fit = 1
				warn("a %.0f%% share of %s (%s) cannot even hold the runtime reserve of %s; raise -mem-share or give the host more memory", t.MemShare*100, fmtBytes(mem), memSource, fmtBytes(RuntimeReserveBytes))
			} else {
				warn("a %.0f%% share of %s (%s) holds about %d connections of %s each, not %d; max connections lowered to fit (raise -mem-share, lower -conns, or give the host more memory)", t.MemShare*100, fmtBytes(mem), memSource, fit, fmtBytes(connBytes), high)
			}
			high = fit
			why("MaxConnsHigh", "lowered to what memory holds: %s share / %s per connection", fmtBytes(share), fmtBytes(connBytes))
			usable = max(share-fixed-high*connBytes, 2*minGlobal)
		}
		b.MaxConnsHigh = int(high)
		b.GlobalQueuedBytesHigh = usable / 2
		b.GlobalQueuedBytesLow = b.GlobalQueuedBytesHigh * GlobalLowPercent / 100
		why("GlobalQueuedBytesHigh", "half of what remains of the %s share (%.0f%% of %s, %s) after the runtime reserve (%s), the loops' read buffers and %s per connection; the other half is headroom for garbage between GCs",
			fmtBytes(share), t.MemShare*100, fmtBytes(mem), memSource, fmtBytes(RuntimeReserveBytes), fmtBytes(connBytes))
		why("GlobalQueuedBytesLow", "%d%% of the high watermark, so the gate reopens only once a quarter of the backlog has drained", GlobalLowPercent)
		if limit := prevPow2(b.GlobalQueuedBytesHigh / 16); outBytes > limit {
			outBytes = max(limit, MinOutQueueBytes)
			outWhy += fmt.Sprintf(", lowered to a sixteenth of the global budget (%s)", fmtBytes(outBytes))
		}
		// Queued bytes can never exceed every connection at its out-queue
		// budget plus one partial inbound message: a global budget above
		// that bound would never bind, so say so with the number.
		if reach := high * (outBytes + int64(t.MsgBytes)); b.GlobalQueuedBytesHigh > reach {
			why("GlobalQueuedBytesHigh", "the most all connections can queue: %d x (%s out-queue + one %d-byte partial message); the memory share would allow %s, so the per-connection budgets bind first",
				high, fmtBytes(outBytes), t.MsgBytes, fmtBytes(b.GlobalQueuedBytesHigh))
			b.GlobalQueuedBytesHigh = reach
			b.GlobalQueuedBytesLow = reach * GlobalLowPercent / 100
		}
		why("MemLimitBytes", "GOMEMLIMIT at the memory share, so the Go runtime collects harder before it crosses it")
	}
	b.OutQueueBytes = int(outBytes)
	why("OutQueueBytes", "%s", outWhy)
	b.MaxConnsLow = int(high * ConnsLowPercent / 100)
	why("MaxConnsLow", "%d%% of the high watermark, so the gate reopens only after a tenth of the connections have closed", ConnsLowPercent)

	// Backlog: what arrives while accepts pause.
	rate, rateWhy := t.ConnRatePerSec, fmt.Sprintf("-conn-rate %.0f/s", t.ConnRatePerSec)
	if rate == 0 {
		rate, rateWhy = float64(high), fmt.Sprintf("a reconnect storm of all %d connections within one second", high)
	}
	b.Backlog = int(clamp(nextPow2(int64(math.Ceil(rate*GatePauseSeconds))), MinBacklog, MaxBacklog))
	why("Backlog", "holds the connections that arrive during a %.0f ms accept pause at %s (a power of two, %d..%d)", GatePauseSeconds*1000, rateWhy, MinBacklog, MaxBacklog)

	b.NoFileNeeded = high + FDReserve + int64(b.Loops)*FDsPerLoop
	why("NoFileNeeded", "one descriptor per connection (%d), %d per loop and %d for everything else", high, FDsPerLoop, FDReserve)
	for _, name := range budgetOrder {
		if r, ok := reasons[name]; ok {
			b.Reasons = append(b.Reasons, Reason{name, r})
		}
	}
	return b, nil
}

// budgetOrder is the order in which reasons are reported.
var budgetOrder = []string{"Loops", "MaxConnsHigh", "MaxConnsLow", "OutQueueMsgs", "OutQueueBytes",
	"ReadBudgetBytes", "FlushBudgetBytes", "GlobalQueuedBytesHigh", "GlobalQueuedBytesLow", "Backlog", "MemLimitBytes", "NoFileNeeded"}
