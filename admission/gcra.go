package admission

import (
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Quota is a GCRA rate: Count units per Per, with up to Burst units at once.
// A unit is whatever the caller charges: one request, or one byte when bytes
// are charged as they are read. For example Quota{Count: 100, Per:
// time.Second, Burst: 20} admits 20 requests at once and then one every
// 10ms.
type Quota struct {
	Count int64
	Per   time.Duration
	Burst int64
}

// Validate requires positive fields and a rate of at most one unit per
// nanosecond (the GCRA state is kept in nanoseconds).
func (q Quota) Validate() error {
	if q.Count <= 0 || q.Per <= 0 || q.Burst <= 0 {
		return fmt.Errorf("%w: %+v", ErrBadQuota, q)
	}
	if q.interval(1) < 1 {
		return fmt.Errorf("%w: rate %d per %v is finer than 1ns per unit", ErrBadQuota, q.Count, q.Per)
	}
	return nil
}

// interval returns the emission interval of n units, n*Per/Count in
// nanoseconds, computed in 128 bits and saturated at MaxInt64.
func (q Quota) interval(n int64) int64 {
	hi, lo := bits.Mul64(uint64(n), uint64(q.Per))
	if hi >= uint64(q.Count) {
		return math.MaxInt64
	}
	v, _ := bits.Div64(hi, lo, uint64(q.Count))
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// Decision is a rate limiter's answer for one request.
type Decision struct {
	// Allowed reports whether the cost was charged.
	Allowed bool
	// RetryAfter is, when not allowed, the exact wait after which the same
	// cost would be allowed if nothing else is charged meanwhile.
	RetryAfter time.Duration
	// Remaining is how many units could be charged right now after this
	// decision.
	Remaining int64
	// ResetAfter is how long until the tenant's burst is fully available.
	ResetAfter time.Duration
}

// gcra applies the generic cell rate algorithm to one tenant whose
// theoretical arrival time is tat (nanoseconds; any value <= now means "no
// debt") for a cost of n units at now. It returns the new tat (unchanged
// when refused) and the decision. The caller has validated n <= Burst.
//
// The model: each unit pushes the theoretical arrival time one emission
// interval into the future; a request is allowed when, after adding its
// cost, the theoretical arrival time is at most Burst intervals ahead of now.
func (q Quota) gcra(tat, now, n int64) (int64, Decision) {
	tau := q.interval(q.Burst) // how far ahead of now the TAT may run
	base := max(tat, now)
	newTat := satAdd(base, q.interval(n))
	allowAt := newTat - tau
	if now < allowAt {
		return tat, Decision{
			RetryAfter: time.Duration(allowAt - now),
			Remaining:  q.remaining(tau - (base - now)),
			ResetAfter: time.Duration(base - now),
		}
	}
	return newTat, Decision{
		Allowed:    true,
		Remaining:  q.remaining(tau - (newTat - now)),
		ResetAfter: time.Duration(newTat - now),
	}
}

// remaining converts headroom in nanoseconds to whole units.
func (q Quota) remaining(headroom int64) int64 {
	if headroom <= 0 {
		return 0
	}
	u := q.interval(1)
	return min(headroom/u, q.Burst)
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
