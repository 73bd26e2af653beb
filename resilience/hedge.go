package resilience

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Default hedging parameters, used where a HedgeConfig field is zero.
const (
	DefaultHedgeAttempts = 2
	DefaultHedgeQuantile = 0.95
	DefaultHedgeMinDelay = time.Millisecond
)

// HedgeConfig configures a Hedger. The zero value sends one hedge after the
// running p95 of attempt latency (at least 1 ms), once 20 latencies have been
// seen, without a budget.
type HedgeConfig struct {
	// MaxAttempts caps attempts per call, the primary included; 0 means 2;
	// at most 100.
	MaxAttempts int
	// Quantile is the latency quantile that sets the hedge delay; in
	// (0, 1); 0 means 0.95.
	Quantile float64
	// MinDelay and MaxDelay bound the hedge delay; 0 means 1 ms and no
	// upper bound.
	MinDelay, MaxDelay time.Duration
	// InitialDelay is the hedge delay used until Latency holds MinSamples
	// samples; 0 means no hedging until then.
	InitialDelay time.Duration
	// MinSamples is how many latencies the estimate needs; 0 means 20.
	MinSamples int
	// Latency tracks attempt latencies; nil means a tracker of the
	// Hedger's own (share one with a RetryPolicy if you like).
	Latency *LatencyTracker
	// Budget, if set, must admit every hedge (TryRetry), the same budget
	// retries to this destination draw on. nil means hedges are limited by
	// MaxAttempts only.
	Budget *Budget
	// Classify classifies errors; nil means the package's Classify.
	Classify func(error) Class
	// Clock times the hedge delays; nil means SystemClock.
	Clock Clock
}

// Validate reports out-of-range values.
func (c HedgeConfig) Validate() error {
	switch {
	case c.MaxAttempts < 0 || c.MaxAttempts > maxAttemptsLimit:
		return fmt.Errorf("%w: HedgeConfig.MaxAttempts %d not in [0, %d]", ErrInvalidConfig, c.MaxAttempts, maxAttemptsLimit)
	case c.Quantile < 0 || c.Quantile >= 1 || math.IsNaN(c.Quantile):
		return fmt.Errorf("%w: HedgeConfig.Quantile %v not in [0, 1)", ErrInvalidConfig, c.Quantile)
	case c.MinDelay < 0 || c.MaxDelay < 0 || c.InitialDelay < 0 || c.MinSamples < 0:
		return fmt.Errorf("%w: HedgeConfig delays and MinSamples must not be negative", ErrInvalidConfig)
	case c.MaxDelay > 0 && c.MaxDelay < c.MinDelay:
		return fmt.Errorf("%w: HedgeConfig.MaxDelay %v below MinDelay %v", ErrInvalidConfig, c.MaxDelay, c.MinDelay)
	}
	return nil
}

// Hedger sends extra copies of a slow idempotent call and keeps the first
// success (Dean and Barroso, "The Tail at Scale"). The hedge delay is the
// running p95 of attempt latency, so about 5% of calls hedge; the shared
// Budget caps hedges under load. Hedge only idempotent calls: several
// copies may run to completion.
//
// A Hedger is safe for concurrent use.
type Hedger struct {
	cfg HedgeConfig
	lat *LatencyTracker
	clk Clock
}

// NewHedger validates cfg and returns a Hedger.
func NewHedger(cfg HedgeConfig) (*Hedger, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultHedgeAttempts
	}
	if cfg.Quantile == 0 {
		cfg.Quantile = DefaultHedgeQuantile
	}
	if cfg.MinDelay == 0 {
		cfg.MinDelay = DefaultHedgeMinDelay
	}
	if cfg.MinSamples == 0 {
		cfg.MinSamples = DefaultLatencyMinSamples
	}
	h := &Hedger{cfg: cfg, lat: cfg.Latency, clk: clockOr(cfg.Clock)}
	if h.lat == nil {
		h.lat = NewLatencyTracker(0)
	}
	return h, nil
}

// Latency returns the tracker the hedge delay comes from.
func (h *Hedger) Latency() *LatencyTracker { return h.lat }

// Delay returns the current hedge delay, and false when the Hedger would
// not hedge (too few samples and no InitialDelay). It does not allocate.
func (h *Hedger) Delay() (time.Duration, bool) {
	if h.lat.Count() < h.cfg.MinSamples {
		if h.cfg.InitialDelay > 0 {
			return h.cfg.InitialDelay, true
		}
		return 0, false
	}
	d, ok := h.lat.Quantile(h.cfg.Quantile)
	if !ok {
		return 0, false
	}
	d = max(d, h.cfg.MinDelay)
	if h.cfg.MaxDelay > 0 {
		d = min(d, h.cfg.MaxDelay)
	}
	return d, true
}

