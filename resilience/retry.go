package resilience

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Default retry parameters, used where a RetryPolicy field is zero.
const (
	DefaultMaxAttempts = 3
	// DefaultLatencyMinSamples is how many samples a LatencyTracker needs
	// before its estimate replaces a configured latency.
	DefaultLatencyMinSamples = 20
	maxAttemptsLimit         = 100
)

// RetryPolicy is the pure retry policy: which errors to retry, how often,
// how long to wait, and when the deadline makes another attempt pointless.
// It reads no clock: RetryState.Next takes now.
//
// The zero value retries retryable errors up to 3 attempts in all, with full
// jitter from 10 ms doubling to 1 s, and the default classification. A
// RetryPolicy must not be changed while calls use it; it is safe for
// concurrent use when its Rand is.
type RetryPolicy struct {
	// MaxAttempts is the cap on attempts per call, the first included; 0
	// means 3, 1 disables retries, at most 100.
	MaxAttempts int
	// Backoff computes the delay before each retry.
	Backoff Backoff
	// TypicalLatency is the configured typical attempt latency: a retry is
	// not started with less time than this left before the deadline.
	TypicalLatency time.Duration
	// Latency, if set, tracks attempt latencies; once it holds
	// DefaultLatencyMinSamples samples its median replaces TypicalLatency.
	// Retrier.Do feeds it successful attempts.
	Latency *LatencyTracker
	// Rand is the jitter source; nil means math/rand/v2's global source.
	Rand rand.Source
	// Classify classifies errors; nil means the package's Classify.
	Classify func(error) Class
}

// Validate reports out-of-range values.
func (p *RetryPolicy) Validate() error {
	switch {
	case p.MaxAttempts < 0 || p.MaxAttempts > maxAttemptsLimit:
		return fmt.Errorf("%w: RetryPolicy.MaxAttempts %d not in [0, %d]", ErrInvalidConfig, p.MaxAttempts, maxAttemptsLimit)
	case p.TypicalLatency < 0:
		return fmt.Errorf("%w: RetryPolicy.TypicalLatency %v is negative", ErrInvalidConfig, p.TypicalLatency)
	}
	return p.Backoff.Validate()
}

func (p *RetryPolicy) maxAttempts() int {
	if p.MaxAttempts <= 0 {
		return DefaultMaxAttempts
	}
	return p.MaxAttempts
}

func (p *RetryPolicy) classify(err error) Class {
	if p.Classify != nil {
		return p.Classify(err)
	}
	return Classify(err)
}

// Typical returns the latency a retry needs left before the deadline: the
// tracked median once there are enough samples, else TypicalLatency.
func (p *RetryPolicy) Typical() time.Duration {
	if p.Latency != nil && p.Latency.Count() >= DefaultLatencyMinSamples {
		if d, ok := p.Latency.Quantile(0.5); ok {
			return d
		}
	}
	return p.TypicalLatency
}

// Start begins one logical call whose first attempt starts now, with an
// absolute deadline (the zero time means none). The deadline is fixed here
// once and holds across every attempt.
func (p *RetryPolicy) Start(deadline time.Time) RetryState {
	return RetryState{p: p, deadline: deadline, attempts: 1}
}

// RetryState is one logical call's progress through a RetryPolicy. Get one
// from RetryPolicy.Start; it is a small value, not safe for concurrent use.
type RetryState struct {
	p        *RetryPolicy
	deadline time.Time
	attempts int
	prev     time.Duration
}

// Attempts returns the attempts started so far (1 after Start).
func (s *RetryState) Attempts() int { return s.attempts }

// Deadline returns the call's absolute deadline (zero for none).
func (s *RetryState) Deadline() time.Time { return s.deadline }

// Next decides, at now, after an attempt failed with err, whether to retry.
// It returns the delay before the next attempt and nil, counting that
// attempt as started; or a reason to stop: ErrNotRetryable (err's class is
// not retryable, or err is nil), ErrOverloaded (the server asked not to be
// retried), ErrAttemptsExhausted, or ErrDeadlineTooClose (after the delay
// the deadline would have passed, or less than the typical latency would be
// left). The delay is the backoff, or the server's retry-after when that is
// larger. Next does not allocate.
func (s *RetryState) Next(now time.Time, err error) (time.Duration, error) {
	if err == nil {
		return 0, ErrNotRetryable
	}
	switch s.p.classify(err) {
	case ClassRetryable:
	case ClassOverloaded:
		return 0, ErrOverloaded
	default:
		return 0, ErrNotRetryable
	}
	if s.attempts >= s.p.maxAttempts() {
		return 0, ErrAttemptsExhausted
	}
	d := s.p.Backoff.Delay(s.attempts, s.prev, s.p.Rand)
	if ra, ok := RetryAfter(err); ok && ra > d {
		d = ra
	}
	if !s.deadline.IsZero() {
		left := s.deadline.Sub(now) - d
		if left <= 0 || left < s.p.Typical() {
			return 0, ErrDeadlineTooClose
		}
	}
	s.prev = d
	s.attempts++
	return d, nil
}
