package lab

import (
	"sort"
	"time"
)

// MatrixReport is what Matrix measured: every run, and the cells Summarize
// derives from them.
type MatrixReport struct {
	Started  time.Time    `json:"started"`
	Finished time.Time    `json:"finished"`
	Machine  Machine      `json:"machine"`
	Config   MatrixConfig `json:"config"`
	// Commands are the server command lines, by mode and server.
	Commands map[string]string `json:"commands"`
	// Runs are every run, in the order they ran.
	Runs []MatrixRun `json:"runs"`
	// Cells summarise the runs (Summarize): one per mode, connection
	// count, work, server and factor.
	Cells []MatrixCell `json:"cells,omitempty"`
	Notes []string     `json:"notes,omitempty"`
}

// MatrixRun is one run of one server in one block: its capacity, its
// reference or one of its overload runs.
type MatrixRun struct {
	Round  int           `json:"round"`
	Mode   string        `json:"mode"`
	Conns  int           `json:"conns"`
	Work   time.Duration `json:"work_ns"`
	Server string        `json:"server"`
	// Kind is KindCapacity, KindReference or KindOverload.
	Kind string `json:"kind"`
	// Factor is the offered load as a multiple of the round's capacity
	// (the reference run's is MatrixConfig.RefFraction; 0 for capacity).
	Factor float64 `json:"factor,omitempty"`
	// RatePerSec is the open-loop rate; InFlight the closed loop's
	// requests in flight per connection.
	RatePerSec float64 `json:"rate_per_sec,omitempty"`
	InFlight   int     `json:"in_flight,omitempty"`
	// WindowSec is the measured window, TimeoutSec the generator's
	// response timeout.
	WindowSec  float64    `json:"window_sec"`
	TimeoutSec float64    `json:"timeout_sec"`
	Load       *LoadBrief `json:"load,omitempty"`
	// Unanswered counts the requests of the window that got no answer:
	// sends the generator could not issue because the connection already
	// had its requests in flight or had failed (Missed), and requests lost
	// with a failed connection, timeouts included (Dropped). Answered is
	// true when there were none and no connection failed; requests still
	// in flight when the window closed (Load.Unfinished) are not judged.
	Unanswered int64 `json:"unanswered"`
	Answered   bool  `json:"answered"`
	// Balance is, for an open-loop run, the sends intended in the window
	// minus everything the generator accounted for: served, refused,
	// missed, lost with a failed connection and in flight at the end. The
	// generator counts answers by when they arrive, so the requests in
	// flight when the window opened make it negative: a few for a server
	// that answers promptly, up to 64 per connection for one that queues.
	Balance int64 `json:"balance,omitempty"`
	// PeakRSSKiB is the server's peak resident memory (VmHWM) over its
	// life: a fresh process per run, so start-up, warm-up and this run.
	PeakRSSKiB int64 `json:"peak_rss_kib,omitempty"`
	// ServerSysShare is the kernel's share of the server's CPU time
	// (stime over utime+stime) over the whole generator run, dialling and
	// warm-up included; 0 when not read.
	ServerSysShare float64 `json:"server_sys_share,omitempty"`
	// RefuseShare is the server's sluice_refuse_share_ratio over the
	// window, read in the hammer runs of the sluice servers only (nil
	// otherwise, and in reports written before it was read).
	RefuseShare *RefuseShare `json:"refuse_share,omitempty"`
	Error       string       `json:"error,omitempty"`
}

// account sets Unanswered and Answered from the run's Load.
func (r *MatrixRun) account() {
	r.Unanswered, r.Answered, r.Balance = 0, false, 0
	b := r.Load
	if b == nil {
		return
	}
	var errs int64
	for _, n := range b.Errors {
		errs += n
	}
	r.Unanswered = b.Missed + b.Dropped
	r.Answered = r.Unanswered == 0 && errs == 0
	r.Balance = 0
	if b.Intended > 0 {
		r.Balance = b.Intended - (b.Msgs + b.Rejected + b.Missed + b.Dropped + b.Unfinished)
	}
}

