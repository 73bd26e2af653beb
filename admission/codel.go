package admission

import (
	"fmt"
	"sync/atomic"
	"time"
)

// CoDelConfig configures CoDel on request queueing delay.
type CoDelConfig struct {
	// Target is the acceptable standing queue delay. Zero: 5ms.
	Target time.Duration
	// Interval is the window over which the minimum delay is judged.
	// Zero: 100ms.
	Interval time.Duration
}

func (c CoDelConfig) withDefaults() CoDelConfig {
	if c.Target == 0 {
		c.Target = 5 * time.Millisecond
	}
	if c.Interval == 0 {
		c.Interval = 100 * time.Millisecond
	}
	return c
}

// Validate checks the configuration after defaults are applied.
func (c CoDelConfig) Validate() error {
	c = c.withDefaults()
	if c.Target < 0 || c.Interval <= 0 {
		return fmt.Errorf("%w: codel Target %v, Interval %v", ErrBadConfig, c.Target, c.Interval)
	}
	return nil
}

// CoDel detects a standing request queue the way CoDel does for packets and
// Facebook's servers do for requests: a queue is overloaded when even its
// best (minimum) sojourn time over a whole interval exceeded Target, because
// a queue that is merely bursty drains to near zero at least once per
// interval. While overloaded, requests that waited more than 2 × Target are
// shed (ReasonCoDel), and the queue owner should serve newest first
// (ServeNewestFirst): during a standing queue the oldest requests are the
// ones whose clients have most likely given up, and LIFO lets fresh requests
// meet their deadlines.
//
// One CoDel belongs to one queue and is not safe for concurrent Dequeue:
// the queue's owner calls it under whatever serialises its dequeues.
// Overloaded and ServeNewestFirst may be read from any goroutine. The zero
// value is not usable; use NewCoDel.
type CoDel struct {
	target, interval int64
	started          bool
	intervalEnd      int64
	minSojourn       int64
	overloaded       atomic.Bool
	shed             atomic.Uint64
	intervalsHot     atomic.Uint64
}

// NewCoDel returns a CoDel in the not-overloaded state.
func NewCoDel(cfg CoDelConfig) (*CoDel, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &CoDel{target: int64(cfg.Target), interval: int64(cfg.Interval)}, nil
}

// Dequeue is called as a request leaves the queue at now, having been
// enqueued at enqueued. It returns an admitting Verdict, or a refusal with
// ReasonCoDel (RetryAfter one interval) when the request should be shed
// instead of served.
func (c *CoDel) Dequeue(now, enqueued time.Time) Verdict {
	t := nanos(now)
	s := t - nanos(enqueued)
	c.observe(t, s)
	if c.overloaded.Load() && s > 2*c.target {
		c.shed.Add(1)
		return Reject(ReasonCoDel, time.Duration(c.interval))
	}
	return Admitted()
}

// Observe folds the sojourn of a request leaving the queue at now, enqueued
// at enqueued, into the overload judgement without deciding about it: for a
// queue owner that sheds by its own rule and uses CoDel only to know
// whether the queue has been empty recently.
func (c *CoDel) Observe(now, enqueued time.Time) {
	t := nanos(now)
	c.observe(t, t-nanos(enqueued))
}

// SetTarget changes the target (and so the shedding threshold, twice the
// target) from the next request on, for an owner that derives it from what
// it measures; d ≤ 0 is ignored. Like Dequeue, only the queue's owner
// calls it.
func (c *CoDel) SetTarget(d time.Duration) {
	if d > 0 {
		c.target = int64(d)
	}
}

// Target returns the current target.
func (c *CoDel) Target() time.Duration { return time.Duration(c.target) }

// Empty tells CoDel that the queue drained at now: the current interval's
// minimum sojourn is zero, so the interval cannot judge the queue overloaded.
func (c *CoDel) Empty(now time.Time) { c.observe(nanos(now), 0) }

// observe folds one sojourn s at time t into the interval minimum, closing
// intervals as time passes.
func (c *CoDel) observe(t, s int64) {
	if !c.started {
		c.started, c.intervalEnd, c.minSojourn = true, t+c.interval, s
		return
	}
	if t < c.intervalEnd-c.interval {
		// the clock went back past the interval's start (a clock that is
		// not monotonic was stepped): start the interval over at t rather
		// than wait for the old end, which would keep the judgement as it
		// is for as long as the step
		c.intervalEnd, c.minSojourn = t+c.interval, s
		return
	}
	if t >= c.intervalEnd {
		hot := c.minSojourn > c.target
		c.overloaded.Store(hot)
		if hot {
			c.intervalsHot.Add(1)
		}
		c.intervalEnd, c.minSojourn = t+c.interval, s
		return
	}
	c.minSojourn = min(c.minSojourn, s)
}

// Overloaded reports whether the last complete interval had a standing
// queue.
func (c *CoDel) Overloaded() bool { return c.overloaded.Load() }

// ServeNewestFirst reports whether the queue owner should dequeue LIFO
// (adaptive LIFO): true exactly while Overloaded.
func (c *CoDel) ServeNewestFirst() bool { return c.overloaded.Load() }

// Shed returns how many requests Dequeue refused; OverloadedIntervals how
// many intervals ended overloaded.
func (c *CoDel) Shed() (shed, overloadedIntervals uint64) {
	return c.shed.Load(), c.intervalsHot.Load()
}
