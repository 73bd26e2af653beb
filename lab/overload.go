package lab

import (
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/sluicenet/sluice/bench"
)

// Servers of the overload runner, besides ServerGnet and ServerNet.
const (
	// ServerSluiceShed is cmd/echo with shedding (OverloadConfig.ShedArgs).
	ServerSluiceShed = "sluice-shed"
	// ServerSluiceShedTight is cmd/echo with tighter shedding
	// (OverloadConfig.TightShedArgs): lower latency, less goodput.
	ServerSluiceShedTight = "sluice-shed-tight"
	// ServerSluiceNoShed is cmd/echo with the same work and no admission.
	ServerSluiceNoShed = "sluice-noshed"
	// ServerSluiceBudget is cmd/echo with -max-queued-bytes (memory runs).
	ServerSluiceBudget = "sluice-budget"
	// ServerSluiceMemLimit is sluice-budget run with GOMEMLIMIT
	// (OverloadConfig.MemLimitBytes), which the admission policy also takes
	// as its memory budget.
	ServerSluiceMemLimit = "sluice-budget-gomemlimit"
)

// OverloadConfig describes an overload measurement (Overload): goodput and
// admitted latency at a multiple of each server's capacity, resident memory
// under a flood of peers that do not read, the listen gate during a
// connection flood, and fast rejects against kernel drops when the accept
// queue is full. Zero optional fields take the defaults the comments name.
type OverloadConfig struct {
	// ModuleDir, SluiceDir, GoCmd, BenchBin and BenchEnv are as in
	// CompareConfig.
	ModuleDir string   `json:"-"`
	SluiceDir string   `json:"-"`
	GoCmd     string   `json:"-"`
	BenchBin  string   `json:"-"`
	BenchEnv  []string `json:"-"`

	// Parts to run, from "goodput", "priorities", "fairness", "memory",
	// "gate", "backlog" (nil: all).
	Parts []string `json:"parts"`
	// Rounds of each part, servers alternating within a round (0: 3).
	Rounds int `json:"rounds"`
	// ServerCPUs and ClientCPUs pin the servers and the generator (nil: CPU
	// 0 and CPU 1). Servers run with GOMAXPROCS and -loops = len(ServerCPUs).
	ServerCPUs []int `json:"server_cpus"`
	ClientCPUs []int `json:"client_cpus"`
	// ClientProcs is how many processes a load run's generator is split
	// into over ClientCPUs (SplitGenerators: the CPUs and connections
	// divided evenly, an open-loop rate in proportion to the connections,
	// the results merged; 0: one per client CPU, 1: one process over all of
	// them; more than the CPUs: processes sharing CPUs). The floods of the
	// memory, gate and backlog parts run as one process over all the client
	// CPUs.
	ClientProcs int `json:"client_procs,omitempty"`

	// Goodput: Servers (nil: sluice-shed, sluice-shed-tight, sluice-noshed,
	// gnet, net; sluice-shed-default on request) do Work
	// per frame (0: 200µs); each one's capacity is its closed-loop
	// throughput with Conns × InFlight requests of Size bytes (0: 32
	// connections, 1,024 requests in flight over them and 64 bytes: enough
	// queued work that a descheduled generator cannot leave the server
	// idle, and not so much that requests outwait the generator's response
	// timeout with many connections), and it is then offered UnloadedFraction (0: 0.2) and Factor (0:
	// 5) times its median capacity in an open loop, for Warmup (0: 1s) and
	// Duration (0: 3s). ShedArgs are sluice-shed's extra flags (nil:
	// DefaultShedArgs).
	Servers          []string      `json:"servers"`
	Work             time.Duration `json:"work_ns"`
	Conns            int           `json:"conns"`
	InFlight         int           `json:"in_flight"`
	Size             int           `json:"size"`
	UnloadedFraction float64       `json:"unloaded_fraction"`
	Factor           float64       `json:"factor"`
	Warmup           time.Duration `json:"warmup_ns"`
	Duration         time.Duration `json:"duration_ns"`
	ShedArgs         []string      `json:"shed_args"`
	// TightShedArgs are sluice-shed-tight's (nil: DefaultTightShedArgs).
	TightShedArgs []string `json:"tight_shed_args"`

	// Memory: MemoryServers (nil: sluice-budget,
	// sluice-budget-gomemlimit, sluice-noshed, net, gnet) face FloodConns
	// (0: 300) peers sending FloodSize-byte frames (0: 4096) and never
	// reading, for FloodDuration (0: 6s); sluice-budget runs with
	// -max-queued-bytes QueuedBudgetBytes (0: 16 MiB), and the gomemlimit
	// variant also with GOMEMLIMIT=MemLimitBytes (0: 48 MiB).
	MemoryServers     []string      `json:"memory_servers"`
	FloodConns        int           `json:"flood_conns"`
	FloodSize         int           `json:"flood_size"`
	FloodDuration     time.Duration `json:"flood_duration_ns"`
	QueuedBudgetBytes int64         `json:"queued_budget_bytes"`
	MemLimitBytes     int64         `json:"mem_limit_bytes"`

	// Gate: sluice with -budget-conns GateBudget (0: 300) and the gate's
	// watermarks 1.0/0.5 with a 500 ms dwell faces GateFloodConns (0: 3000)
	// connections opened at GateFloodRate per second (0: 1000), each held
	// for GateHold (0: 1s) after its echo.
	GateBudget     int           `json:"gate_budget"`
	GateFloodConns int           `json:"gate_flood_conns"`
	GateFloodRate  float64       `json:"gate_flood_rate"`
	GateHold       time.Duration `json:"gate_hold_ns"`

	// Backlog: sluice with -budget-conns BacklogBudget (0: 50) and
	// -backlog Backlog (0: 64) faces BacklogConns (0: 400) connections at
	// BacklogRate per second (0: 2000), all held to the end, once letting
	// the kernel drop what the full accept queue cannot take and once with
	// -backlog-reject BacklogRejectAbove (0: 0.5).
	BacklogBudget      int     `json:"backlog_budget"`
	Backlog            int     `json:"backlog"`
	BacklogConns       int     `json:"backlog_conns"`
	BacklogRate        float64 `json:"backlog_rate"`
	BacklogRejectAbove float64 `json:"backlog_reject_above"`

	// Priorities: sluice-shed-default classifying frames by size
	// (PriorityArgs), and the same server without classes, each face the
	// PriorityClasses generators at once, every round: critical at
	// CriticalFactor (0: 0.3) × the capacity of the round, normal at
	// NormalFactor (0: 1) × it, best-effort at the rest of Factor.
	CriticalFactor float64 `json:"critical_factor"`
	NormalFactor   float64 `json:"normal_factor"`

	// Fairness: sluice-shed-default faces Tenants generators at once (0:
	// 10), each from its own loopback address with TenantConns connections
	// (0: 8), the first sending HeavyWeight (0: 10) times as much as each
	// other one, Factor × the capacity of the round in all.
	Tenants     int     `json:"tenants"`
	TenantConns int     `json:"tenant_conns"`
	HeavyWeight float64 `json:"heavy_weight"`

	// MixMode is where the priorities and fairness parts' servers run the
	// work, their capacity runs included: ModeInline (empty) or ModePool
	// (cmd/echo -work-mode pool).
	MixMode string `json:"mix_mode,omitempty"`
	// MixConnsFactor (0: 1) multiplies every mixed generator's
	// connections: the classes' and TenantConns.
	MixConnsFactor int `json:"mix_conns_factor,omitempty"`

	// Progress, when non-nil, receives a line per run.
	Progress io.Writer `json:"-"`
}

