package resilience

import (
	"math"
	"math/bits"
	"sync"
	"time"
)

// Latency histogram geometry: values in nanoseconds, 8 sub-buckets per power
// of two (relative resolution 12.5%, reported at the bucket midpoint, so
// within ±6.25%), up to 2^40 ns (about 18 minutes); larger values land in
// the last bucket.
const (
	latencySubBits   = 3
	latencySub       = 1 << latencySubBits
	latencyMaxExp    = 40
	latencyBuckets   = (latencyMaxExp - latencySubBits + 2) * latencySub
	maxLatencyNanos  = int64(1)<<(latencyMaxExp+1) - 1
	defaultHalfLife  = 1000
	maxHalfLifeCalls = 1 << 24
)

// LatencyTracker is a small bounded streaming estimator of latency
// quantiles: a fixed log-linear histogram (312 counters) whose counts are
// halved every HalfLife observations, so old samples fade and memory never
// grows. Hedging uses its p95; retries use its median as the typical latency.
//
// The zero value is ready to use with a half-life of 1000 observations. A
// LatencyTracker is safe for concurrent use; Observe and Quantile do not
// allocate.
type LatencyTracker struct {
	mu         sync.Mutex
	halfLife   int
	sinceDecay int
	total      uint64
	counts     [latencyBuckets]uint32
}

// NewLatencyTracker returns a tracker whose counts halve every halfLife
// observations (0 means 1000; values are clamped to [1, 2^24]).
func NewLatencyTracker(halfLife int) *LatencyTracker {
	t := &LatencyTracker{}
	t.halfLife = clampHalfLife(halfLife)
	return t
}

func clampHalfLife(n int) int {
	switch {
	case n <= 0:
		return defaultHalfLife
	case n > maxHalfLifeCalls:
		return maxHalfLifeCalls
	}
	return n
}

// Observe records one latency; negative values count as zero.
func (t *LatencyTracker) Observe(d time.Duration) {
	i := latencyIndex(int64(d))
	t.mu.Lock()
	if t.halfLife == 0 {
		t.halfLife = defaultHalfLife
	}
	t.counts[i]++
	t.total++
	t.sinceDecay++
	if t.sinceDecay >= t.halfLife {
		t.decayLocked()
	}
	t.mu.Unlock()
}

func (t *LatencyTracker) decayLocked() {
	var total uint64
	for i := range t.counts {
		t.counts[i] >>= 1
		total += uint64(t.counts[i])
	}
	t.total = total
	t.sinceDecay = 0
}

// Count returns the current weighted number of samples (it drops by about
// half at every decay).
func (t *LatencyTracker) Count() int {
	t.mu.Lock()
	n := t.total
	t.mu.Unlock()
	return int(n)
}

// Quantile returns an estimate of the q-quantile (q in [0, 1], clamped) of
// the recent latencies, and false when there are no samples.
func (t *LatencyTracker) Quantile(q float64) (time.Duration, bool) {
	if math.IsNaN(q) || q < 0 {
		q = 0
	} else if q > 1 {
		q = 1
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.total == 0 {
		return 0, false
	}
	rank := uint64(math.Ceil(q * float64(t.total)))
	if rank < 1 {
		rank = 1
	}
	var cum uint64
	for i, c := range t.counts {
		cum += uint64(c)
		if cum >= rank {
			return latencyValue(i), true
		}
	}
	return latencyValue(latencyBuckets - 1), true
}

// latencyIndex maps nanoseconds to a bucket.
func latencyIndex(ns int64) int {
	if ns < latencySub {
		if ns < 0 {
			return 0
		}
		return int(ns)
	}
	if ns > maxLatencyNanos {
		ns = maxLatencyNanos
	}
	e := bits.Len64(uint64(ns)) - 1 // position of the leading one, ≥ latencySubBits
	shift := e - latencySubBits
	return (shift+1)*latencySub + int(uint64(ns)>>shift)&(latencySub-1)
}

// latencyValue is the midpoint of bucket i.
func latencyValue(i int) time.Duration {
	if i < latencySub {
		return time.Duration(i)
	}
	g, s := i/latencySub, i%latencySub
	lo := int64(latencySub+s) << (g - 1)
	width := int64(1) << (g - 1)
	return time.Duration(lo + width/2)
}
