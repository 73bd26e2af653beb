package admission

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Gradient2Config configures the adaptive concurrency limit.
//
// The algorithm is Netflix's Gradient2 (concurrency-limits). We chose it over
// Vegas because Vegas estimates the queue from the minimum RTT ever seen
// (rtt_noload), which must be probed and reset and is biased low by a single
// lucky sample; on a shared, noisy machine that makes the limit collapse.
// Gradient2 compares a short-term RTT (this window's average) with a
// long-term exponential average, so it follows a baseline that drifts
// (handler cost changes, a neighbour takes the CPU) and needs no probing.
//
// Each window: long = EWMA(short) (decayed faster when the load has clearly
// dropped); if the window's peak in-flight is under half the limit the
// limit is left alone (the application, not the server, is the bottleneck,
// so growing it would be blind); otherwise
//
//	gradient = clamp(Tolerance × long/short, 0.5, 1)
//	target   = limit × gradient + queue     (queue = QueueSize or √limit)
//	limit    = (1-Smoothing) × limit + Smoothing × target
//
// clamped to [MinLimit, MaxLimit]. MaxLimit is the hard ceiling.
type Gradient2Config struct {
	// InitialLimit is the starting limit. Zero: 20 (capped at MaxLimit).
	InitialLimit int
	// MinLimit is the floor. Zero: 1.
	MinLimit int
	// MaxLimit is the hard ceiling. Zero: 1000.
	MaxLimit int
	// Tolerance is the RTT inflation (long/short) tolerated before the limit
	// shrinks. Zero: 1.5 (Netflix's default); must be >= 1.
	Tolerance float64
	// Smoothing weighs each new target into the limit. Zero: 0.2.
	Smoothing float64
	// LongWindow is the long-term average's span in windows. Zero: 600.
	LongWindow int
	// Window is the minimum duration of one sampling window. Zero: 100ms.
	Window time.Duration
	// MinWindowSamples is the minimum number of RTT samples a window needs;
	// a window extends until it has them. Zero: 10.
	MinWindowSamples int
	// QueueSize is the additive growth term; zero uses √limit.
	QueueSize int
}

func (c Gradient2Config) withDefaults() Gradient2Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MinLimit, 1)
	def(&c.MaxLimit, 1000)
	def(&c.InitialLimit, min(20, c.MaxLimit))
	def(&c.LongWindow, 600)
	def(&c.MinWindowSamples, 10)
	if c.Tolerance == 0 {
		c.Tolerance = 1.5
	}
	if c.Smoothing == 0 {
		c.Smoothing = 0.2
	}
	if c.Window == 0 {
		c.Window = 100 * time.Millisecond
	}
	return c
}

// Validate checks the configuration after defaults are applied.
func (c Gradient2Config) Validate() error {
	c = c.withDefaults()
	if c.MinLimit < 1 || c.MaxLimit < c.MinLimit || c.InitialLimit < c.MinLimit || c.InitialLimit > c.MaxLimit ||
		!(c.Tolerance >= 1) || !(c.Smoothing > 0 && c.Smoothing <= 1) || c.LongWindow < 1 ||
		c.Window < 0 || c.MinWindowSamples < 1 || c.QueueSize < 0 {
		return fmt.Errorf("%w: gradient2 %+v", ErrBadConfig, c)
	}
	return nil
}

// longWarmup is how many windows the long-term RTT averages plainly before
// switching to the exponential average, so the first window does not
// dominate it.
const longWarmup = 10

// gradient2 is the pure algorithm: one update per window. Not safe for
// concurrent use.
type gradient2 struct {
	cfg     Gradient2Config
	limit   float64
	longRTT float64 // nanoseconds
	windows int
}

func newGradient2(cfg Gradient2Config) gradient2 {
	return gradient2{cfg: cfg, limit: float64(cfg.InitialLimit)}
}

// update feeds one window's average RTT (nanoseconds) and peak in-flight and
// returns the new limit.
func (g *gradient2) update(shortRTT float64, maxInflight int64) float64 {
	if !(shortRTT > 0) {
		return g.limit
	}
	g.windows++
	if g.windows <= longWarmup {
		g.longRTT += (shortRTT - g.longRTT) / float64(g.windows)
	} else {
		g.longRTT += (shortRTT - g.longRTT) * 2 / float64(g.cfg.LongWindow+1)
	}
	// Load has dropped well below the long-term level: let the long average
	// catch up faster so the limit can grow again soon.
	if g.longRTT/shortRTT > 2 {
		g.longRTT *= 0.95
	}
	if float64(maxInflight) < g.limit/2 {
		return g.limit
	}
	gradient := math.Max(0.5, math.Min(1, g.cfg.Tolerance*g.longRTT/shortRTT))
	queue := float64(g.cfg.QueueSize)
	if queue == 0 {
		queue = math.Sqrt(g.limit)
	}
	target := g.limit*gradient + queue
	next := (1-g.cfg.Smoothing)*g.limit + g.cfg.Smoothing*target
	g.limit = math.Max(float64(g.cfg.MinLimit), math.Min(float64(g.cfg.MaxLimit), next))
	return g.limit
}

const windowUnstarted = math.MinInt64

// adaptive wraps gradient2 with lock-free sample accumulation: Release adds
// to atomics and only the caller that finds the window over takes the lock
// (TryLock, so nobody waits) to run the update.
type adaptive struct {
	cfg         Gradient2Config
	windowEnd   atomic.Int64
	sumRTT      atomic.Int64
	samples     atomic.Int64
	maxInflight atomic.Int64
	mu          sync.Mutex
	g           gradient2
}

func newAdaptive(cfg Gradient2Config) *adaptive {
	a := &adaptive{cfg: cfg, g: newGradient2(cfg)}
	a.windowEnd.Store(windowUnstarted)
	return a
}

// noteInflight records a new in-flight count for the window's peak.
func (a *adaptive) noteInflight(n int64) {
	for {
		m := a.maxInflight.Load()
		if n <= m || a.maxInflight.CompareAndSwap(m, n) {
			return
		}
	}
}

// sample adds one RTT at time t; when a window completes it updates the limit
// and stores it into *limit.
func (a *adaptive) sample(t, rtt int64, inflightNow int64, limit *atomic.Int64) {
	if rtt <= 0 {
		return
	}
	a.sumRTT.Add(rtt)
	a.samples.Add(1)
	we := a.windowEnd.Load()
	if we == windowUnstarted {
		a.windowEnd.CompareAndSwap(windowUnstarted, t+int64(a.cfg.Window))
		return
	}
	if t < we || !a.mu.TryLock() {
		return
	}
	defer a.mu.Unlock()
	if a.windowEnd.Load() != we || a.samples.Load() < int64(a.cfg.MinWindowSamples) {
		return
	}
	n := a.samples.Swap(0)
	sum := a.sumRTT.Swap(0)
	peak := a.maxInflight.Swap(inflightNow)
	l := a.g.update(float64(sum)/float64(n), peak)
	limit.Store(int64(l))
	a.windowEnd.Store(t + int64(a.cfg.Window))
}
