package admission

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// VegasConfig configures the adaptive concurrency limit.
//
// The algorithm is TCP Vegas as adapted by Netflix's concurrency-limits: it
// estimates the queue the limit builds as limit × (1 − rttNoLoad/rtt), where
// rttNoLoad is the lowest RTT seen, and grows the limit while that queue is
// small and shrinks it while it is large. With f = log10(limit):
//
//	queue <= f       → limit += max(1, 6f)   (no queue: grow fast)
//	queue <  3f      → limit += max(1, f)
//	queue >  6f      → limit -= max(1, f)
//	otherwise        → unchanged
//
// (the max(1, ·) steps keep small limits, where log10 is below 1, moving).
//
// clamped to [MinLimit, MaxLimit] (MaxLimit is the hard ceiling). While the
// window's peak in-flight is under half the limit, the limit is left alone:
// the application, not the server, is the bottleneck, so the RTT says
// nothing about a larger limit.
//
// Every ProbeInterval the limit probes for the no-load RTT the way BBR's
// PROBE_RTT does: it halves the limit for two windows, discards the first
// (requests admitted before the cut are still finishing) and takes the
// second's RTT as the new rttNoLoad, then restores the limit. Re-anchoring
// to the RTT at the current limit instead (Netflix's probe) would ratchet
// the limit up by the hold band (3f..6f) at every probe under sustained
// overload; measuring at half the limit finds the real baseline, follows a
// baseline that moved (a slower dependency), and recovers from a start
// above capacity, at the cost of half the concurrency for two windows per
// interval (0.7% of the time with the defaults).
//
// Why Vegas and not Gradient2: Gradient2 compares the window's RTT with its
// own long-term average, so under sustained overload the average absorbs
// the queueing delay and the limit creeps up without bound (in this
// package's simulation, capacity 50 with unlimited demand, Gradient2 went
// from 20 to 140 in 30 s and was still rising), which is the one scenario a
// server's limit exists for. Vegas anchors to the no-load RTT and settles a
// few requests above capacity. Its known weakness, a rttNoLoad biased low by
// one lucky sample, is blunted here because every sample is a window's
// average of at least MinWindowSamples RTTs, never a single request.
type VegasConfig struct {
	// InitialLimit is the starting limit. Zero: 20 (capped at MaxLimit).
	InitialLimit int
	// MinLimit is the floor. Zero: 1.
	MinLimit int
	// MaxLimit is the hard ceiling. Zero: 1000.
	MaxLimit int
	// Window is the minimum duration of one sampling window. Zero: 100ms.
	Window time.Duration
	// MinWindowSamples is the minimum number of RTTs a window averages; a
	// window extends until it has them. Zero: 10.
	MinWindowSamples int
	// ProbeInterval is how often the limit probes for rttNoLoad. Zero: 30s.
	ProbeInterval time.Duration
	// Smoothing weighs each new limit into the current one (1: take it
	// whole). Zero: 1.
	Smoothing float64
}

func (c VegasConfig) withDefaults() VegasConfig {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MinLimit, 1)
	def(&c.MaxLimit, 1000)
	def(&c.InitialLimit, min(20, c.MaxLimit))
	def(&c.MinWindowSamples, 10)
	if c.Window == 0 {
		c.Window = 100 * time.Millisecond
	}
	if c.ProbeInterval == 0 {
		c.ProbeInterval = 30 * time.Second
	}
	if c.Smoothing == 0 {
		c.Smoothing = 1
	}
	return c
}

// Validate checks the configuration after defaults are applied.
func (c VegasConfig) Validate() error {
	c = c.withDefaults()
	if c.MinLimit < 1 || c.MaxLimit < c.MinLimit || c.InitialLimit < c.MinLimit || c.InitialLimit > c.MaxLimit ||
		!(c.Smoothing > 0 && c.Smoothing <= 1) || c.Window < 0 || c.MinWindowSamples < 1 || c.ProbeInterval < 0 {
		return fmt.Errorf("%w: vegas %+v", ErrBadConfig, c)
	}
	return nil
}

// vegas is the pure algorithm: one update per window. Not safe for
// concurrent use.
type vegas struct {
	cfg       VegasConfig
	limit     float64
	noLoad    float64 // nanoseconds; 0 until the first window
	nextProbe int64
	probing   int     // windows into the current probe; 0 when not probing
	saved     float64 // the limit to restore after a probe
}

// probeWindows is how many windows a probe lasts: one to drain the requests
// admitted under the old limit, one to measure.
const probeWindows = 2

func newVegas(cfg VegasConfig) vegas {
	return vegas{cfg: cfg, limit: float64(cfg.InitialLimit)}
}

// update feeds one window ending at t with average RTT rtt (nanoseconds)
// and peak in-flight, and returns the new limit.
func (v *vegas) update(t int64, rtt float64, peak int64) float64 {
	if !(rtt > 0) {
		return v.limit
	}
	if v.noLoad == 0 || rtt < v.noLoad {
		if v.noLoad == 0 {
			v.nextProbe = t + int64(v.cfg.ProbeInterval)
		}
		v.noLoad = rtt
		return v.limit
	}
	if v.probing > 0 {
		if v.probing++; v.probing <= probeWindows {
			return v.limit
		}
		v.noLoad, v.limit, v.probing = rtt, v.saved, 0
		v.nextProbe = t + int64(v.cfg.ProbeInterval)
		return v.limit
	}
	if t >= v.nextProbe {
		v.saved, v.probing = v.limit, 1
		v.limit = math.Max(float64(v.cfg.MinLimit), math.Floor(v.limit/2))
		return v.limit
	}
	if float64(peak) < v.limit/2 {
		return v.limit
	}
	queue := math.Ceil(v.limit * (1 - v.noLoad/rtt))
	f := math.Log10(v.limit)
	next := v.limit
	switch {
	case queue <= f:
		next += math.Max(1, 6*f)
	case queue < 3*f:
		next += math.Max(1, f)
	case queue > 6*f:
		next -= math.Max(1, f)
	default:
		return v.limit
	}
	next = math.Max(float64(v.cfg.MinLimit), math.Min(float64(v.cfg.MaxLimit), next))
	v.limit = (1-v.cfg.Smoothing)*v.limit + v.cfg.Smoothing*next
	return v.limit
}

const windowUnstarted = math.MinInt64

// adaptive wraps vegas with lock-free sample accumulation: Release adds to
// atomics and only the caller that finds the window over takes the lock
// (TryLock, so nobody waits) to run the update.
type adaptive struct {
	cfg         VegasConfig
	windowEnd   atomic.Int64
	sumRTT      atomic.Int64
	samples     atomic.Int64
	maxInflight atomic.Int64
	mu          sync.Mutex
	v           vegas
}

func newAdaptive(cfg VegasConfig) *adaptive {
	a := &adaptive{cfg: cfg, v: newVegas(cfg)}
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
	l := a.v.update(t, float64(sum)/float64(n), peak)
	limit.Store(int64(l))
	a.windowEnd.Store(t + int64(a.cfg.Window))
}
