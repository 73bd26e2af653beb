package resilience

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Default throttle parameters, used where a ThrottleConfig field is zero.
// Why these: docs/CLIENT.md#client-side-throttling.
const (
	// DefaultThrottleK is the SRE book's multiplier: a client sends up to
	// twice the requests its destination accepts, so it still probes a
	// server that recovers while sending it half of what it would refuse.
	DefaultThrottleK = 2.0
	// DefaultThrottleWindow is the history: 30 s, Envoy's admission control
	// default. The book's two minutes, uncapped, left a client 8–17 minutes
	// from full rate after a window of total refusal (docs/CLIENT.md#recovery).
	DefaultThrottleWindow = 30 * time.Second
	// DefaultThrottleBuckets cuts the window into 1.25 s buckets (at 30 s).
	DefaultThrottleBuckets = 24
	// DefaultThrottleMinRequests is how many requests the window must hold
	// before the throttle refuses anything (as the breaker's MinCalls).
	DefaultThrottleMinRequests = 20
	// DefaultThrottleMaxProbability caps the local refusal probability, as
	// Envoy's admission control does (its default is 0.8): a client that
	// keeps at least 10% of its attempts reaching a refusing destination is
	// back near full rate within about two windows of its recovery
	// (TestThrottleRecoveryBounded), while 0.9 rather than 0.8 spares the
	// destination nine in ten of the attempts it would refuse, not four in
	// five.
	DefaultThrottleMaxProbability = 0.9
	maxThrottleBuckets            = 1024
)

// ThrottleConfig configures a Throttle. The zero value is the SRE book's
// adaptive throttling with K = 2 over a 30 s window of 24 buckets, refusing
// nothing until the window holds 20 requests and never more than 90% of
// attempts.
type ThrottleConfig struct {
	// K is the multiplier of accepts: the throttle lets through about K
	// times what the destination accepts. 0 means 2; otherwise at least 1
	// (below 1 it would refuse requests a healthy destination accepts all
	// of). Negative means the throttle never refuses and only counts.
	K float64
	// Window is the span of the request history; 0 means 30 s.
	Window time.Duration
	// Buckets is how many time buckets the window is cut into (it slides
	// one bucket at a time); 0 means 24, at most 1024.
	Buckets int
	// MinRequests is how many requests the window must hold before the
	// throttle may refuse: below it the counts are too few to tell a
	// refusing destination from bad luck. 0 means 20; negative means no
	// floor (the book's formula from the first request).
	MinRequests int
	// MaxProbability is the most the throttle refuses: the refusal
	// probability is the book's formula capped at it, so at least
	// 1 − MaxProbability of the attempts reach even a destination that
	// refuses everything, and their accepts bound how long the client takes
	// to notice its recovery (docs/CLIENT.md#recovery). 0 means 0.9;
	// otherwise in (0, 1], 1 being the book's uncapped formula.
	MaxProbability float64
	// Rand is the source of the refusal draws; nil means math/rand/v2's
	// global source. It is called with the throttle's lock held.
	Rand rand.Source
}

// Validate reports out-of-range values.
func (c ThrottleConfig) Validate() error {
	switch {
	case math.IsNaN(c.K) || math.IsInf(c.K, 0) || (c.K > 0 && c.K < 1) || c.K > 1e6:
		return fmt.Errorf("%w: ThrottleConfig.K %v: want 0 (default), negative (never refuse) or in [1, 1e6]", ErrInvalidConfig, c.K)
	case c.Window < 0:
		return fmt.Errorf("%w: ThrottleConfig.Window %v is negative", ErrInvalidConfig, c.Window)
	case c.Buckets < 0 || c.Buckets > maxThrottleBuckets:
		return fmt.Errorf("%w: ThrottleConfig.Buckets %d not in [0, %d]", ErrInvalidConfig, c.Buckets, maxThrottleBuckets)
	case math.IsNaN(c.MaxProbability) || c.MaxProbability < 0 || c.MaxProbability > 1:
		return fmt.Errorf("%w: ThrottleConfig.MaxProbability %v: want 0 (default) or in (0, 1]", ErrInvalidConfig, c.MaxProbability)
	}
	if w, n := c.window(), c.buckets(); w/time.Duration(n) <= 0 {
		return fmt.Errorf("%w: ThrottleConfig.Window %v too short for %d buckets", ErrInvalidConfig, w, n)
	}
	return nil
}

func (c ThrottleConfig) window() time.Duration {
	if c.Window == 0 {
		return DefaultThrottleWindow
	}
	return c.Window
}

func (c ThrottleConfig) buckets() int {
	if c.Buckets == 0 {
		return DefaultThrottleBuckets
	}
	return c.Buckets
}

// ThrottleStats is a Throttle's window at one instant.
type ThrottleStats struct {
	// Requests is the attempts in the window: those sent and finished, and
	// those the throttle refused.
	Requests int64
	// Accepts is the sent attempts the destination did not refuse.
	Accepts int64
	// LocalRefusals is the attempts the throttle refused itself (part of
	// Requests).
	LocalRefusals int64
	// Probability is the chance that an attempt made now is refused (at
	// most the configured MaxProbability).
	Probability float64
}