// DefaultShedArgs are sluice-shed's flags: CoDel on each frame's queueing
// delay on the loop (target 1 ms over 20 ms intervals), a 1.5 ms cap on
// queueing delay whatever CoDel says, and refusals batched for up to 10 ms
// (server.AdmissionPolicy.RejectFlushDelay: reject-only writes and reads
// whose frames would all be refused wait, so shedding costs fewer system
// calls per served request).
var DefaultShedArgs = []string{"-shed", "-codel-target", "1ms", "-codel-interval", "20ms", "-max-queue-delay", "1.5ms", "-reject-flush-delay", "10ms"}

// DefaultTightShedArgs are sluice-shed-tight's flags: target 0.5 ms, cap
// 1 ms, refusals batched for up to 10 ms.
var DefaultTightShedArgs = []string{"-shed", "-codel-target", "0.5ms", "-codel-interval", "20ms", "-max-queue-delay", "1ms", "-reject-flush-delay", "10ms"}

// The overload parts.
const (
	PartGoodput = "goodput"
	PartMemory  = "memory"
	PartGate    = "gate"
	PartBacklog = "backlog"
)

func (c OverloadConfig) withDefaults() OverloadConfig {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	defD := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	defF := func(p *float64, v float64) {
		if *p == 0 {
			*p = v
		}
	}
	if c.GoCmd == "" {
		c.GoCmd = "go"
	}
	if len(c.Parts) == 0 {
		c.Parts = []string{PartGoodput, PartPriorities, PartFairness, PartMemory, PartGate, PartBacklog}
	}
	def(&c.Rounds, 3)
	if len(c.ServerCPUs) == 0 {
		c.ServerCPUs = []int{0}
	}
	if len(c.ClientCPUs) == 0 {
		c.ClientCPUs = []int{1}
	}
	if len(c.Servers) == 0 {
		c.Servers = []string{ServerSluiceShed, ServerSluiceShedTight, ServerSluiceNoShed, ServerGnet, ServerNet}
	}
	defD(&c.Work, 200*time.Microsecond)
	// capacityInFlight is the default number of requests in flight over all
	// connections in the capacity run: 32 × 32 at the default 32
	// connections; at 1,000 connections 32 each queued 6 s of 200 µs work,
	// past the generator's 5 s response timeout, and the run measured half
	// the capacity.
	const capacityInFlight = 1024
	def(&c.Conns, 32)
	def(&c.InFlight, max(1, capacityInFlight/c.Conns))
	def(&c.Size, 64)
	defF(&c.UnloadedFraction, 0.2)
	defF(&c.Factor, 5)
	defD(&c.Warmup, time.Second)
	defD(&c.Duration, 3*time.Second)
	if c.ShedArgs == nil {
		c.ShedArgs = DefaultShedArgs
	}
	if c.TightShedArgs == nil {
		c.TightShedArgs = DefaultTightShedArgs
	}
	if len(c.MemoryServers) == 0 {
		c.MemoryServers = []string{ServerSluiceBudget, ServerSluiceMemLimit, ServerSluiceNoShed, ServerNet, ServerGnet}
	}
	def(&c.FloodConns, 300)
	def(&c.FloodSize, 4096)
	defD(&c.FloodDuration, 6*time.Second)
	if c.QueuedBudgetBytes == 0 {
		c.QueuedBudgetBytes = 16 << 20
	}
	if c.MemLimitBytes == 0 {
		c.MemLimitBytes = 48 << 20
	}
	def(&c.GateBudget, 300)
	def(&c.GateFloodConns, 3000)
	defF(&c.GateFloodRate, 1000)
	defD(&c.GateHold, time.Second)
	defF(&c.CriticalFactor, 0.3)
	defF(&c.NormalFactor, 1)
	def(&c.Tenants, 10)
	def(&c.TenantConns, 8)
	def(&c.MixConnsFactor, 1)
	defF(&c.HeavyWeight, 10)
	def(&c.BacklogBudget, 50)
	def(&c.Backlog, 64)
	def(&c.BacklogConns, 400)
	defF(&c.BacklogRate, 2000)
	defF(&c.BacklogRejectAbove, 0.5)
	return c
}