// MatrixCell summarises one mode, connection count, work, server and
// factor over the rounds: medians with the range. The ratios are paired by
// round: goodput over the capacity of the same round, the overload p99 over
// the reference p99 of the same round.
type MatrixCell struct {
	Mode   string        `json:"mode"`
	Conns  int           `json:"conns"`
	Work   time.Duration `json:"work_ns"`
	Server string        `json:"server"`
	Factor float64       `json:"factor"`
	// Rounds counts the rounds with both ratios.
	Rounds       int    `json:"rounds"`
	Capacity     Spread `json:"capacity"`
	RefP99       Spread `json:"ref_p99_us"`
	OverloadP99  Spread `json:"overload_p99_us"`
	GoodputRatio Spread `json:"goodput_ratio"`
	P99Ratio     Spread `json:"p99_ratio"`
	Rejected     Spread `json:"rejected_per_sec"`
	PeakRSS      Spread `json:"peak_rss_kib"`
	// Unanswered is the most unanswered requests of an overload run;
	// AllAnswered is true when every overload run of the cell with a result
	// answered everything. Failed counts the overload runs without a
	// result (the run, its server or its capacity run failed).
	Unanswered  int64 `json:"unanswered"`
	AllAnswered bool  `json:"all_answered"`
	Failed      int   `json:"failed,omitempty"`
	// RefSamples and OverloadSamples are the fewest served requests behind
	// a reference and an overload p99.
	RefSamples      int64 `json:"ref_samples"`
	OverloadSamples int64 `json:"overload_samples"`
	// Late is the largest share of an overload run's sends the generator
	// issued late (more than 1 ms after their intended time).
	Late float64 `json:"late"`
	// GeneratorBusy is the largest share of its CPUs the generator used in
	// an overload run (its CPU time over the run, over the CPUs it was
	// pinned to; 0 when not measured).
	GeneratorBusy float64 `json:"generator_busy,omitempty"`
	// Errors are the runs' error messages.
	Errors []string `json:"errors,omitempty"`
}

// GeneratorSaturated reports whether the generator used at least
// MatrixGeneratorSaturated of its CPUs in one of the cell's overload runs.
func (c *MatrixCell) GeneratorSaturated() bool {
	return c.GeneratorBusy >= MatrixGeneratorSaturated
}

// GoodputMet, P99Met and Met judge the cell's medians against the targets.
func (c *MatrixCell) GoodputMet() bool {
	return c.Rounds > 0 && c.GoodputRatio.Median >= MatrixGoodputTarget
}

// P99Met reports whether the median p99 ratio is within MatrixP99Target
// (a ratio of 0: nothing was served, so there is no p99 to meet it).
func (c *MatrixCell) P99Met() bool {
	return c.Rounds > 0 && c.P99Ratio.Median > 0 && c.P99Ratio.Median <= MatrixP99Target
}

// Met reports whether the cell meets all three targets in every round:
// a round that failed counts against it.
func (c *MatrixCell) Met() bool {
	return c.GoodputMet() && c.P99Met() && c.AllAnswered && c.Failed == 0
}

// matrixKey names a cell.
type matrixKey struct {
	mode   string
	conns  int
	work   time.Duration
	server string
	factor float64
}

// roundKey names one server's runs of one block.
type roundKey struct {
	round  int
	mode   string
	conns  int
	work   time.Duration
	server string
}