// Throttle is adaptive client-side throttling, after the overload chapter
// of Google's SRE book: over a sliding window it counts requests (attempts,
// those it refused included) and accepts (attempts the destination did not
// refuse), and refuses a new attempt itself with probability
//
//	min(MaxProbability, max(0, (requests − K·accepts) / (requests + 1)))
//
// so that once the destination refuses most of what it gets, the client
// stops sending most of it, and the refusals cost the destination nothing.
// The cap (0.9 by default, after Envoy's admission control) keeps a share
// of attempts reaching the destination, so the client learns of its
// recovery within a couple of windows. The window is a ring of fixed
// buckets: Allow and Record are O(1) and do not allocate. Like the breaker
// it takes now and reads no clock. Throttle is safe for concurrent use;
// share one per destination.
//
// A caller asks Allow before each attempt; when it is allowed and sent,
// Record reports whether the destination accepted it. An attempt that ends
// without an answer about the destination (the caller canceled it) is not
// recorded.
type Throttle struct {
	mu      sync.Mutex
	k       float64 // negative: never refuse
	maxP    float64 // the cap on the refusal probability, in (0, 1]
	minReq  int64
	width   time.Duration
	rnd     rand.Source
	ring    []throttleBucket
	started bool
	origin  time.Time
	lastIdx int64
	total   throttleBucket // the sums over ring
}

type throttleBucket struct {
	requests, accepts, refusals int64
}

// NewThrottle returns a throttle with an empty window.
func NewThrottle(cfg ThrottleConfig) (*Throttle, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	k := cfg.K
	if k == 0 {
		k = DefaultThrottleK
	}
	minReq := int64(cfg.MinRequests)
	if cfg.MinRequests == 0 {
		minReq = DefaultThrottleMinRequests
	}
	maxP := cfg.MaxProbability
	if maxP == 0 {
		maxP = DefaultThrottleMaxProbability
	}
	return &Throttle{
		k:      k,
		maxP:   maxP,
		minReq: max(minReq, 0),
		width:  cfg.window() / time.Duration(cfg.buckets()),
		rnd:    cfg.Rand,
		ring:   make([]throttleBucket, cfg.buckets()),
	}, nil
}

// Allow decides whether an attempt may be sent at now. It returns nil, or
// ErrThrottled after counting the refusal as a request and a local
// refusal (the book counts them, so a client that refuses keeps refusing
// until its destination accepts again).
func (t *Throttle) Allow(now time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	bk := t.bucketLocked(now)
	p := t.probabilityLocked()
	if p <= 0 || unit(t.rnd) >= p {
		return nil
	}
	bk.requests++
	bk.refusals++
	t.total.requests++
	t.total.refusals++
	return ErrThrottled
}

// Record counts one sent attempt, finished at now; accepted reports that
// the destination did not refuse it (see the caller's definition, e.g.
// package client's).
func (t *Throttle) Record(now time.Time, accepted bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	bk := t.bucketLocked(now)
	bk.requests++
	t.total.requests++
	if accepted {
		bk.accepts++
		t.total.accepts++
	}
}

// Probability returns the chance that an attempt made at now is refused.
func (t *Throttle) Probability(now time.Time) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.bucketLocked(now)
	return t.probabilityLocked()
}

// Stats returns the window's counts at now.
func (t *Throttle) Stats(now time.Time) ThrottleStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.bucketLocked(now)
	return ThrottleStats{
		Requests:      t.total.requests,
		Accepts:       t.total.accepts,
		LocalRefusals: t.total.refusals,
		Probability:   t.probabilityLocked(),
	}
}

// probabilityLocked is the book's formula capped at MaxProbability, 0 below
// the MinRequests floor or when the throttle only counts.
func (t *Throttle) probabilityLocked() float64 {
	req := t.total.requests
	if t.k < 0 || req == 0 || req < t.minReq {
		return 0
	}
	p := (float64(req) - t.k*float64(t.total.accepts)) / float64(req+1)
	return min(max(p, 0), t.maxP)
}

// bucketLocked slides the window to now and returns now's bucket. Time that
// runs backwards lands in the newest bucket; a jump past the whole window
// empties it. At most len(ring) buckets are cleared, so the cost is bounded.
func (t *Throttle) bucketLocked(now time.Time) *throttleBucket {
	n := int64(len(t.ring))
	if !t.started {
		t.started, t.origin, t.lastIdx = true, now, 0
		return &t.ring[0]
	}
	idx := int64(now.Sub(t.origin) / t.width)
	if idx > t.lastIdx {
		if idx-t.lastIdx >= n {
			clear(t.ring)
			t.total = throttleBucket{}
		} else {
			for i := t.lastIdx + 1; i <= idx; i++ {
				bk := &t.ring[i%n]
				t.total.requests -= bk.requests
				t.total.accepts -= bk.accepts
				t.total.refusals -= bk.refusals
				*bk = throttleBucket{}
			}
		}
		t.lastIdx = idx
	}
	return &t.ring[t.lastIdx%n]
}