func (h *Hedger) classify(err error) Class {
	if h.cfg.Classify != nil {
		return h.cfg.Classify(err)
	}
	return Classify(err)
}

type hedgeResult[T any] struct {
	v       T
	err     error
	latency time.Duration
}

// Hedge runs fn (attempt 0), and whenever the hedge delay passes without a
// success starts another attempt (1, 2, ...) while MaxAttempts and the
// budget allow. A retryable failure starts the next attempt at once; any
// other failure ends the call, except a hedge refused by a Throttle
// (ErrThrottled) while other attempts are outstanding: that only stops
// further hedges. The first success wins: its value is
// returned and the other attempts' context is canceled. If every attempt
// fails the result is a *RetryError. Hedge returns without waiting for
// canceled attempts, so fn must honour its context; their results are
// dropped. Successful attempt latencies feed the estimate, and so do the
// elapsed times of attempts canceled because another won (a lower bound).
func Hedge[T any](ctx context.Context, h *Hedger, fn func(ctx context.Context, attempt int) (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, &RetryError{Reason: ctxReason(err)}
	}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	budget := h.cfg.Budget
	if budget != nil {
		budget.Begin()
		defer budget.End()
	}
	results := make(chan hedgeResult[T], h.cfg.MaxAttempts)
	launch := func(attempt int, hedged bool) {
		start := h.clk.Now()
		go func() {
			v, err := fn(actx, attempt)
			lat := h.clk.Now().Sub(start)
			if hedged {
				budget.EndRetry()
			}
			if err != nil && actx.Err() != nil && ctx.Err() == nil {
				// Canceled because another attempt won: a censored sample.
				h.lat.Observe(lat)
			}
			results <- hedgeResult[T]{v: v, err: err, latency: lat}
		}()
	}
	// tryLaunch starts the next attempt if the cap and the budget allow.
	started, outstanding := 0, 0
	budgetRefused := false
	tryLaunch := func() bool {
		if started >= h.cfg.MaxAttempts {
			return false
		}
		hedged := started > 0 && budget != nil
		if hedged && !budget.TryRetry() {
			budgetRefused = true
			return false
		}
		launch(started, hedged)
		started++
		outstanding++
		return true
	}
	var timer Timer
	arm := func() {
		if timer != nil {
			timer.Stop()
			timer = nil
		}
		if started < h.cfg.MaxAttempts {
			if d, ok := h.Delay(); ok {
				timer = h.clk.NewTimer(d)
			}
		}
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	tryLaunch()
	arm()
	var last error
	for {
		var tick <-chan time.Time
		if timer != nil {
			tick = timer.C()
		}
		select {
		case <-ctx.Done():
			return zero, &RetryError{Attempts: started, Reason: ctxReason(ctx.Err()), Err: last}
		case <-tick:
			timer = nil
			if tryLaunch() {
				arm()
			} else if outstanding == 0 {
				return zero, &RetryError{Attempts: started, Reason: exhausted(budgetRefused), Err: last}
			}
		case r := <-results:
			outstanding--
			class := h.classify(r.err)
			local := throttled(r.err)
			if budget != nil {
				if local {
					budget.RecordLocalRefusal()
				} else {
					budget.Record(class.Outcome())
				}
			}
			if r.err == nil {
				h.lat.Observe(r.latency)
				return r.v, nil
			}
			last = r.err
			if local && outstanding > 0 {
				// A hedge the throttle refused: no more hedges, but the
				// attempts already sent may still win.
				if timer != nil {
					timer.Stop()
					timer = nil
				}
				continue
			}
			switch class {
			case ClassRetryable:
			case ClassOverloaded:
				return zero, &RetryError{Attempts: started, Reason: ErrOverloaded, Err: r.err}
			default:
				if cerr := ctx.Err(); cerr != nil {
					return zero, &RetryError{Attempts: started, Reason: ctxReason(cerr), Err: r.err}
				}
				return zero, &RetryError{Attempts: started, Reason: ErrNotRetryable, Err: r.err}
			}
			// A retryable failure: the next attempt goes now, or after the
			// server's retry-after if it sent one.
			if ra, ok := RetryAfter(r.err); ok && started < h.cfg.MaxAttempts {
				if timer != nil {
					timer.Stop()
				}
				timer = h.clk.NewTimer(ra)
			} else if tryLaunch() {
				arm()
			}
			if outstanding == 0 && timer == nil {
				return zero, &RetryError{Attempts: started, Reason: exhausted(budgetRefused), Err: last}
			}
		}
	}
}

func exhausted(budgetRefused bool) error {
	if budgetRefused {
		return ErrBudgetExhausted
	}
	return ErrAttemptsExhausted
}