// Validate reports a configuration that cannot run.
func (c *OverloadConfig) Validate() error {
	known := map[string]bool{ServerSluiceShedDefault: true, ServerSluiceShed: true, ServerSluiceShedTight: true, ServerSluiceNoShed: true, ServerSluiceBudget: true, ServerSluiceMemLimit: true, ServerGnet: true, ServerNet: true}
	for _, s := range append(append([]string(nil), c.Servers...), c.MemoryServers...) {
		if !known[s] {
			return fmt.Errorf("%w: unknown overload server %q", bench.ErrInvalidConfig, s)
		}
	}
	for _, p := range c.Parts {
		switch p {
		case PartGoodput, PartPriorities, PartFairness, PartMemory, PartGate, PartBacklog:
		default:
			return fmt.Errorf("%w: unknown overload part %q", bench.ErrInvalidConfig, p)
		}
	}
	switch {
	case c.Rounds < 1 || c.Conns < 1 || c.InFlight < 1 || c.Work < 0:
		return fmt.Errorf("%w: rounds %d, conns %d, in flight %d, work %v", bench.ErrInvalidConfig, c.Rounds, c.Conns, c.InFlight, c.Work)
	case c.Factor <= 0 || c.UnloadedFraction <= 0:
		return fmt.Errorf("%w: factor %v, unloaded fraction %v", bench.ErrInvalidConfig, c.Factor, c.UnloadedFraction)
	case c.CriticalFactor <= 0 || c.NormalFactor <= 0 || c.CriticalFactor+c.NormalFactor > c.Factor:
		return fmt.Errorf("%w: critical factor %v and normal factor %v must be positive and add up to at most the factor %v", bench.ErrInvalidConfig, c.CriticalFactor, c.NormalFactor, c.Factor)
	case c.Tenants < 2 || c.Tenants > 200 || c.TenantConns < 1 || c.HeavyWeight <= 0:
		return fmt.Errorf("%w: tenants %d (2 to 200: one loopback address each), tenant conns %d, heavy weight %v", bench.ErrInvalidConfig, c.Tenants, c.TenantConns, c.HeavyWeight)
	case c.ClientProcs < 0:
		return fmt.Errorf("%w: %d client processes", bench.ErrInvalidConfig, c.ClientProcs)
	case c.MixConnsFactor < 1 || c.MixConnsFactor > 100:
		return fmt.Errorf("%w: mix conns factor %d (1 to 100)", bench.ErrInvalidConfig, c.MixConnsFactor)
	case c.MixMode != "" && c.MixMode != ModeInline && c.MixMode != ModePool:
		return fmt.Errorf("%w: mix mode %q (%s or %s)", bench.ErrInvalidConfig, c.MixMode, ModeInline, ModePool)
	case c.BacklogRejectAbove <= 0 || c.BacklogRejectAbove > 1:
		return fmt.Errorf("%w: backlog reject above %v", bench.ErrInvalidConfig, c.BacklogRejectAbove)
	}
	return bench.FixedSize(c.Size).Validate()
}

