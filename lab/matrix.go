package lab

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/sluicenet/sluice/bench"
)

// ServerSluiceShedDefault is cmd/echo with -shed and nothing else: the
// engine derives its queueing-delay caps from the handler time it measures
// (docs/OVERLOAD.md#the-law). It is the server the overload
// matrix holds to its targets.
const ServerSluiceShedDefault = "sluice-shed-default"

// The work modes of the matrix: cmd/echo's -work-mode.
const (
	// ModeInline runs the simulated work on the loop.
	ModeInline = "inline"
	// ModePool runs it on the engine's worker pool. gnet and net have no
	// pool: the matrix runs only the sluice servers in pool cells.
	ModePool = "pool"
)

// The kinds of a matrix run.
const (
	// KindCapacity is a closed-loop run of the server without shedding:
	// its capacity in that round.
	KindCapacity = "capacity"
	// KindReference is an open-loop run at MatrixConfig.RefFraction of the
	// round's capacity, whose p99 the overload p99s are divided by.
	KindReference = "reference"
	// KindOverload is an open-loop run at Factor times the round's
	// capacity.
	KindOverload = "overload"
)

// The targets of the overload matrix (docs/OVERLOAD.md): at every offered
// load, goodput at least 90% of capacity, the p99 of admitted requests at
// most 3 times the p99 at half load, and every request answered (served, or
// refused with a reason).
const (
	MatrixGoodputTarget = 0.9
	MatrixP99Target     = 3.0
)

// MatrixGeneratorSaturated is the share of its CPUs at which the generator
// is marked saturated in a cell: the cell's latencies may then include the
// generator's own delays in sending and reading. Its busy time includes its
// spin-wait for sends due within 10 µs, so the mark is a warning, not a
// verdict; the late sends say more (on the 2-CPU machines, every 50 µs cell
// at 5× and 10× ran its one generator CPU at 99–100%, with 0.1–0.25% of
// its sends late, but 72–85% at 1,000 connections and 10×).
const MatrixGeneratorSaturated = 0.95

// capacityQueue is the simulated work the capacity run keeps queued over
// all connections: enough that a descheduled generator (a few ms) cannot
// leave the server idle, and little enough that no request waits near the
// generator's response timeout. 1,024 requests of 20 ms of work queued 20 s,
// and every connection timed out.
const capacityQueue = 250 * time.Millisecond

// capacityInFlightMax caps the capacity run's requests in flight over all
// connections (the goodput part's 1,024).
const capacityInFlightMax = 1024

// maxMatrixWindow caps a run's measured window however few requests per
// second the server serves (a capacity that failed to be measured must not
// make a run last an hour).
const maxMatrixWindow = 2 * time.Minute

// MatrixConfig describes the overload matrix (Matrix): every server at every
// work per frame, work mode and connection count, offered Factors times the
// capacity it measured in the same round, against its p99 at RefFraction of
// that capacity. Zero optional fields take the defaults the comments name.
type MatrixConfig struct {
	// ModuleDir, SluiceDir, GoCmd, BenchBin and BenchEnv are as in
	// CompareConfig.
	ModuleDir string   `json:"-"`
	SluiceDir string   `json:"-"`
	GoCmd     string   `json:"-"`
	BenchBin  string   `json:"-"`
	BenchEnv  []string `json:"-"`

	// Rounds of the whole matrix (0: 3); within a round the servers
	// alternate in every phase of every block.
	Rounds int `json:"rounds"`
	// ServerCPUs and ClientCPUs pin the servers and the generator (nil: CPU
	// 0 and CPU 1). Servers run with GOMAXPROCS and -loops = len(ServerCPUs).
	ServerCPUs []int `json:"server_cpus"`
	ClientCPUs []int `json:"client_cpus"`
	// ClientProcs is how many processes each run's generator is split into
	// over ClientCPUs (0: one per client CPU; OverloadConfig.ClientProcs).
	ClientProcs int `json:"client_procs,omitempty"`

	// Servers (nil: sluice-shed-default, gnet, net; also sluice-shed,
	// sluice-shed-tight and sluice-noshed, with the goodput part's flags).
	Servers []string `json:"servers"`
	// Factors are the offered loads, multiples of the round's capacity (nil:
	// 2, 5, 10).
	Factors []float64 `json:"factors"`
	// Works are the simulated CPU costs per frame (nil: 50µs, 200µs, 2ms,
	// 20ms).
	Works []time.Duration `json:"works_ns"`
	// Modes are cmd/echo's work modes, ModeInline and ModePool (nil: both).
	Modes []string `json:"modes"`
	// Conns are the connection counts (nil: 64, 1000).
	Conns []int `json:"conns"`
	// RefFraction is the reference run's load, a fraction of the round's
	// capacity (0: 0.5, half load).
	RefFraction float64 `json:"ref_fraction"`
	// Size is the payload of every request (0: 64 bytes).
	Size int `json:"size"`
	// Warmup precedes every measured window (0: 1s). Duration is the
	// shortest measured window (0: 3s); a run's window is longer when the
	// server is expected to serve fewer than MinSamples requests in it (0:
	// 1,000, so that a p99 rests on at least ten requests above it), up to
	// two minutes.
	Warmup     time.Duration `json:"warmup_ns"`
	Duration   time.Duration `json:"duration_ns"`
	MinSamples int           `json:"min_samples"`
	// ShedArgs and TightShedArgs are sluice-shed's and sluice-shed-tight's
	// flags when they are among Servers (nil: DefaultShedArgs and
	// DefaultTightShedArgs).
	ShedArgs      []string `json:"shed_args,omitempty"`
	TightShedArgs []string `json:"tight_shed_args,omitempty"`

	// Progress, when non-nil, receives a line per run.
	Progress io.Writer `json:"-"`
	// Checkpoint, when non-nil, is called with the report after every
	// block, so that an interrupted matrix can be resumed from what it
	// saved (Matrix's prev).
	Checkpoint func(*MatrixReport) `json:"-"`
}

