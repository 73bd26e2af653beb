package kv

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Dependency simulates a downstream service every envelope mutation must
// reach before its effect (think of a replica or a durable log): each call
// takes Latency and fails with probability ErrorRate. It lets breakers,
// retries and budgets be watched working. The zero value answers at once
// and never fails. Set the fields before use; a Dependency is then safe for
// concurrent use.
type Dependency struct {
	// Latency is how long each call takes (a call ends early, with the
	// context's error, when its context ends first).
	Latency time.Duration
	// ErrorRate is the probability in [0, 1] that a call fails with an
	// error wrapping ErrDependency, classified retryable.
	ErrorRate float64

	calls    atomic.Uint64
	failures atomic.Uint64
}

// Enabled reports whether calls cost anything: a zero Dependency need not
// be called at all.
func (d *Dependency) Enabled() bool { return d != nil && (d.Latency > 0 || d.ErrorRate > 0) }

// Call makes one simulated call. It returns nil, ctx's error when ctx ends
// during the latency, or an error wrapping ErrDependency.
func (d *Dependency) Call(ctx context.Context) error {
	d.calls.Add(1)
	if d.Latency > 0 {
		t := time.NewTimer(d.Latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			d.failures.Add(1)
			return ctx.Err()
		}
	} else if err := ctx.Err(); err != nil {
		d.failures.Add(1)
		return err
	}
	if d.ErrorRate > 0 && rand.Float64() < d.ErrorRate {
		d.failures.Add(1)
		return errDependencyRetryable
	}
	return nil
}

// Calls returns how many calls were made and how many of them failed.
func (d *Dependency) Calls() (calls, failures uint64) {
	return d.calls.Load(), d.failures.Load()
}