// has reports whether part is to run.
func (c *OverloadConfig) has(part string) bool {
	for _, p := range c.Parts {
		if p == part {
			return true
		}
	}
	return false
}

// OverloadReport is what Overload measured.
type OverloadReport struct {
	Started  time.Time      `json:"started"`
	Finished time.Time      `json:"finished"`
	Machine  Machine        `json:"machine"`
	Config   OverloadConfig `json:"config"`
	// Commands are the server command lines, by server name.
	Commands map[string]string `json:"commands"`
	Goodput  []GoodputCell     `json:"goodput,omitempty"`
	// Priorities holds the classified server, then the same server
	// without classes; Fairness the tenants' server.
	Priorities []MixCell     `json:"priorities,omitempty"`
	Fairness   []MixCell     `json:"fairness,omitempty"`
	Memory     []MemoryCell  `json:"memory,omitempty"`
	Gate       *GateRun      `json:"gate,omitempty"`
	Backlog    []BacklogCell `json:"backlog,omitempty"`
	Notes      []string      `json:"notes,omitempty"`
}

// LoadBrief is the part of a LoadResult the overload report keeps.
type LoadBrief struct {
	OfferedPerSec  float64               `json:"offered_per_sec,omitempty"`
	MsgsPerSec     float64               `json:"msgs_per_sec"`
	RejectedPerSec float64               `json:"rejected_per_sec,omitempty"`
	Rejects        map[string]int64      `json:"rejects,omitempty"`
	Latency        bench.LatencySummary  `json:"latency"`
	RejectLatency  *bench.LatencySummary `json:"reject_latency,omitempty"`
	Missed         int64                 `json:"missed,omitempty"`
	Late           int64                 `json:"late,omitempty"`
	Errors         map[string]int64      `json:"errors,omitempty"`
	ServerUtil     float64               `json:"server_util,omitempty"`
	// ServerMicrosPerMsg is the server's CPU time per echoed message
	// (rejects included in the cost, not in the count).
	ServerMicrosPerMsg float64 `json:"server_us_per_msg,omitempty"`
	ClientUtil         float64 `json:"client_util,omitempty"`
	ServerCoreBusy     float64 `json:"server_core_busy,omitempty"`
	ClientCoreBusy     float64 `json:"client_core_busy,omitempty"`
	// The generator's counts (bench.LoadResult): open-loop sends intended
	// in the window, responses (Msgs) and rejects read in it, requests still
	// in flight when it ended and requests lost with failed connections.
	Intended   int64 `json:"intended,omitempty"`
	Msgs       int64 `json:"msgs,omitempty"`
	Rejected   int64 `json:"rejected,omitempty"`
	Unfinished int64 `json:"unfinished,omitempty"`
	Dropped    int64 `json:"dropped,omitempty"`
	// ConnsOpen is how many connections the generator established.
	ConnsOpen int `json:"conns_open,omitempty"`
	// GoAways is how many connections the server closed with a final
	// refusal, Reconnects how many times the generator dialled such a
	// connection again (HammerConfig.Reconnect).
	GoAways    int `json:"goaways,omitempty"`
	Reconnects int `json:"reconnects,omitempty"`
}