// DefaultMatrixWorks are the matrix's works per frame.
var DefaultMatrixWorks = []time.Duration{50 * time.Microsecond, 200 * time.Microsecond, 2 * time.Millisecond, 20 * time.Millisecond}

func (c MatrixConfig) withDefaults() MatrixConfig {
	if c.GoCmd == "" {
		c.GoCmd = "go"
	}
	if c.Rounds == 0 {
		c.Rounds = 3
	}
	if len(c.ServerCPUs) == 0 {
		c.ServerCPUs = []int{0}
	}
	if len(c.ClientCPUs) == 0 {
		c.ClientCPUs = []int{1}
	}
	if len(c.Servers) == 0 {
		c.Servers = []string{ServerSluiceShedDefault, ServerGnet, ServerNet}
	}
	if len(c.Factors) == 0 {
		c.Factors = []float64{2, 5, 10}
	}
	if len(c.Works) == 0 {
		c.Works = append([]time.Duration(nil), DefaultMatrixWorks...)
	}
	if len(c.Modes) == 0 {
		c.Modes = []string{ModeInline, ModePool}
	}
	if len(c.Conns) == 0 {
		c.Conns = []int{64, 1000}
	}
	if c.RefFraction == 0 {
		c.RefFraction = 0.5
	}
	if c.Size == 0 {
		c.Size = 64
	}
	if c.Warmup == 0 {
		c.Warmup = time.Second
	}
	if c.Duration == 0 {
		c.Duration = 3 * time.Second
	}
	if c.MinSamples == 0 {
		c.MinSamples = 1000
	}
	if c.ShedArgs == nil {
		c.ShedArgs = DefaultShedArgs
	}
	if c.TightShedArgs == nil {
		c.TightShedArgs = DefaultTightShedArgs
	}
	return c
}

// Validate reports a configuration that cannot run.
func (c *MatrixConfig) Validate() error {
	for _, s := range c.Servers {
		switch s {
		case ServerSluiceShedDefault, ServerSluiceShed, ServerSluiceShedTight, ServerSluiceNoShed, ServerGnet, ServerNet:
		default:
			return fmt.Errorf("%w: unknown matrix server %q", bench.ErrInvalidConfig, s)
		}
	}
	for _, m := range c.Modes {
		if m != ModeInline && m != ModePool {
			return fmt.Errorf("%w: unknown work mode %q (want %s or %s)", bench.ErrInvalidConfig, m, ModeInline, ModePool)
		}
	}
	for _, f := range c.Factors {
		if !(f > 0) || math.IsInf(f, 0) {
			return fmt.Errorf("%w: factor %v", bench.ErrInvalidConfig, f)
		}
	}
	for _, w := range c.Works {
		if w <= 0 {
			return fmt.Errorf("%w: work %v: must be positive", bench.ErrInvalidConfig, w)
		}
	}
	for _, n := range c.Conns {
		if n < 1 {
			return fmt.Errorf("%w: %d connections", bench.ErrInvalidConfig, n)
		}
	}
	switch {
	case c.Rounds < 1 || c.MinSamples < 1 || c.ClientProcs < 0:
		return fmt.Errorf("%w: rounds %d, min samples %d, client processes %d", bench.ErrInvalidConfig, c.Rounds, c.MinSamples, c.ClientProcs)
	case !(c.RefFraction > 0 && c.RefFraction < 1):
		return fmt.Errorf("%w: reference fraction %v outside (0, 1)", bench.ErrInvalidConfig, c.RefFraction)
	case c.Duration <= 0 || c.Warmup < 0:
		return fmt.Errorf("%w: duration %v, warm-up %v", bench.ErrInvalidConfig, c.Duration, c.Warmup)
	}
	return bench.FixedSize(c.Size).Validate()
}

