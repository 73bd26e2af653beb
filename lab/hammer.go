package lab

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicenet/sluice/bench"
)

// KindHammer is a closed-loop run of a server under test in a hammer
// cell: C connections, each keeping D requests in flight, every answer
// (served or refused) sending the next request at once.
const KindHammer = "hammer"

// The targets of the hammer cells besides the matrix's goodput and p99
// (docs/OVERLOAD.md, issue 30): the time to a refusal, p99, at most
// HammerRefusalP99Target wherever the work per frame is at most
// HammerRefusalMaxWork.
const (
	HammerRefusalP99Target = 250 * time.Millisecond
	HammerRefusalMaxWork   = 2 * time.Millisecond
)

// HammerRefuseShareTarget is the most of a sluice loop's busy time its
// refused frames may take in a hammer cell (issue 30), judged on the mean
// of the run's sluice_refuse_share_ratio readings (RefuseShare).
const HammerRefuseShareTarget = 0.15

// RefuseShareMetric is the sluice server's gauge of the part of a loop's
// last busy window (at least 100 ms) spent on frames it refused, the
// largest over the loops, from 0 to 1 (docs/OBSERVABILITY.md).
const RefuseShareMetric = "sluice_refuse_share_ratio"

// RefuseShareEvery is how often a hammer run reads RefuseShareMetric: the
// gauge holds one busy window's share, so the run averages readings
// across its window rather than trusting the last one.
const RefuseShareEvery = 250 * time.Millisecond

// RefuseShare is what a run read of RefuseShareMetric in its measured
// window: the Mean and the Max of its Samples, each a busy window's share.
type RefuseShare struct {
	Mean    float64 `json:"mean"`
	Max     float64 `json:"max"`
	Samples int     `json:"samples"`
}

// refuseShareOf aggregates readings of RefuseShareMetric (nil for none).
func refuseShareOf(v []float64) *RefuseShare {
	if len(v) == 0 {
		return nil
	}
	s := &RefuseShare{Samples: len(v)}
	for _, x := range v {
		s.Mean += x
		s.Max = max(s.Max, x)
	}
	s.Mean /= float64(len(v))
	return s
}

// promGauge returns the value of the sample named name in a Prometheus
// text exposition: the largest when several series carry it (as
// RefuseShareMetric is the largest over the loops), an error when none
// does or a value does not parse.
func promGauge(text, name string) (float64, error) {
	v, found := 0.0, false
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || rest[0] != ' ' && rest[0] != '\t' && rest[0] != '{' {
			continue // a comment, another metric, or one whose name only starts with name
		}
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				return 0, fmt.Errorf("sluice: bench: %s: unterminated labels in %q", name, truncate(line, 120))
			}
			rest = rest[end+1:]
		}
		f := strings.Fields(rest) // the value, then an optional timestamp
		if len(f) == 0 {
			return 0, fmt.Errorf("sluice: bench: %s: no value in %q", name, truncate(line, 120))
		}
		x, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, fmt.Errorf("sluice: bench: %s: %w", name, err)
		}
		if !found || x > v {
			v = x
		}
		found = true
	}
	if !found {
		return 0, fmt.Errorf("sluice: bench: no %s in the server's metrics", name)
	}
	return v, nil
}

// HammerShape is a hammer cell's closed loop: Conns connections, each with
// InFlight requests in flight.
type HammerShape struct {
	Conns    int `json:"conns"`
	InFlight int `json:"in_flight"`
}

// String returns the shape as ParseHammerShape reads it: "1000x8".
func (s HammerShape) String() string { return fmt.Sprintf("%dx%d", s.Conns, s.InFlight) }

// text prints the shape as the report does: "1,000 × 8".
func (s HammerShape) text() string {
	return groupThousands(s.Conns) + " × " + strconv.Itoa(s.InFlight)
}