// brief keeps what the report needs of r.
func brief(r *bench.LoadResult) *LoadBrief {
	if r == nil {
		return nil
	}
	b := &LoadBrief{OfferedPerSec: r.OfferedPerSec, MsgsPerSec: r.MsgsPerSec, RejectedPerSec: r.RejectedPerSec,
		Rejects: r.Rejects, Latency: r.Latency, RejectLatency: r.RejectLatency, Missed: r.Missed, Late: r.Late, Errors: r.Errors,
		Intended: r.Intended, Msgs: r.Msgs, Rejected: r.Rejected, Unfinished: r.Unfinished, Dropped: r.Dropped, ConnsOpen: r.ConnsOpen,
		GoAways: r.GoAways, Reconnects: r.Reconnects}
	if r.Server != nil {
		b.ServerUtil, b.ServerMicrosPerMsg = r.Server.Util, r.Server.CPUMicrosPerMsg
	}
	if r.Client != nil {
		b.ClientUtil = r.Client.Util
	}
	for _, c := range r.Cores {
		switch c.Role {
		case "server":
			b.ServerCoreBusy = c.Busy
		case "client":
			b.ClientCoreBusy = c.Busy
		}
	}
	return b
}

// GoodputRun is one round of one server: capacity, unloaded and overloaded
// runs, and the paired ratios.
type GoodputRun struct {
	Round    int        `json:"round"`
	Peak     *LoadBrief `json:"peak,omitempty"`
	Unloaded *LoadBrief `json:"unloaded,omitempty"`
	Overload *LoadBrief `json:"overload,omitempty"`
	// GoodputRatio is the overloaded goodput over the server's median
	// capacity; P99Ratio the overloaded p99 (admitted requests) over this
	// round's unloaded p99.
	GoodputRatio float64 `json:"goodput_ratio,omitempty"`
	P99Ratio     float64 `json:"p99_ratio,omitempty"`
	Error        string  `json:"error,omitempty"`
}