// Summarize recomputes the runs' accounts (MatrixRun.Answered) and the
// report's cells from the runs, ordered by mode, connection count, work,
// server and factor as the configuration lists them.
func (rep *MatrixReport) Summarize() {
	capacity := map[roundKey]*MatrixRun{}
	reference := map[roundKey]*MatrixRun{}
	for i := range rep.Runs {
		r := &rep.Runs[i]
		r.account()
		k := roundKey{r.Round, r.Mode, r.Conns, r.Work, r.Server}
		switch r.Kind {
		case KindCapacity:
			capacity[k] = r
		case KindReference:
			reference[k] = r
		}
	}
	type acc struct {
		cell                                 MatrixCell
		capa, ref, op99, good, p99, rej, rss []float64
	}
	cells := map[matrixKey]*acc{}
	for i := range rep.Runs {
		r := &rep.Runs[i]
		if r.Kind != KindOverload {
			continue
		}
		k := matrixKey{r.Mode, r.Conns, r.Work, r.Server, r.Factor}
		a := cells[k]
		if a == nil {
			a = &acc{cell: MatrixCell{Mode: r.Mode, Conns: r.Conns, Work: r.Work, Server: r.Server, Factor: r.Factor, AllAnswered: true, RefSamples: -1, OverloadSamples: -1}}
			cells[k] = a
		}
		c := &a.cell
		if r.Error != "" {
			c.Errors = append(c.Errors, r.Error)
		}
		rk := roundKey{r.Round, r.Mode, r.Conns, r.Work, r.Server}
		cp, rf, ov := capacity[rk], reference[rk], r.Load
		if ov == nil {
			c.Failed++
			continue
		}
		if !r.Answered {
			c.AllAnswered = false
		}
		c.Unanswered = max(c.Unanswered, r.Unanswered)
		if r.PeakRSSKiB > 0 {
			a.rss = append(a.rss, float64(r.PeakRSSKiB))
		}
		a.op99 = append(a.op99, ov.Latency.P99Micros)
		a.rej = append(a.rej, ov.RejectedPerSec)
		c.OverloadSamples = minSamples(c.OverloadSamples, ov.Latency.Count)
		if ov.Intended > 0 {
			c.Late = max(c.Late, float64(ov.Late)/float64(ov.Intended))
		}
		c.GeneratorBusy = max(c.GeneratorBusy, ov.ClientUtil/float64(max(1, len(rep.Config.ClientCPUs))))
		if cp == nil || cp.Load == nil || cp.Load.MsgsPerSec <= 0 || rf == nil || rf.Load == nil || rf.Load.Latency.P99Micros <= 0 {
			continue
		}
		a.capa = append(a.capa, cp.Load.MsgsPerSec)
		a.ref = append(a.ref, rf.Load.Latency.P99Micros)
		c.RefSamples = minSamples(c.RefSamples, rf.Load.Latency.Count)
		a.good = append(a.good, ov.MsgsPerSec/cp.Load.MsgsPerSec)
		a.p99 = append(a.p99, ov.Latency.P99Micros/rf.Load.Latency.P99Micros)
	}
	rep.Cells = rep.Cells[:0]
	for _, a := range cells {
		c := a.cell
		c.Rounds = len(a.good)
		c.Capacity, c.RefP99, c.OverloadP99 = spreadOf(a.capa), spreadOf(a.ref), spreadOf(a.op99)
		c.GoodputRatio, c.P99Ratio, c.Rejected, c.PeakRSS = spreadOf(a.good), spreadOf(a.p99), spreadOf(a.rej), spreadOf(a.rss)
		c.RefSamples, c.OverloadSamples = max(c.RefSamples, 0), max(c.OverloadSamples, 0)
		rep.Cells = append(rep.Cells, c)
	}
	order := rep.Config.order()
	sort.Slice(rep.Cells, func(i, j int) bool { return order.less(&rep.Cells[i], &rep.Cells[j]) })
}

// minSamples is the smaller of a running minimum (-1: none yet) and n.
func minSamples(cur, n int64) int64 {
	if cur < 0 || n < cur {
		return n
	}
	return cur
}

// cellOrder ranks the values of each dimension as the configuration lists
// them; values it does not list come after, in their natural order.
type cellOrder struct {
	modes   map[string]int
	conns   map[int]int
	works   map[time.Duration]int
	servers map[string]int
	factors map[float64]int
}

func (c *MatrixConfig) order() cellOrder {
	o := cellOrder{map[string]int{}, map[int]int{}, map[time.Duration]int{}, map[string]int{}, map[float64]int{}}
	for i, v := range c.Modes {
		o.modes[v] = i + 1
	}
	for i, v := range c.Conns {
		o.conns[v] = i + 1
	}
	for i, v := range c.Works {
		o.works[v] = i + 1
	}
	for i, v := range c.Servers {
		o.servers[v] = i + 1
	}
	for i, v := range c.Factors {
		o.factors[v] = i + 1
	}
	return o
}

// rank compares two values by their listed ranks (unlisted: last), then
// by natural order: -1, 0 or 1.
func rank[K comparable](m map[K]int, a, b K, natural func(a, b K) bool) int {
	ra, rb := m[a], m[b]
	if ra == 0 {
		ra = len(m) + 1
	}
	if rb == 0 {
		rb = len(m) + 1
	}
	switch {
	case ra != rb:
		return cmpInt(ra, rb)
	case natural(a, b):
		return -1
	case natural(b, a):
		return 1
	}
	return 0
}

func cmpInt(a, b int) int {
	if a < b {
		return -1
	}
	return 1
}

func (o cellOrder) less(a, b *MatrixCell) bool {
	for _, c := range []int{
		rank(o.modes, a.Mode, b.Mode, func(x, y string) bool { return x < y }),
		rank(o.conns, a.Conns, b.Conns, func(x, y int) bool { return x < y }),
		rank(o.works, a.Work, b.Work, func(x, y time.Duration) bool { return x < y }),
		rank(o.servers, a.Server, b.Server, func(x, y string) bool { return x < y }),
		rank(o.factors, a.Factor, b.Factor, func(x, y float64) bool { return x < y }),
	} {
		if c != 0 {
			return c < 0
		}
	}
	return false
}
