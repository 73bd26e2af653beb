package resilience

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Jitter selects how Backoff spreads its delays (see the AWS architecture
// blog, "Exponential Backoff And Jitter").
type Jitter uint8

// The jitter modes. The zero value is JitterFull.
const (
	// JitterFull: uniform in [0, exp), where exp = min(Max, Base·Multiplier^(n−1)).
	JitterFull Jitter = iota
	// JitterEqual: exp/2 plus uniform in [0, exp/2).
	JitterEqual
	// JitterDecorrelated: uniform in [Base, 3·previous delay), capped at Max;
	// each delay depends on the one before, not on the retry number.
	JitterDecorrelated
	// JitterNone: exactly exp. For tests and lock-step systems only: without
	// jitter, clients that failed together retry together.
	JitterNone
)

// String returns "full", "equal", "decorrelated" or "none".
func (j Jitter) String() string {
	switch j {
	case JitterFull:
		return "full"
	case JitterEqual:
		return "equal"
	case JitterDecorrelated:
		return "decorrelated"
	case JitterNone:
		return "none"
	}
	return fmt.Sprintf("jitter(%d)", uint8(j))
}

// Default backoff parameters, used where a Backoff field is zero.
const (
	DefaultBackoffBase       = 10 * time.Millisecond
	DefaultBackoffMax        = time.Second
	DefaultBackoffMultiplier = 2.0
)

// Backoff computes the delay before a retry: exponential growth from Base by
// Multiplier, capped at Max, spread by Jitter. The zero value is full jitter
// from 10 ms doubling up to 1 s. A Backoff is a plain value, safe to copy and
// to use from many goroutines (given a safe random source).
type Backoff struct {
	Base       time.Duration // first delay's scale; 0 means DefaultBackoffBase
	Max        time.Duration // cap on every delay; 0 means DefaultBackoffMax
	Multiplier float64       // growth per retry, ≥ 1; 0 means DefaultBackoffMultiplier
	Jitter     Jitter        // spread; the zero value is JitterFull
}

// Validate reports a negative duration, Max below Base, a multiplier below 1
// or an unknown jitter mode.
func (b Backoff) Validate() error {
	switch {
	case b.Base < 0 || b.Max < 0:
		return fmt.Errorf("%w: Backoff durations must not be negative (Base %v, Max %v)", ErrInvalidConfig, b.Base, b.Max)
	case b.max() < b.base():
		return fmt.Errorf("%w: Backoff.Max %v is below Base %v", ErrInvalidConfig, b.max(), b.base())
	case b.Multiplier != 0 && (b.Multiplier < 1 || math.IsNaN(b.Multiplier) || math.IsInf(b.Multiplier, 0)):
		return fmt.Errorf("%w: Backoff.Multiplier %v must be ≥ 1", ErrInvalidConfig, b.Multiplier)
	case b.Jitter > JitterNone:
		return fmt.Errorf("%w: unknown jitter mode %d", ErrInvalidConfig, uint8(b.Jitter))
	}
	return nil
}

func (b Backoff) base() time.Duration {
	if b.Base == 0 {
		return DefaultBackoffBase
	}
	return b.Base
}

func (b Backoff) max() time.Duration {
	if b.Max == 0 {
		return DefaultBackoffMax
	}
	return b.Max
}

func (b Backoff) multiplier() float64 {
	if b.Multiplier == 0 {
		return DefaultBackoffMultiplier
	}
	return b.Multiplier
}

// Delay returns the delay before retry number retry (1 for the first retry),
// given the previous delay (used by JitterDecorrelated; pass 0 before the
// first retry) and a random source (nil means math/rand/v2's global source,
// which is safe for concurrent use). The result is in [0, Max]. Delay does
// not allocate.
func (b Backoff) Delay(retry int, prev time.Duration, r rand.Source) time.Duration {
	base, maxD := float64(b.base()), float64(b.max())
	if b.Jitter == JitterDecorrelated {
		p := float64(prev)
		if p < base {
			p = base
		}
		hi := math.Min(3*p, maxD)
		if hi < base {
			hi = base
		}
		return time.Duration(base + unit(r)*(hi-base))
	}
	if retry < 1 {
		retry = 1
	}
	exp := math.Min(base*math.Pow(b.multiplier(), float64(retry-1)), maxD)
	switch b.Jitter {
	case JitterEqual:
		return time.Duration(exp/2 + unit(r)*exp/2)
	case JitterNone:
		return time.Duration(exp)
	default:
		return time.Duration(unit(r) * exp)
	}
}

// unit returns a uniform float64 in [0, 1) from r, or from the global source
// when r is nil.
func unit(r rand.Source) float64 {
	var u uint64
	if r == nil {
		u = rand.Uint64()
	} else {
		u = r.Uint64()
	}
	return float64(u>>11) * 0x1p-53
}