// GoodputCell summarises one server's goodput runs: medians and ranges over
// the rounds.
type GoodputCell struct {
	Server       string `json:"server"`
	Peak         Spread `json:"peak"`
	UnloadedP99  Spread `json:"unloaded_p99_us"`
	Goodput      Spread `json:"goodput"`
	GoodputRatio Spread `json:"goodput_ratio"`
	OverloadP99  Spread `json:"overload_p99_us"`
	P99Ratio     Spread `json:"p99_ratio"`
	Rejected     Spread `json:"rejected_per_sec"`
	RejectP99    Spread `json:"reject_p99_us"`
	// PeakCPU and OverloadCPU are the server's CPU µs per echoed message
	// in the capacity and overload runs; Efficiency is their ratio
	// (capacity/overload, paired by round): the share of the server's CPU
	// that still does useful work under overload, whatever share of the
	// shared core the server got.
	PeakCPU     Spread `json:"peak_cpu_us_per_msg"`
	OverloadCPU Spread `json:"overload_cpu_us_per_msg"`
	Efficiency  Spread `json:"efficiency"`
	// ServerUtil is the server's CPU use in the overload runs (1 = a core).
	ServerUtil Spread       `json:"overload_server_util"`
	Runs       []GoodputRun `json:"runs"`
}

// summarizeGoodput fills the cell's spreads from its runs.
func (g *GoodputCell) summarize() {
	var peak, up99, good, gr, op99, pr, rej, rp99, pc, oc, eff, util []float64
	for _, r := range g.Runs {
		if r.Peak != nil {
			peak = append(peak, r.Peak.MsgsPerSec)
			if r.Peak.ServerMicrosPerMsg > 0 {
				pc = append(pc, r.Peak.ServerMicrosPerMsg)
			}
		}
		if r.Overload != nil && r.Overload.ServerMicrosPerMsg > 0 {
			oc = append(oc, r.Overload.ServerMicrosPerMsg)
			util = append(util, r.Overload.ServerUtil)
			if r.Peak != nil && r.Peak.ServerMicrosPerMsg > 0 {
				eff = append(eff, r.Peak.ServerMicrosPerMsg/r.Overload.ServerMicrosPerMsg)
			}
		}
		if r.Unloaded != nil {
			up99 = append(up99, r.Unloaded.Latency.P99Micros)
		}
		if r.Overload != nil {
			good = append(good, r.Overload.MsgsPerSec)
			op99 = append(op99, r.Overload.Latency.P99Micros)
			rej = append(rej, r.Overload.RejectedPerSec)
			if r.Overload.RejectLatency != nil {
				rp99 = append(rp99, r.Overload.RejectLatency.P99Micros)
			}
		}
		if r.GoodputRatio > 0 {
			gr = append(gr, r.GoodputRatio)
		}
		if r.P99Ratio > 0 {
			pr = append(pr, r.P99Ratio)
		}
	}
	g.Peak, g.UnloadedP99, g.Goodput, g.GoodputRatio = spreadOf(peak), spreadOf(up99), spreadOf(good), spreadOf(gr)
	g.OverloadP99, g.P99Ratio, g.Rejected, g.RejectP99 = spreadOf(op99), spreadOf(pr), spreadOf(rej), spreadOf(rp99)
	g.PeakCPU, g.OverloadCPU, g.Efficiency, g.ServerUtil = spreadOf(pc), spreadOf(oc), spreadOf(eff), spreadOf(util)
}

