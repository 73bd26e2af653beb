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

	// MinBudgetBytes and MaxBudgetBytes clamp the per-turn read and flush
	// budgets: below 16 KiB a busy connection costs too many turns; above
	// 256 KiB (about 100 us of copying) one fat connection holds up its
	// whole loop.
	MinBudgetBytes = 16 << 10
	MaxBudgetBytes = 256 << 10

	// MinOutQueueBytes is the smallest per-connection out-queue byte budget:
	// two pages, so a reply of a few hundred bytes never hits ErrQueueFull.
	MinOutQueueBytes = 8 << 10

	// MinReadBufferBytes is the engine's default per-loop read buffer
	// (server.DefaultReadBufferBytes); tune only ever raises it.
	MinReadBufferBytes = 64 << 10

	// GateHighFraction and GateLowFraction are admission's default listen
	// gate watermarks (admission.GateConfig.Watermark), as fractions of
	// each global cap; tune quotes them to say where the gate moves.
	GateHighFraction = 0.95
	GateLowFraction  = 0.80

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
// Field names follow server.Config and admission.GlobalBudgets.
type Budgets struct {
	// Loops is the number of event loops: one per usable core.
	Loops int `json:"loops"`
	// MaxConns is the connection budget: the listen gate closes there.
	MaxConns int `json:"max_conns"`
	// MaxConnsLow is its low watermark: the gate reopens there.
	MaxConnsLow int `json:"max_conns_low"`
	// OutQueueMsgs is the per-connection out-queue capacity in messages (a
	// power of two); the engine pauses reading at half of it.
	OutQueueMsgs int `json:"out_queue_msgs"`
	// OutQueueBytes is the per-connection out-queue byte budget.
	OutQueueBytes int `json:"out_queue_bytes"`
	// OutQueueHighBytes pauses reading a connection; OutQueueLowBytes
	// resumes it.
	OutQueueHighBytes int `json:"out_queue_high_bytes"`
	// OutQueueLowBytes is the low watermark of the out-queue bytes.
	OutQueueLowBytes int `json:"out_queue_low_bytes"`
	// ReadBudgetBytes is the most a loop reads from one connection per turn.
	ReadBudgetBytes int `json:"read_budget_bytes"`
	// FlushBudgetBytes is the most a loop writes to one connection per turn.
	FlushBudgetBytes int `json:"flush_budget_bytes"`
	// ReadBufferBytes is each loop's read buffer.
	ReadBufferBytes int `json:"read_buffer_bytes"`
	// MaxQueuedBytes is the global cap on bytes buffered inbound plus queued
	// outbound over all connections (admission.GlobalBudgets); the gate
	// closes at GateHighFraction of it and reopens at GateLowFraction. 0
	// when the host's memory is unknown.
	MaxQueuedBytes int64 `json:"max_queued_bytes"`
	// Backlog is the listen backlog.
	Backlog int `json:"backlog"`
	// MemLimitBytes is the suggested GOMEMLIMIT (and admission's
	// MemoryLimitBytes): the memory share; 0 when memory is unknown.
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

// planner carries one Compute call's state: the budgets being filled, their
// reasons, and the target.
type planner struct {
	b       Budgets
	t       Target
	reasons map[string]string
}

func (p *planner) why(name, format string, args ...any) {
	p.reasons[name] = fmt.Sprintf(format, args...)
}

func (p *planner) warn(format string, args ...any) {
	p.b.Warnings = append(p.b.Warnings, fmt.Sprintf(format, args...))
}

// Compute plans the engine's budgets for target t on host h. It returns an
// error (wrapping ErrInvalidTarget) only for a target that fails Validate;
// a host that is short of something yields budgets plus warnings.
func Compute(h Host, t Target) (Budgets, error) {
	if err := t.Validate(); err != nil {
		return Budgets{}, err
	}
	p := &planner{t: t, reasons: make(map[string]string, len(budgetOrder))}
	p.loops(h)
	p.perConn()
	high := int64(t.Conns) + (int64(t.Conns)*ConnsHeadroomPercent+99)/100
	p.why("MaxConns", "%d expected connections + %d%% headroom, so reconnects overlapping closes never shut the gate", t.Conns, ConnsHeadroomPercent)
	mem, source := h.Memory.Bytes, h.Memory.Why
	if t.MemBytes > 0 {
		mem, source = t.MemBytes, "-mem-bytes"
	}
	high = p.memory(mem, source, high)
	p.b.MaxConns = int(high)
	p.b.MaxConnsLow = int(high * ConnsLowPercent / 100)
	p.why("MaxConnsLow", "%d%% of MaxConns (the engine's default too), so the gate reopens only after a tenth of the connections have closed", ConnsLowPercent)
	p.b.OutQueueHighBytes = p.b.OutQueueBytes / 2
	p.b.OutQueueLowBytes = p.b.OutQueueHighBytes / 2
	p.why("OutQueueHighBytes", "half of OutQueueBytes (the engine's default): reading pauses there, leaving the other half for the replies to one read")
	p.why("OutQueueLowBytes", "half of the high watermark (the engine's default): reading resumes there, so a connection does not pause and resume on every flush")
	p.backlog(high)
	p.b.NoFileNeeded = high + FDReserve + int64(p.b.Loops)*FDsPerLoop
	p.why("NoFileNeeded", "one descriptor per connection (%d), %d per loop and %d for everything else", high, FDsPerLoop, FDReserve)
	for _, name := range budgetOrder {
		if r, ok := p.reasons[name]; ok {
			p.b.Reasons = append(p.b.Reasons, Reason{name, r})
		}
	}
	return p.b, nil
}

func (p *planner) loops(h Host) {
	p.b.Loops = h.CPU.Cores
	if p.b.Loops > 0 {
		p.why("Loops", "one loop per usable core (%s)", h.CPU.Why)
		return
	}
	p.b.Loops = 1
	p.warn("the core count is unknown; planning for 1 loop (pass -loops to cmd/echo yourself)")
	p.why("Loops", "core count unknown, so 1")
}

// perConn sizes the out-queue and the per-turn budgets from one pipelined
// burst. The out-queue bytes may be lowered later by the global budget.
func (p *planner) perConn() {
	t := p.t
	msgs := clamp(nextPow2(2*int64(t.InflightMsgs)), 4, MaxOutQueueMsgs)
	p.b.OutQueueMsgs = int(msgs)
	p.why("OutQueueMsgs", "twice the %d pipelined replies of one burst (a power of two for the ring): the engine pauses reading at half, that is after one burst", t.InflightMsgs)
	budget := clamp(nextPow2(t.burstBytes()), MinBudgetBytes, MaxBudgetBytes)
	p.b.ReadBudgetBytes, p.b.FlushBudgetBytes = int(budget), int(budget)
	p.why("ReadBudgetBytes", "one pipelined burst (%d x %d bytes) in one read, clamped to %d..%d so one connection cannot starve its loop", t.InflightMsgs, t.MsgBytes, MinBudgetBytes, MaxBudgetBytes)
	p.why("FlushBudgetBytes", "one burst of replies in one writev, with the same clamp as the read budget")
	p.b.ReadBufferBytes = int(max(budget, MinReadBufferBytes))
	p.why("ReadBufferBytes", "per loop: the engine's default %s, or the read budget if larger, so one read call can take a whole budget", fmtBytes(MinReadBufferBytes))
	p.b.OutQueueBytes = int(max(nextPow2(msgs*int64(t.MsgBytes)), 2*budget, MinOutQueueBytes))
	p.why("OutQueueBytes", "the larger of %d messages of %d bytes and twice the read budget (reading pauses at half, and the replies to one read must fit in the other half), a power of two", msgs, t.MsgBytes)
}

// memory splits the memory share: the runtime reserve and the loops' read
// buffers first, then at most half of the rest for connections (lowering
// the connection budget if they do not fit), then half of what remains for
// queued bytes, the other half being room for garbage between collections.
// It returns the connection high watermark, possibly lowered.
func (p *planner) memory(mem int64, source string, high int64) int64 {
	t := p.t
	if mem <= 0 {
		p.warn("the host's memory is unknown; no global queued-bytes budget or GOMEMLIMIT is proposed (pass -mem-bytes to plan one)")
		p.why("MaxQueuedBytes", "not proposed: memory unknown")
		return high
	}
	share := int64(float64(mem) * t.MemShare)
	p.b.MemLimitBytes = share
	p.why("MemLimitBytes", "GOMEMLIMIT (and admission's MemoryLimitBytes) at the memory share, so the Go runtime collects harder before it crosses it and the gate closes near it")
	shareWhy := fmt.Sprintf("%.0f%% of %s, from %s", t.MemShare*100, fmtBytes(mem), source)
	avail := share - RuntimeReserveBytes - int64(p.b.Loops)*int64(p.b.ReadBufferBytes)
	if avail <= 0 {
		p.warn("a %s share cannot even hold the runtime reserve of %s; no global queued-bytes budget is proposed (raise -mem-share or give the host more memory)", shareWhy, fmtBytes(RuntimeReserveBytes))
		p.why("MaxQueuedBytes", "not proposed: the memory share is below the runtime reserve")
		return high
	}
	// Socket buffers live in the kernel, outside the share, but in the same
	// memory (under cgroup v2 they are charged to memory.max).
	if sock := high * 2 * t.burstBytes(); share+sock > mem {
		p.warn("the kernel's socket buffers for %d connections holding one burst each way (%s) plus the %s share exceed the %s of memory (%s); lower -mem-share to about %.2f",
			high, fmtBytes(sock), fmtBytes(share), fmtBytes(mem), source, max(0, float64(mem-sock)/float64(mem)))
	}
	connBytes := IdleConnBytes + int64(t.MsgBytes)
	if fit := avail / 2 / connBytes; high > fit {
		p.warn("a %s share holds about %d connections of %s each (with room left to queue bytes), not %d; max connections lowered to fit (raise -mem-share, lower -conns, or give the host more memory)",
			shareWhy, fit, fmtBytes(connBytes), high)
		p.why("MaxConns", "lowered to what memory holds: half of the %s share after the runtime reserve, at %s per connection", fmtBytes(share), fmtBytes(connBytes))
		high = max(fit, 1)
	}
	g := (avail - high*connBytes) / 2
	p.why("MaxQueuedBytes", "half of what remains of the %s share (%s) after the runtime reserve (%s), the loops' read buffers and %s per connection; the other half is headroom for garbage between GCs. The gate closes at %.0f%% of it and reopens at %.0f%% (admission's defaults)",
		fmtBytes(share), shareWhy, fmtBytes(RuntimeReserveBytes), fmtBytes(connBytes), GateHighFraction*100, GateLowFraction*100)
	p.capOutQueue(g)
	// Queued bytes can never exceed every connection at its out-queue
	// budget plus one partial inbound message: a cap above that bound would
	// never bind, so it is lowered to the bound.
	if reach := high * (int64(p.b.OutQueueBytes) + int64(t.MsgBytes)); g > reach {
		p.why("MaxQueuedBytes", "the most all connections can queue: %d x (%s out-queue + one %d-byte partial message); the memory share would allow %s, so the per-connection budgets bind first (the gate closes at %.0f%% of the cap)",
			high, fmtBytes(int64(p.b.OutQueueBytes)), t.MsgBytes, fmtBytes(g), GateHighFraction*100)
		g = reach
	}
	p.b.MaxQueuedBytes = g
	return high
}

// capOutQueue keeps the per-connection out-queue at most a sixteenth of the
// global queued-bytes cap g, so a handful of slow readers cannot shut the
// gate, lowering the read and flush budgets with it (the replies to one
// read must fit in half the out-queue).
func (p *planner) capOutQueue(g int64) {
	out := int64(p.b.OutQueueBytes)
	if out <= g/16 {
		return
	}
	out = max(prevPow2(g/16), MinOutQueueBytes)
	p.b.OutQueueBytes = int(out)
	p.reasons["OutQueueBytes"] += fmt.Sprintf(", lowered to a sixteenth of MaxQueuedBytes (%s)", fmtBytes(out))
	if 16*out > g {
		p.warn("the global queued-bytes cap (%s) holds fewer than 16 full out-queues of %s: a few slow readers will shut the gate", fmtBytes(g), fmtBytes(out))
	}
	if budget := int(out / 2); p.b.ReadBudgetBytes > budget {
		p.b.ReadBudgetBytes, p.b.FlushBudgetBytes = budget, budget
		p.reasons["ReadBudgetBytes"] += fmt.Sprintf("; lowered to half the out-queue (%s)", fmtBytes(int64(budget)))
		p.reasons["FlushBudgetBytes"] += fmt.Sprintf("; lowered to half the out-queue (%s)", fmtBytes(int64(budget)))
	}
}

// backlog sizes the listen backlog for the connections that arrive while
// accepts pause.
func (p *planner) backlog(high int64) {
	rate, rateWhy := p.t.ConnRatePerSec, fmt.Sprintf("-conn-rate %.0f/s", p.t.ConnRatePerSec)
	if rate == 0 {
		rate, rateWhy = float64(high), fmt.Sprintf("a reconnect storm of all %d connections within one second", high)
	}
	p.b.Backlog = int(clamp(nextPow2(int64(math.Ceil(rate*GatePauseSeconds))), MinBacklog, MaxBacklog))
	p.why("Backlog", "holds the connections that arrive during a %.0f ms accept pause at %s (a power of two, %d..%d)", GatePauseSeconds*1000, rateWhy, MinBacklog, MaxBacklog)
}

// budgetOrder is the order in which reasons are reported.
var budgetOrder = []string{"Loops", "MaxConns", "MaxConnsLow", "OutQueueMsgs", "OutQueueBytes", "OutQueueHighBytes", "OutQueueLowBytes",
	"ReadBudgetBytes", "FlushBudgetBytes", "ReadBufferBytes", "MaxQueuedBytes", "Backlog", "MemLimitBytes", "NoFileNeeded"}
