package lab

import (
	"math"
	"sort"
	"time"

	"github.com/sluicenet/sluice/bench"
)

// Report is the outcome of a comparison: every run, the per-cell summaries,
// idle memory and system-call mixes, and what could not be measured.
type Report struct {
	Started  time.Time     `json:"started"`
	Finished time.Time     `json:"finished"`
	Machine  Machine       `json:"machine"`
	Config   CompareConfig `json:"config"`
	// Servers is every requested server, available or not.
	Servers   []ServerStatus `json:"servers"`
	Scenarios []Scenario     `json:"scenarios"`
	// Cells holds one entry per scenario and server, in matrix order.
	Cells    []Cell         `json:"cells"`
	Idle     []IdleResult   `json:"idle,omitempty"`
	Syscalls []SyscallMix   `json:"syscalls,omitempty"`
	Notes    []string       `json:"notes,omitempty"`
	OpenRate map[string]any `json:"open_rates,omitempty"`
}

// Machine describes where the comparison ran.
type Machine struct {
	CPUModel     string `json:"cpu_model"`
	CPUs         int    `json:"cpus"`
	Kernel       string `json:"kernel"`
	GoVersion    string `json:"go_version"`
	Clocksource  string `json:"clocksource,omitempty"`
	LoadAvgStart string `json:"loadavg_start"`
	LoadAvgEnd   string `json:"loadavg_end"`
}

// ServerStatus says whether a server took part, and if not, why.
type ServerStatus struct {
	Name      string `json:"name"`
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
	Command   string `json:"command,omitempty"`
}

// Cell is one scenario × server.
type Cell struct {
	Scenario string       `json:"scenario"`
	Server   string       `json:"server"`
	Runs     []Run        `json:"runs"`
	Summary  *CellSummary `json:"summary,omitempty"`
}

// Run is one round of a cell.
type Run struct {
	Round int `json:"round"`
	// RatePerSec is the offered rate of an open-loop run.
	RatePerSec float64           `json:"rate_per_sec,omitempty"`
	Error      string            `json:"error,omitempty"`
	Note       string            `json:"note,omitempty"`
	Result     *bench.LoadResult `json:"result,omitempty"`
}

// Spread is the median and range of a value over rounds.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// CellSummary summarises a cell's successful rounds: medians, with the range
// where drift matters.
type CellSummary struct {
	Rounds     int     `json:"rounds"`
	MsgsPerSec Spread  `json:"msgs_per_sec"`
	MBPerSec   float64 `json:"mb_per_sec"`
	// VsGnet is this server's msgs/s divided by gnet's in the same round, over
	// the rounds both completed; nil without gnet.
	VsGnet  *Spread              `json:"vs_gnet,omitempty"`
	Latency bench.LatencySummary `json:"latency"`
	// Open loop: median offered rate, and sums over rounds.
	OfferedPerSec    float64 `json:"offered_per_sec,omitempty"`
	Intended         int64   `json:"intended,omitempty"`
	Late             int64   `json:"late,omitempty"`
	Missed           int64   `json:"missed,omitempty"`
	SendLagP99Micros float64 `json:"send_lag_p99_us,omitempty"`
	// Costs per message (medians; -1 when unknown).
	ServerCPUMicrosPerMsg  float64 `json:"server_cpu_us_per_msg"`
	ServerCoreMicrosPerMsg float64 `json:"server_core_us_per_msg"`
	ServerSyscallsPerMsg   float64 `json:"server_syscalls_per_msg"`
	ClientCPUMicrosPerMsg  float64 `json:"client_cpu_us_per_msg"`
	// Busy fractions (medians): processes (1.0 = one core) and their cores.
	ServerUtil     float64 `json:"server_util"`
	ClientUtil     float64 `json:"client_util"`
	ServerCoreBusy float64 `json:"server_core_busy"`
	ClientCoreBusy float64 `json:"client_core_busy"`
	// Saturated names the side whose core ran out: "server", "client",
	// "both" or "neither" (see saturation).
	Saturated  string           `json:"saturated"`
	Errors     map[string]int64 `json:"errors,omitempty"`
	Unfinished int64            `json:"unfinished"`
	Dropped    int64            `json:"dropped"`
}

// saturationUtil is the busy fraction from which a side counts as saturated.
const saturationUtil = 0.9

// median returns the median of v (0 for none); v is sorted in place.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// spreadOf returns the median, minimum and maximum of v.
func spreadOf(v []float64) Spread {
	if len(v) == 0 {
		return Spread{}
	}
	c := append([]float64(nil), v...)
	m := median(c)
	return Spread{Median: m, Min: c[0], Max: c[len(c)-1]}
}