// MemoryRun is one server's resident memory through one non-reading flood.
type MemoryRun struct {
	Round int `json:"round"`
	// BaselineRSSKiB is the server's resident memory before the flood,
	// PeakRSSKiB the largest sample during it (every 50 ms) and EndRSSKiB
	// the last one.
	BaselineRSSKiB int64 `json:"baseline_rss_kib"`
	PeakRSSKiB     int64 `json:"peak_rss_kib"`
	EndRSSKiB      int64 `json:"end_rss_kib"`
	// KernelTCPKiB is the largest rise of the system's TCP socket memory
	// (/proc/net/sockstat "mem", pages) during the flood: what the kernel
	// holds in socket buffers, for every process on the machine.
	KernelTCPKiB int64 `json:"kernel_tcp_kib"`
	// PeakQueuedKiB is sluice's largest queued bytes (input plus output,
	// Stats) sampled during the flood; 0 for the other servers.
	PeakQueuedKiB int64  `json:"peak_queued_kib,omitempty"`
	SentMiB       int64  `json:"sent_mib"`
	ClosedConns   int    `json:"closed_conns"`
	Error         string `json:"error,omitempty"`
}

// MemoryCell summarises one server's memory runs.
type MemoryCell struct {
	Server string `json:"server"`
	// BudgetBytes is the configured global byte budget (0: none);
	// MemLimitBytes the GOMEMLIMIT it ran with (0: none).
	BudgetBytes   int64       `json:"budget_bytes"`
	MemLimitBytes int64       `json:"mem_limit_bytes,omitempty"`
	PeakRise      Spread      `json:"peak_rise_kib"`
	PeakQueued    Spread      `json:"peak_queued_kib"`
	PeakRSS       Spread      `json:"peak_rss_kib"`
	KernelTCP     Spread      `json:"kernel_tcp_kib"`
	Sent          Spread      `json:"sent_mib"`
	Runs          []MemoryRun `json:"runs"`
}

func (m *MemoryCell) summarize() {
	var rise, peak, kern, sent, queued []float64
	for _, r := range m.Runs {
		if r.Error != "" {
			continue
		}
		queued = append(queued, float64(r.PeakQueuedKiB))
		rise = append(rise, float64(r.PeakRSSKiB-r.BaselineRSSKiB))
		peak = append(peak, float64(r.PeakRSSKiB))
		kern = append(kern, float64(r.KernelTCPKiB))
		sent = append(sent, float64(r.SentMiB))
	}
	m.PeakRise, m.PeakRSS, m.KernelTCP, m.Sent = spreadOf(rise), spreadOf(peak), spreadOf(kern), spreadOf(sent)
	m.PeakQueued = spreadOf(queued)
}

// GateSample is the server's state at one moment of the gate run.
type GateSample struct {
	AtMillis       float64 `json:"t_ms"`
	GateOpen       bool    `json:"gate_open"`
	PolicyState    string  `json:"policy_state"`
	ConnsOpen      int64   `json:"conns_open"`
	Accepted       uint64  `json:"accepted"`
	BacklogDepth   int64   `json:"backlog_depth"`
	PolicyChanges  uint64  `json:"policy_transitions"`
	EngineChanges  uint64  `json:"engine_transitions"`
	RejectsGlobal  uint64  `json:"rejects_global"`
	BacklogRejects uint64  `json:"backlog_rejects"`
}

// GateRun is the connection flood against the listen gate.
type GateRun struct {
	Command string `json:"command"`
	// Samples are the server's stats every ~20 ms (its admin endpoint).
	Samples []GateSample `json:"samples"`
	// AcceptedPerSec is the flood's served connections per BinMillis bin,
	// per second, by the time their echo arrived; OfferedPerSec the
	// connections started per bin.
	BinMillis      float64        `json:"bin_ms"`
	AcceptedPerSec []float64      `json:"accepted_per_sec"`
	OfferedPerSec  []float64      `json:"offered_per_sec"`
	Outcomes       map[string]int `json:"outcomes"`
	// Transitions of the policy gate and of the engine's gate, and how many
	// times it closed, over the run.
	PolicyTransitions uint64 `json:"policy_transitions"`
	EngineTransitions uint64 `json:"engine_transitions"`
	Error             string `json:"error,omitempty"`
}

