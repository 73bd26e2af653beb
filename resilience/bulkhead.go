package resilience

import (
	"context"
	"fmt"
	"sync/atomic"
)

// Default bulkhead parameters.
const (
	DefaultBulkheadMaxConcurrent = 64
	maxBulkheadSlots             = 1 << 20
)

// BulkheadConfig configures a Bulkhead. The zero value admits 64 concurrent
// calls and refuses the 65th at once.
type BulkheadConfig struct {
	// MaxConcurrent is the cap on calls in flight to the dependency; 0
	// means 64.
	MaxConcurrent int
	// MaxWaiting is how many callers may wait in Acquire for a slot; 0
	// means none (Acquire fails fast with ErrBulkheadFull).
	MaxWaiting int
}

// Validate reports out-of-range values.
func (c BulkheadConfig) Validate() error {
	if c.MaxConcurrent < 0 || c.MaxConcurrent > maxBulkheadSlots || c.MaxWaiting < 0 || c.MaxWaiting > maxBulkheadSlots {
		return fmt.Errorf("%w: BulkheadConfig values must be in [0, %d]", ErrInvalidConfig, maxBulkheadSlots)
	}
	return nil
}

// Bulkhead caps the concurrent outbound calls to one dependency, so a slow
// dependency ties up at most MaxConcurrent callers and a bounded queue of
// MaxWaiting, never the whole process. Use one per dependency.
//
// A Bulkhead is safe for concurrent use; TryAcquire, Acquire (without
// waiting) and Release do not allocate.
type Bulkhead struct {
	slots      chan struct{}
	waiting    atomic.Int64
	maxWaiting int64
}

// NewBulkhead returns an empty bulkhead.
func NewBulkhead(cfg BulkheadConfig) (*Bulkhead, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := cfg.MaxConcurrent
	if n == 0 {
		n = DefaultBulkheadMaxConcurrent
	}
	return &Bulkhead{slots: make(chan struct{}, n), maxWaiting: int64(cfg.MaxWaiting)}, nil
}

// TryAcquire takes a slot if one is free.
func (b *Bulkhead) TryAcquire() bool {
	select {
	case b.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// Acquire takes a slot, waiting while ctx allows if the wait queue has room.
// It returns ErrBulkheadFull when the queue is full, ErrBulkheadTimeout when
// the context's deadline passes while waiting, or the context's error when
// it is canceled.
func (b *Bulkhead) Acquire(ctx context.Context) error {
	if b.TryAcquire() {
		return nil
	}
	if b.waiting.Add(1) > b.maxWaiting {
		b.waiting.Add(-1)
		return ErrBulkheadFull
	}
	defer b.waiting.Add(-1)
	select {
	case b.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		if err := ctx.Err(); err != context.DeadlineExceeded {
			return err
		}
		return ErrBulkheadTimeout
	}
}

// Release frees a slot taken by TryAcquire or Acquire. A Release without a
// matching acquire is ignored.
func (b *Bulkhead) Release() {
	select {
	case <-b.slots:
	default:
	}
}

// InFlight returns the slots taken.
func (b *Bulkhead) InFlight() int { return len(b.slots) }

// Waiting returns the callers waiting in Acquire.
func (b *Bulkhead) Waiting() int { return int(b.waiting.Load()) }

// Cap returns MaxConcurrent.
func (b *Bulkhead) Cap() int { return cap(b.slots) }