// ParseHammerShape parses "CONNSxINFLIGHT" ("1000x8"; "×" or "X" also
// separate them), both positive.
func ParseHammerShape(s string) (HammerShape, error) {
	t := strings.NewReplacer("×", "x", "X", "x").Replace(strings.TrimSpace(s))
	a, b, ok := strings.Cut(t, "x")
	c, err1 := strconv.Atoi(a)
	d, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || c < 1 || d < 1 {
		return HammerShape{}, fmt.Errorf("%w: hammer cell %q: want CONNSxINFLIGHT, e.g. 1000x8", bench.ErrInvalidConfig, s)
	}
	return HammerShape{Conns: c, InFlight: d}, nil
}

// ParseHammerShapes parses a comma-separated list of shapes (empty: nil).
func ParseHammerShapes(list string) ([]HammerShape, error) {
	var out []HammerShape
	for _, f := range strings.Split(list, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		s, err := ParseHammerShape(f)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// DefaultHammerShapes are the hammer cells of issue 30: 1,000 connections
// with 8 and with 64 requests in flight each, and 64 with 64.
var DefaultHammerShapes = []HammerShape{{1000, 8}, {1000, 64}, {64, 64}}

// DefaultHammerWorks are the hammer cells' works per frame: the matrix's
// up to 2 ms (at 20 ms, 64,000 requests in flight queue 21 minutes of
// work).
var DefaultHammerWorks = []time.Duration{50 * time.Microsecond, 200 * time.Microsecond, 2 * time.Millisecond}

// HammerConfig describes the hammer cells (Hammer): every server at every
// shape, work per frame and work mode in a closed loop, its goodput against
// the capacity of the same sluice server without shedding at the same
// shape in the same round, and its admitted p99 against its own p99 at
// RefFraction of that capacity. Zero optional fields take the defaults the
// comments name.
type HammerConfig struct {
	// ModuleDir, SluiceDir, GoCmd, BenchBin and BenchEnv are as in
	// CompareConfig.
	ModuleDir string   `json:"-"`
	SluiceDir string   `json:"-"`
	GoCmd     string   `json:"-"`
	BenchBin  string   `json:"-"`
	BenchEnv  []string `json:"-"`

	// Rounds (0: 2); within a round the servers alternate in every phase
	// of every block.
	Rounds int `json:"rounds"`
	// ServerCPUs and ClientCPUs pin the servers and the generator (nil: CPU
	// 0 and CPU 1); ClientProcs splits the generator into processes over
	// ClientCPUs (0: one per CPU; OverloadConfig.ClientProcs).
	ServerCPUs  []int `json:"server_cpus"`
	ClientCPUs  []int `json:"client_cpus"`
	ClientProcs int   `json:"client_procs,omitempty"`

	// Servers under test (nil: sluice-shed-default, gnet, net; also
	// sluice-shed, sluice-shed-tight and sluice-noshed). Capacity is always
	// sluice-noshed's, whatever the servers.
	Servers []string `json:"servers"`
	// Shapes are the closed loops (nil: DefaultHammerShapes).
	Shapes []HammerShape `json:"shapes"`
	// Works are the simulated CPU costs per frame (nil:
	// DefaultHammerWorks).
	Works []time.Duration `json:"works_ns"`
	// Modes are cmd/echo's work modes (nil: inline and pool); pool blocks
	// hold the sluice servers only.
	Modes []string `json:"modes"`
	// RefFraction is the reference run's open-loop load, a fraction of
	// the round's capacity, over the shape's connections (0: 0.5).
	// NoReference leaves the reference runs out (and the p99 unjudged).
	RefFraction float64 `json:"ref_fraction"`
	NoReference bool    `json:"no_reference,omitempty"`
	// Size is the payload of every request (0: 64 bytes).
	Size int `json:"size"`
	// Warmup, Duration and MinSamples are as in MatrixConfig (0: 1s, 3s,
	// 1,000).
	Warmup     time.Duration `json:"warmup_ns"`
	Duration   time.Duration `json:"duration_ns"`
	MinSamples int           `json:"min_samples"`
	// ShedArgs and TightShedArgs are as in MatrixConfig.
	ShedArgs      []string `json:"shed_args,omitempty"`
	TightShedArgs []string `json:"tight_shed_args,omitempty"`
	// Reconnect has the closed loops dial a connection the server closed
	// with a final refusal again once its retry-after has passed, as a
	// client honouring it would (default: it stays closed, and the loop
	// runs on with fewer connections).
	Reconnect bool `json:"reconnect,omitempty"`

	// Progress, when non-nil, receives a line per run.
	Progress io.Writer `json:"-"`
	// Checkpoint, when non-nil, is called with the report after every
	// block (Hammer's prev resumes from what it saved).
	Checkpoint func(*HammerReport) `json:"-"`
}

func (c HammerConfig) withDefaults() HammerConfig {
	m := MatrixConfig{GoCmd: c.GoCmd, ServerCPUs: c.ServerCPUs, ClientCPUs: c.ClientCPUs, Servers: c.Servers, Modes: c.Modes,
		RefFraction: c.RefFraction, Size: c.Size, Warmup: c.Warmup, Duration: c.Duration, MinSamples: c.MinSamples,
		ShedArgs: c.ShedArgs, TightShedArgs: c.TightShedArgs, Rounds: c.Rounds}.withDefaults()
	c.GoCmd, c.ServerCPUs, c.ClientCPUs, c.Servers, c.Modes = m.GoCmd, m.ServerCPUs, m.ClientCPUs, m.Servers, m.Modes
	c.RefFraction, c.Size, c.Warmup, c.Duration, c.MinSamples = m.RefFraction, m.Size, m.Warmup, m.Duration, m.MinSamples
	c.ShedArgs, c.TightShedArgs = m.ShedArgs, m.TightShedArgs
	if c.Rounds == 0 {
		c.Rounds = 2
	}
	if len(c.Shapes) == 0 {
		c.Shapes = append([]HammerShape(nil), DefaultHammerShapes...)
	}
	if len(c.Works) == 0 {
		c.Works = append([]time.Duration(nil), DefaultHammerWorks...)
	}
	return c
}

// Validate reports a configuration that cannot run.
func (c *HammerConfig) Validate() error {
	m := MatrixConfig{Rounds: c.Rounds, Servers: c.Servers, Modes: c.Modes, Works: c.Works, RefFraction: c.RefFraction,
		Size: c.Size, Warmup: c.Warmup, Duration: c.Duration, MinSamples: c.MinSamples, ClientProcs: c.ClientProcs}
	if err := m.Validate(); err != nil {
		return err
	}
	for _, s := range c.Shapes {
		if s.Conns < 1 || s.InFlight < 1 {
			return fmt.Errorf("%w: hammer cell %v", bench.ErrInvalidConfig, s)
		}
	}
	return nil
}

// HammerBlock is one round's runs of one work mode, shape and work: the
// capacity, then each server's reference run, then each server under the
// hammer, the servers alternating in each phase.
type HammerBlock struct {
	Round   int
	Mode    string
	Shape   HammerShape
	Work    time.Duration
	Servers []string
}

// Plan returns the blocks in the order they run: rounds outermost, then
// modes, shapes and works. Pool blocks hold only the sluice servers; a
// pool block without one is left out.
func (c *HammerConfig) Plan() []HammerBlock {
	var plan []HammerBlock
	for r := 1; r <= c.Rounds; r++ {
		for _, m := range c.Modes {
			servers := serversFor(m, c.Servers)
			if len(servers) == 0 {
				continue
			}
			for _, sh := range c.Shapes {
				for _, w := range c.Works {
					plan = append(plan, HammerBlock{Round: r, Mode: m, Shape: sh, Work: w, Servers: servers})
				}
			}
		}
	}
	return plan
}

// hammerBlockKey names a block of the plan.
type hammerBlockKey struct {
	round int
	mode  string
	shape HammerShape
	work  time.Duration
}

// pendingHammerBlocks returns the blocks of plan that runs has none of.
func pendingHammerBlocks(plan []HammerBlock, runs []HammerRun) []HammerBlock {
	done := map[hammerBlockKey]bool{}
	for _, r := range runs {
		done[hammerBlockKey{r.Round, r.Mode, r.Shape, r.Work}] = true
	}
	var out []HammerBlock
	for _, b := range plan {
		if !done[hammerBlockKey{b.Round, b.Mode, b.Shape, b.Work}] {
			out = append(out, b)
		}
	}
	return out
}

// hammerBlockTime is a block's expected time: its runs' warm-up and
// window and a second each to start and stop.
func hammerBlockTime(b HammerBlock, c HammerConfig) time.Duration {
	capacity := float64(len(c.ServerCPUs)) / b.Work.Seconds()
	closed := c.Warmup + time.Second + window(c.Duration, c.MinSamples, capacity)
	d := closed * time.Duration(1+len(b.Servers))
	if !c.NoReference {
		d += time.Duration(len(b.Servers)) * (c.Warmup + time.Second + window(c.Duration, c.MinSamples, c.RefFraction*capacity))
	}
	return d
}

// HammerReport is what Hammer measured: every run, and the cells
// Summarize derives from them.
type HammerReport struct {
	Started  time.Time    `json:"started"`
	Finished time.Time    `json:"finished"`
	Machine  Machine      `json:"machine"`
	Config   HammerConfig `json:"config"`
	// Commands are the server command lines, by mode and server.
	Commands map[string]string `json:"commands"`
	// Runs are every run, in the order they ran.
	Runs []HammerRun `json:"runs"`
	// Cells summarise the runs: one per mode, shape, work and server.
	Cells []HammerCell `json:"cells,omitempty"`
	Notes []string     `json:"notes,omitempty"`
}

// HammerRun is one run of a hammer block: the capacity (Server
// sluice-noshed, Kind KindCapacity), a server's reference (KindReference:
// an open loop over Shape.Conns connections) or a server under the hammer
// (KindHammer). Conns and InFlight are the run's own; Shape is the
// block's.
type HammerRun struct {
	MatrixRun
	Shape HammerShape `json:"shape"`
}

// HammerCell summarises one mode, shape, work and server over the rounds:
// medians with the range, the ratios paired by round (goodput over the
// capacity of the same round, the admitted p99 over the server's
// reference p99 of the same round).
type HammerCell struct {
	Mode   string        `json:"mode"`
	Shape  HammerShape   `json:"shape"`
	Work   time.Duration `json:"work_ns"`
	Server string        `json:"server"`
	// Rounds counts the rounds with a goodput ratio.
	Rounds       int    `json:"rounds"`
	Capacity     Spread `json:"capacity"`
	Goodput      Spread `json:"goodput"`
	GoodputRatio Spread `json:"goodput_ratio"`
	// P99 is the admitted (served) requests' p99, µs; RefP99 the
	// reference's; P99Ratio their ratio (none without a reference).
	P99      Spread `json:"p99_us"`
	RefP99   Spread `json:"ref_p99_us"`
	P99Ratio Spread `json:"p99_ratio"`
	// Refused is refusals per second; RefusalP50 and RefusalP99 the time
	// to a refusal (the generator's RejectLatency), µs.
	Refused    Spread `json:"refused_per_sec"`
	RefusalP50 Spread `json:"refusal_p50_us"`
	RefusalP99 Spread `json:"refusal_p99_us"`
	// ServerUtil is the server's CPU in the window (1 = a core);
	// ServerSysShare the kernel's share of its CPU time over the whole
	// run; ServerMicrosPerAnswer its CPU µs per answer, served or refused.
	ServerUtil            Spread `json:"server_util"`
	ServerSysShare        Spread `json:"server_sys_share"`
	ServerMicrosPerAnswer Spread `json:"server_us_per_answer"`
	PeakRSS               Spread `json:"peak_rss_kib"`
	// RefuseShare is the runs' mean RefuseShareMetric, over the
	// RefuseShareRounds rounds that read it (0: not measured, as for gnet
	// and net); RefuseShareMax the largest reading of any round.
	RefuseShare       Spread  `json:"refuse_share"`
	RefuseShareMax    float64 `json:"refuse_share_max,omitempty"`
	RefuseShareRounds int     `json:"refuse_share_rounds,omitempty"`
	// Dropped is the most requests of a round lost with failed
	// connections (MatrixRun.Unanswered), ConnErrors the most connection
	// failures of a round, Unfinished the most requests still in flight
	// when a window closed (a closed loop always has some: not judged).
	// AllAnswered is true when no round lost a request or a connection.
	Dropped     int64 `json:"dropped"`
	ConnErrors  int64 `json:"conn_errors"`
	Unfinished  int64 `json:"unfinished"`
	AllAnswered bool  `json:"all_answered"`
	// GoAways is the most connections of a round closed with a final
	// refusal, Reconnects the most redials of a round (Reconnect).
	GoAways    int `json:"goaways,omitempty"`
	Reconnects int `json:"reconnects,omitempty"`
	// Failed counts hammer runs without a result.
	Failed int `json:"failed,omitempty"`
	// GeneratorBusy is the largest share of its CPUs the generator used.
	GeneratorBusy float64  `json:"generator_busy,omitempty"`
	Errors        []string `json:"errors,omitempty"`
}

// GoodputMet reports whether the median goodput is at least
// MatrixGoodputTarget of capacity.
func (c *HammerCell) GoodputMet() bool {
	return c.Rounds > 0 && c.GoodputRatio.Median >= MatrixGoodputTarget
}

// P99Met reports whether the median p99 ratio is within MatrixP99Target
// (without a reference it cannot be; the ratio needs no capacity).
func (c *HammerCell) P99Met() bool {
	return c.P99Ratio.Median > 0 && c.P99Ratio.Median <= MatrixP99Target
}

// RefusalMet reports whether the median time to a refusal, p99, is within
// HammerRefusalP99Target, or the cell's work is above
// HammerRefusalMaxWork, or nothing was refused.
func (c *HammerCell) RefusalMet() bool {
	return c.Work > HammerRefusalMaxWork || c.RefusalP99.Median <= float64(HammerRefusalP99Target/time.Microsecond)
}

// RefuseShareMet reports whether the median of the runs' mean
// RefuseShareMetric is within HammerRefuseShareTarget, or it was not
// measured (a server without the gauge is not judged on it).
func (c *HammerCell) RefuseShareMet() bool {
	return c.RefuseShareRounds == 0 || c.RefuseShare.Median <= HammerRefuseShareTarget
}

// Met reports whether the cell meets every target in every round.
func (c *HammerCell) Met() bool {
	return c.GoodputMet() && c.P99Met() && c.RefusalMet() && c.RefuseShareMet() && c.AllAnswered && c.Failed == 0
}

// hammerCellKey names a cell.
type hammerCellKey struct {
	mode   string
	shape  HammerShape
	work   time.Duration
	server string
}

// Summarize recomputes the runs' accounts and the cells, ordered by mode,
// shape, work and server as the configuration lists them.
func (rep *HammerReport) Summarize() {
	type rk struct {
		hammerBlockKey
		server string
	}
	capacity := map[hammerBlockKey]*HammerRun{}
	reference := map[rk]*HammerRun{}
	for i := range rep.Runs {
		r := &rep.Runs[i]
		r.account()
		bk := hammerBlockKey{r.Round, r.Mode, r.Shape, r.Work}
		switch r.Kind {
		case KindCapacity:
			capacity[bk] = r
		case KindReference:
			reference[rk{bk, r.Server}] = r
		}
	}
	type acc struct {
		cell                                   HammerCell
		capa, good, ratio, p99, ref, p99r, rej []float64
		rp50, rp99, util, sys, perAnswer, rss  []float64
		share                                  []float64
	}
	cells := map[hammerCellKey]*acc{}
	var order []hammerCellKey
	for i := range rep.Runs {
		r := &rep.Runs[i]
		if r.Kind != KindHammer {
			continue
		}
		k := hammerCellKey{r.Mode, r.Shape, r.Work, r.Server}
		a := cells[k]
		if a == nil {
			a = &acc{cell: HammerCell{Mode: r.Mode, Shape: r.Shape, Work: r.Work, Server: r.Server, AllAnswered: true}}
			cells[k] = a
			order = append(order, k)
		}
		c := &a.cell
		if r.Error != "" {
			c.Errors = append(c.Errors, r.Error)
		}
		l := r.Load
		if l == nil {
			c.Failed++
			continue
		}
		var errs int64
		for _, n := range l.Errors {
			errs += n
		}
		c.Dropped = max(c.Dropped, r.Unanswered)
		c.ConnErrors = max(c.ConnErrors, errs)
		c.Unfinished = max(c.Unfinished, l.Unfinished)
		c.GoAways, c.Reconnects = max(c.GoAways, l.GoAways), max(c.Reconnects, l.Reconnects)
		c.AllAnswered = c.AllAnswered && r.Answered
		c.GeneratorBusy = max(c.GeneratorBusy, l.ClientUtil/float64(max(1, len(rep.Config.ClientCPUs))))
		a.good = append(a.good, l.MsgsPerSec)
		a.p99 = append(a.p99, l.Latency.P99Micros)
		a.rej = append(a.rej, l.RejectedPerSec)
		if rl := l.RejectLatency; rl != nil {
			a.rp50 = append(a.rp50, rl.P50Micros)
			a.rp99 = append(a.rp99, rl.P99Micros)
		}
		if l.ServerUtil > 0 {
			a.util = append(a.util, l.ServerUtil)
		}
		if r.ServerSysShare > 0 {
			a.sys = append(a.sys, r.ServerSysShare)
		}
		if l.ServerMicrosPerMsg > 0 && l.Msgs+l.Rejected > 0 {
			a.perAnswer = append(a.perAnswer, l.ServerMicrosPerMsg*float64(l.Msgs)/float64(l.Msgs+l.Rejected))
		}
		if r.PeakRSSKiB > 0 {
			a.rss = append(a.rss, float64(r.PeakRSSKiB))
		}
		if rs := r.RefuseShare; rs != nil && rs.Samples > 0 {
			a.share = append(a.share, rs.Mean)
			c.RefuseShareMax = max(c.RefuseShareMax, rs.Max)
		}
		bk := hammerBlockKey{r.Round, r.Mode, r.Shape, r.Work}
		if cp := capacity[bk]; cp != nil && cp.Load != nil && cp.Error == "" && cp.Load.MsgsPerSec > 0 {
			a.capa = append(a.capa, cp.Load.MsgsPerSec)
			a.ratio = append(a.ratio, l.MsgsPerSec/cp.Load.MsgsPerSec)
		}
		if rf := reference[rk{bk, r.Server}]; rf != nil && rf.Load != nil && rf.Load.Latency.P99Micros > 0 {
			a.ref = append(a.ref, rf.Load.Latency.P99Micros)
			if l.Latency.P99Micros > 0 {
				a.p99r = append(a.p99r, l.Latency.P99Micros/rf.Load.Latency.P99Micros)
			}
		}
	}
	rep.Cells = rep.Cells[:0]
	for _, k := range order {
		a := cells[k]
		c := a.cell
		c.Rounds = len(a.ratio)
		c.Capacity, c.Goodput, c.GoodputRatio = spreadOf(a.capa), spreadOf(a.good), spreadOf(a.ratio)
		c.P99, c.RefP99, c.P99Ratio = spreadOf(a.p99), spreadOf(a.ref), spreadOf(a.p99r)
		c.Refused, c.RefusalP50, c.RefusalP99 = spreadOf(a.rej), spreadOf(a.rp50), spreadOf(a.rp99)
		c.ServerUtil, c.ServerSysShare, c.ServerMicrosPerAnswer, c.PeakRSS = spreadOf(a.util), spreadOf(a.sys), spreadOf(a.perAnswer), spreadOf(a.rss)
		c.RefuseShare, c.RefuseShareRounds = spreadOf(a.share), len(a.share)
		rep.Cells = append(rep.Cells, c)
	}
	o := rep.Config.order()
	sort.SliceStable(rep.Cells, func(i, j int) bool { return o.less(&rep.Cells[i], &rep.Cells[j]) })
}

// hammerOrder ranks each dimension's values as the configuration lists
// them (unlisted: last, in natural order).
type hammerOrder struct {
	modes   map[string]int
	shapes  map[HammerShape]int
	works   map[time.Duration]int
	servers map[string]int
}

func (c *HammerConfig) order() hammerOrder {
	o := hammerOrder{map[string]int{}, map[HammerShape]int{}, map[time.Duration]int{}, map[string]int{}}
	for i, v := range c.Modes {
		o.modes[v] = i + 1
	}
	for i, v := range c.Shapes {
		o.shapes[v] = i + 1
	}
	for i, v := range c.Works {
		o.works[v] = i + 1
	}
	for i, v := range c.Servers {
		o.servers[v] = i + 1
	}
	return o
}

func (o hammerOrder) less(a, b *HammerCell) bool {
	shapeLess := func(x, y HammerShape) bool {
		return x.Conns < y.Conns || x.Conns == y.Conns && x.InFlight < y.InFlight
	}
	for _, c := range []int{
		rank(o.modes, a.Mode, b.Mode, func(x, y string) bool { return x < y }),
		rank(o.shapes, a.Shape, b.Shape, shapeLess),
		rank(o.works, a.Work, b.Work, func(x, y time.Duration) bool { return x < y }),
		rank(o.servers, a.Server, b.Server, func(x, y string) bool { return x < y }),
	} {
		if c != 0 {
			return c < 0
		}
	}
	return false
}

// parseUserSys reads utime and stime, in clock ticks, from the text of
// /proc/PID/stat (fields 14 and 15, counted after the command's closing
// parenthesis, which may itself hold spaces and parentheses).
func parseUserSys(stat []byte) (user, sys int64, err error) {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("sluice: bench: /proc stat without a command: %q", truncate(s, 60))
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state): utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("sluice: bench: /proc stat with %d fields after the command", len(f))
	}
	if user, err = strconv.ParseInt(f[11], 10, 64); err == nil {
		sys, err = strconv.ParseInt(f[12], 10, 64)
	}
	return user, sys, err
}

// sysShare is the kernel's share of CPU time between two readings of
// utime and stime (0 when no time passed).
func sysShare(u0, s0, u1, s1 int64) float64 {
	du, ds := u1-u0, s1-s0
	if du < 0 || ds < 0 || du+ds == 0 {
		return 0
	}
	return float64(ds) / float64(du+ds)
}

// groupThousands prints n with commas between thousands: 1,000.
func groupThousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// usText prints microseconds as the report's latencies: 850 µs, 12.3 ms,
// 1.25 s.
func usText(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.2f s", us/1e6)
	case us >= 1e4:
		return fmt.Sprintf("%.0f ms", us/1e3)
	case us >= 1e3:
		return fmt.Sprintf("%.1f ms", us/1e3)
	}
	return fmt.Sprintf("%.0f µs", math.Round(us))
}