// BacklogRun is one flood against a full accept queue.
type BacklogRun struct {
	Round    int            `json:"round"`
	Outcomes map[string]int `json:"outcomes"`
	// Per outcome, the time from the connect call to the outcome.
	P50Millis map[string]float64 `json:"p50_ms"`
	P99Millis map[string]float64 `json:"p99_ms"`
	// Explicit is the fraction of connections that got an answer (served
	// or rejected) rather than a timeout or a silent close.
	Explicit float64 `json:"explicit"`
	Error    string  `json:"error,omitempty"`
}

// BacklogCell summarises one mode ("kernel drop" or "fast reject").
type BacklogCell struct {
	Mode    string       `json:"mode"`
	Command string       `json:"command"`
	Runs    []BacklogRun `json:"runs"`
	// Explicit and the p99 time to any outcome, medians over rounds.
	Explicit  Spread `json:"explicit"`
	P99Millis Spread `json:"p99_ms"`
}

// backlogRun summarises a flood's records.
func backlogRun(round int, res *ConnFloodResult) BacklogRun {
	r := BacklogRun{Round: round, Outcomes: res.Outcomes(), P50Millis: map[string]float64{}, P99Millis: map[string]float64{}}
	by := map[string][]float64{}
	var all []float64
	explicit := 0
	for _, c := range res.Records {
		if c.Outcome == "" {
			continue
		}
		ms := float64(c.AnswerNanos) / 1e6
		by[c.Outcome] = append(by[c.Outcome], ms)
		all = append(all, ms)
		if c.Outcome == OutcomeServed || c.Outcome == OutcomeReject {
			explicit++
		}
	}
	for k, v := range by {
		r.P50Millis[k], r.P99Millis[k] = quantile(v, 0.5), quantile(v, 0.99)
	}
	r.P99Millis["all"] = quantile(all, 0.99)
	r.P50Millis["all"] = quantile(all, 0.5)
	if len(all) > 0 {
		r.Explicit = float64(explicit) / float64(len(all))
	}
	return r
}

// quantile returns the q-quantile of v (nearest rank); v is sorted in place.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	i := int(q*float64(len(v))+0.5) - 1
	return v[max(0, min(i, len(v)-1))]
}

func (b *BacklogCell) summarize() {
	var ex, p99 []float64
	for _, r := range b.Runs {
		if r.Error == "" {
			ex = append(ex, r.Explicit)
			p99 = append(p99, r.P99Millis["all"])
		}
	}
	b.Explicit, b.P99Millis = spreadOf(ex), spreadOf(p99)
}

// acceptTimeline bins a flood's served connections by answer time and its
// starts by start time, per second, from t0 (Unix nanoseconds).
func acceptTimeline(res *ConnFloodResult, t0 int64, binMillis float64) (accepted, offered []float64) {
	bin := int64(binMillis * 1e6)
	var last int64
	for _, c := range res.Records {
		last = max(last, c.StartUnixNano+c.AnswerNanos)
	}
	n := int((last-t0)/bin) + 1
	if n <= 0 || n > 100000 {
		return nil, nil
	}
	accepted, offered = make([]float64, n), make([]float64, n)
	perSec := 1e3 / binMillis
	for _, c := range res.Records {
		if i := int((c.StartUnixNano - t0) / bin); i >= 0 && i < n {
			offered[i] += perSec
		}
		if c.Outcome == OutcomeServed {
			if i := int((c.StartUnixNano + c.AnswerNanos - t0) / bin); i >= 0 && i < n {
				accepted[i] += perSec
			}
		}
	}
	return accepted, offered
}