// isSluice reports whether srv is one of the cmd/echo servers.
func isSluice(srv string) bool { return srv != ServerGnet && srv != ServerNet }

// MatrixBlock is one round's runs of one work, mode and connection count:
// each server's capacity, then its reference run, then its overload runs,
// the servers alternating in each phase.
type MatrixBlock struct {
	Round   int
	Mode    string
	Conns   int
	Work    time.Duration
	Servers []string
}

// Plan returns the blocks of the matrix in the order they run: rounds
// outermost, then modes, connection counts and works. Pool blocks hold only
// the sluice servers; a pool block without one is left out.
func (c *MatrixConfig) Plan() []MatrixBlock {
	var plan []MatrixBlock
	for r := 1; r <= c.Rounds; r++ {
		for _, m := range c.Modes {
			servers := serversFor(m, c.Servers)
			if len(servers) == 0 {
				continue
			}
			for _, n := range c.Conns {
				for _, w := range c.Works {
					plan = append(plan, MatrixBlock{Round: r, Mode: m, Conns: n, Work: w, Servers: servers})
				}
			}
		}
	}
	return plan
}

// serversFor returns the servers a block of mode runs: all of them
// inline, the sluice servers alone in pool mode (gnet and net have no
// worker pool).
func serversFor(mode string, servers []string) []string {
	if mode != ModePool {
		return servers
	}
	var out []string
	for _, s := range servers {
		if isSluice(s) {
			out = append(out, s)
		}
	}
	return out
}

// blockKey names a block of the plan.
type blockKey struct {
	round int
	mode  string
	conns int
	work  time.Duration
}

// pendingBlocks returns the blocks of plan that runs has none of: a
// report holds whole blocks only (Matrix leaves an interrupted one out).
func pendingBlocks(plan []MatrixBlock, runs []MatrixRun) []MatrixBlock {
	done := map[blockKey]bool{}
	for _, r := range runs {
		done[blockKey{r.Round, r.Mode, r.Conns, r.Work}] = true
	}
	var out []MatrixBlock
	for _, b := range plan {
		if !done[blockKey{b.Round, b.Mode, b.Conns, b.Work}] {
			out = append(out, b)
		}
	}
	return out
}

// capacityInFlight returns the capacity run's requests in flight per
// connection for work and conns: capacityQueue of work over all
// connections, at most capacityInFlightMax, at least one per connection.
func capacityInFlight(work time.Duration, conns int) int {
	total := min(capacityInFlightMax, int(math.Ceil(float64(capacityQueue)/float64(max(work, time.Nanosecond)))))
	return max(1, total/conns)
}

// responseTimeout returns the generator's response timeout for a run whose
// requests may queue behind inFlight requests of work each: the default,
// or four times that queue when it is longer (1,000 connections of 20 ms
// work in a closed loop queue 20 s).
func responseTimeout(work time.Duration, inFlight int) time.Duration {
	return max(bench.DefaultResponseTimeout, 4*time.Duration(inFlight)*work)
}

// window returns the measured window of a run expected to serve perSec
// requests a second: long enough for minSamples of them, at least d, at
// most maxMatrixWindow (and d when perSec is unknown).
func window(d time.Duration, minSamples int, perSec float64) time.Duration {
	if !(perSec > 0) {
		return d
	}
	const step = 100 * time.Millisecond
	w := time.Duration(math.Ceil(float64(minSamples)/perSec*float64(time.Second/step))) * step
	return min(max(d, w), max(d, maxMatrixWindow))
}

// estimate guesses when the plan will end, done of its blocks having
// taken elapsed: by the blocks' expected measured time (warm-up and
// window, from the work), since a 20 ms block lasts ten times a 50 µs one.
func estimate(plan []MatrixBlock, done int, cfg MatrixConfig, elapsed time.Duration) string {
	var past, all time.Duration
	for i, b := range plan {
		d := blockTime(b, cfg)
		all += d
		if i < done {
			past += d
		}
	}
	if past <= 0 {
		return ""
	}
	left := time.Duration(float64(elapsed) * float64(all-past) / float64(past))
	return fmt.Sprintf("about %v left (ends near %s)", left.Round(time.Minute), time.Now().Add(left).Format("15:04"))
}

// blockTime is a block's expected measured time plus a second per run
// for starting and stopping processes.
func blockTime(b MatrixBlock, c MatrixConfig) time.Duration {
	capacity := float64(len(c.ServerCPUs)) / b.Work.Seconds()
	per := c.Warmup + time.Second + window(c.Duration, c.MinSamples, capacity)
	per += c.Warmup + time.Second + window(c.Duration, c.MinSamples, c.RefFraction*capacity)
	per += time.Duration(len(c.Factors)) * (c.Warmup + time.Second + window(c.Duration, c.MinSamples, capacity))
	return time.Duration(len(b.Servers)) * per
}