// summarize computes a cell's summary from its successful runs; gnet holds
// gnet's runs of the same scenario by round (nil without gnet). capServer and
// capClient are the cores each side may use.
func summarize(runs []Run, gnet map[int]*bench.LoadResult, capServer, capClient float64) *CellSummary {
	var ok []*bench.LoadResult
	var rounds []int
	for _, r := range runs {
		if r.Result != nil && r.Error == "" {
			ok = append(ok, r.Result)
			rounds = append(rounds, r.Round)
		}
	}
	if len(ok) == 0 {
		return nil
	}
	s := &CellSummary{Rounds: len(ok), Errors: map[string]int64{}}
	col := func(f func(*bench.LoadResult) float64) []float64 {
		out := make([]float64, 0, len(ok))
		for _, r := range ok {
			if v := f(r); !math.IsNaN(v) {
				out = append(out, v)
			}
		}
		return out
	}
	medOr := func(v []float64, none float64) float64 {
		if len(v) == 0 {
			return none
		}
		return median(v)
	}
	s.MsgsPerSec = spreadOf(col(func(r *bench.LoadResult) float64 { return r.MsgsPerSec }))
	s.MBPerSec = median(col(func(r *bench.LoadResult) float64 { return r.MBPerSec }))
	if gnet != nil {
		var ratios []float64
		for i, r := range ok {
			if g := gnet[rounds[i]]; g != nil && g.MsgsPerSec > 0 {
				ratios = append(ratios, r.MsgsPerSec/g.MsgsPerSec)
			}
		}
		if len(ratios) > 0 {
			sp := spreadOf(ratios)
			s.VsGnet = &sp
		}
	}
	s.Latency = bench.LatencySummary{
		Count:      int64(median(col(func(r *bench.LoadResult) float64 { return float64(r.Latency.Count) }))),
		MeanMicros: median(col(func(r *bench.LoadResult) float64 { return r.Latency.MeanMicros })),
		P50Micros:  median(col(func(r *bench.LoadResult) float64 { return r.Latency.P50Micros })),
		P90Micros:  median(col(func(r *bench.LoadResult) float64 { return r.Latency.P90Micros })),
		P99Micros:  median(col(func(r *bench.LoadResult) float64 { return r.Latency.P99Micros })),
		P999Micros: median(col(func(r *bench.LoadResult) float64 { return r.Latency.P999Micros })),
		MaxMicros:  median(col(func(r *bench.LoadResult) float64 { return r.Latency.MaxMicros })),
	}
	nan := math.NaN()
	server := func(f func(*bench.ProcUsage) float64) []float64 {
		return col(func(r *bench.LoadResult) float64 {
			if r.Server == nil {
				return nan
			}
			return f(r.Server)
		})
	}
	client := func(f func(*bench.ProcUsage) float64) []float64 {
		return col(func(r *bench.LoadResult) float64 {
			if r.Client == nil {
				return nan
			}
			return f(r.Client)
		})
	}
	core := func(role string, f func(bench.CoreUsage) float64) []float64 {
		return col(func(r *bench.LoadResult) float64 {
			// The busiest core of the role (one core when pinned to one).
			v := nan
			for _, c := range r.Cores {
				if c.Role == role && (math.IsNaN(v) || f(c) > v) {
					v = f(c)
				}
			}
			return v
		})
	}
	s.ServerCPUMicrosPerMsg = medOr(server(func(u *bench.ProcUsage) float64 { return u.CPUMicrosPerMsg }), -1)
	s.ServerSyscallsPerMsg = medOr(server(func(u *bench.ProcUsage) float64 {
		if u.SyscallsPerMsg < 0 {
			return nan
		}
		return u.SyscallsPerMsg
	}), -1)
	s.ClientCPUMicrosPerMsg = medOr(client(func(u *bench.ProcUsage) float64 { return u.CPUMicrosPerMsg }), -1)
	s.ServerUtil = medOr(server(func(u *bench.ProcUsage) float64 { return u.Util }), -1)
	s.ClientUtil = medOr(client(func(u *bench.ProcUsage) float64 { return u.Util }), -1)
	s.ServerCoreMicrosPerMsg = medOr(core("server", func(c bench.CoreUsage) float64 { return c.MicrosPerMsg }), -1)
	s.ServerCoreBusy = medOr(core("server", func(c bench.CoreUsage) float64 { return c.Busy }), -1)
	s.ClientCoreBusy = medOr(core("client", func(c bench.CoreUsage) float64 { return c.Busy }), -1)
	s.Saturated = saturation(s.ServerUtil, s.ClientUtil, s.ServerCoreBusy, s.ClientCoreBusy, capServer, capClient)

	s.OfferedPerSec = median(col(func(r *bench.LoadResult) float64 { return r.OfferedPerSec }))
	s.SendLagP99Micros = median(col(func(r *bench.LoadResult) float64 {
		if r.SendLag == nil {
			return nan
		}
		return r.SendLag.P99Micros
	}))
	for _, r := range ok {
		s.Intended += r.Intended
		s.Late += r.Late
		s.Missed += r.Missed
		s.Unfinished += r.Unfinished
		s.Dropped += r.Dropped
		for k, v := range r.Errors {
			s.Errors[k] += v
		}
	}
	return s
}

// saturation names the side whose core ran out: a side is saturated when its
// process used at least saturationUtil of the cores it may use, or when its
// (pinned) core was that busy with anything, the kernel's network processing
// and other people's work included.
func saturation(serverUtil, clientUtil, serverCore, clientCore, capServer, capClient float64) string {
	sv := serverUtil >= saturationUtil*capServer || serverCore >= saturationUtil
	cl := clientUtil >= saturationUtil*capClient || clientCore >= saturationUtil
	switch {
	case sv && cl:
		return "both"
	case sv:
		return "server"
	case cl:
		return "client"
	}
	return "neither"
}
