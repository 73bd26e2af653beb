package resilience

import (
	"fmt"
	"math"
	"sync/atomic"
)

// Default retry budget parameters, used where a BudgetConfig field is zero.
const (
	// DefaultMaxTokens and DefaultTokenRatio are gRPC's retry throttling
	// defaults (gRFC A6): 10 tokens, each success earns back 0.1.
	DefaultMaxTokens  = 10.0
	DefaultTokenRatio = 0.1
	// DefaultRetryRatio and DefaultMinRetries are Envoy's retry budget
	// defaults: concurrent retries may be 20% of in-flight calls, never
	// fewer than 3.
	DefaultRetryRatio = 0.2
	DefaultMinRetries = 3
)

// tokenScale is the fixed-point scale of the token count: gRPC specifies the
// ratio to three decimal places, so tokens are counted in thousandths.
const tokenScale = 1000

// BudgetConfig configures a Budget. The zero value is gRPC's and Envoy's
// defaults together.
type BudgetConfig struct {
	// MaxTokens is the token bucket size; retries are refused while the
	// count is at or below half of it. 0 means DefaultMaxTokens.
	MaxTokens float64
	// TokenRatio is the tokens a success earns back (a failure costs one).
	// 0 means DefaultTokenRatio.
	TokenRatio float64
	// RetryRatio caps concurrent retries and hedges as a share of the
	// calls in flight. 0 means DefaultRetryRatio.
	RetryRatio float64
	// MinRetries is the floor of that cap, so a quiet destination can
	// still retry. 0 means DefaultMinRetries; negative is invalid.
	MinRetries int
}

// Validate reports out-of-range values.
func (c BudgetConfig) Validate() error {
	bad := func(v float64) bool { return v < 0 || math.IsNaN(v) || math.IsInf(v, 0) }
	switch {
	case bad(c.MaxTokens) || c.MaxTokens > 1e6:
		return fmt.Errorf("%w: BudgetConfig.MaxTokens %v not in [0, 1e6]", ErrInvalidConfig, c.MaxTokens)
	case bad(c.TokenRatio) || c.TokenRatio > c.maxTokens():
		return fmt.Errorf("%w: BudgetConfig.TokenRatio %v not in [0, MaxTokens]", ErrInvalidConfig, c.TokenRatio)
	case bad(c.RetryRatio) || c.RetryRatio > 1e3:
		return fmt.Errorf("%w: BudgetConfig.RetryRatio %v not in [0, 1000]", ErrInvalidConfig, c.RetryRatio)
	case c.MinRetries < 0:
		return fmt.Errorf("%w: BudgetConfig.MinRetries %d is negative", ErrInvalidConfig, c.MinRetries)
	}
	return nil
}

func (c BudgetConfig) maxTokens() float64 {
	if c.MaxTokens == 0 {
		return DefaultMaxTokens
	}
	return c.MaxTokens
}

// Budget is the retry budget of one destination. Retries and hedges both
// draw on it. It combines two limits:
//
//   - gRPC retry throttling: a token count starts at MaxTokens, each failed
//     attempt costs 1 and each success earns TokenRatio; retries are allowed
//     only while the count is above MaxTokens/2. Under a failure burst the
//     count drains and retries stop, so outbound calls fall back to about
//     one per inbound call.
//   - Envoy's retry budget: concurrent retries at most
//     max(MinRetries, RetryRatio × calls in flight).
//
// A caller brackets each logical call with Begin and End, asks TryRetry
// before each retry or hedge (and calls EndRetry when that attempt ends),
// and Records every attempt's outcome, or RecordLocalRefusal for one its
// Throttle refused. Budget is safe for concurrent use, lock-free, and
// allocates nothing after NewBudget.
type Budget struct {
	tokens     atomic.Int64 // thousandths of a token
	inflight   atomic.Int64
	retries    atomic.Int64
	refusals   atomic.Int64 // RecordLocalRefusal calls
	maxTokens  int64
	threshold  int64
	earn       int64
	retryRatio float64
	minRetries int64
}

// NewBudget returns a budget with a full token bucket.
func NewBudget(cfg BudgetConfig) (*Budget, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ratio := cfg.TokenRatio
	if ratio == 0 {
		ratio = DefaultTokenRatio
	}
	rr := cfg.RetryRatio
	if rr == 0 {
		rr = DefaultRetryRatio
	}
	minR := cfg.MinRetries
	if minR == 0 {
		minR = DefaultMinRetries
	}
	b := &Budget{
		maxTokens:  int64(math.Round(cfg.maxTokens() * tokenScale)),
		earn:       int64(math.Round(ratio * tokenScale)),
		retryRatio: rr,
		minRetries: int64(minR),
	}
	b.threshold = b.maxTokens / 2
	b.tokens.Store(b.maxTokens)
	return b, nil
}

// Begin counts a logical call as in flight.
func (b *Budget) Begin() { b.inflight.Add(1) }

// End counts a logical call as finished; pair it with Begin.
func (b *Budget) End() { b.inflight.Add(-1) }

// TryRetry reports whether one more retry or hedge may be sent now and, if
// so, counts it as in flight until EndRetry.
func (b *Budget) TryRetry() bool {
	if b.tokens.Load() <= b.threshold {
		return false
	}
	limit := int64(b.retryRatio * float64(b.inflight.Load()))
	if limit < b.minRetries {
		limit = b.minRetries
	}
	for {
		n := b.retries.Load()
		if n >= limit {
			return false
		}
		if b.retries.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// EndRetry releases a retry or hedge admitted by TryRetry.
func (b *Budget) EndRetry() { b.retries.Add(-1) }

// Record adds one attempt's outcome to the token count: a failure costs a
// token, a success earns TokenRatio, an ignored outcome does nothing.
func (b *Budget) Record(o Outcome) {
	switch o {
	case OutcomeFailure:
		for {
			t := b.tokens.Load()
			n := t - tokenScale
			if n < 0 {
				n = 0
			}
			if n == t || b.tokens.CompareAndSwap(t, n) {
				return
			}
		}
	case OutcomeSuccess:
		for {
			t := b.tokens.Load()
			n := t + b.earn
			if n > b.maxTokens {
				n = b.maxTokens
			}
			if n == t || b.tokens.CompareAndSwap(t, n) {
				return
			}
		}
	}
}

// RecordLocalRefusal records an attempt that a Throttle refused before it
// was sent (ErrThrottled): it costs a token like a failure, earns nothing,
// and is counted in LocalRefusals. It stands for an attempt the destination
// would most likely have refused, so while the throttle refuses, retries
// stay off too; see docs/CLIENT.md#the-retry-budget-and-local-refusals.
func (b *Budget) RecordLocalRefusal() {
	b.refusals.Add(1)
	b.Record(OutcomeFailure)
}

// LocalRefusals returns how many attempts RecordLocalRefusal has recorded
// since NewBudget.
func (b *Budget) LocalRefusals() int64 { return b.refusals.Load() }

// Tokens returns the current token count.
func (b *Budget) Tokens() float64 { return float64(b.tokens.Load()) / tokenScale }

// InFlight returns the logical calls in flight (Begin minus End).
func (b *Budget) InFlight() int { return int(b.inflight.Load()) }

// Retries returns the retries and hedges in flight (TryRetry successes
// minus EndRetry).
func (b *Budget) Retries() int { return int(b.retries.Load()) }
