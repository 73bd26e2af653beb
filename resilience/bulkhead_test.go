package resilience

import (
	"context"
	"errors"
	"os"
	"testing"
	"testing/synctest"
	"time"
)

func TestBulkhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := NewBulkhead(BulkheadConfig{MaxConcurrent: 2, MaxWaiting: 1})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if !b.TryAcquire() {
				t.Fatalf("could not take slot %d", i)
			}
		}
		if b.TryAcquire() || b.InFlight() != 2 || b.Cap() != 2 {
			t.Fatalf("third slot taken, or InFlight %d", b.InFlight())
		}
		// One waiter fits; it gets the slot a Release frees.
		got := make(chan error, 1)
		go func() { got <- b.Acquire(context.Background()) }()
		synctest.Wait()
		if b.Waiting() != 1 {
			t.Fatalf("Waiting = %d, want 1", b.Waiting())
		}
		// A second waiter does not fit.
		if err := b.Acquire(context.Background()); !errors.Is(err, ErrBulkheadFull) {
			t.Fatalf("second waiter: %v, want ErrBulkheadFull", err)
		}
		b.Release()
		if err := <-got; err != nil {
			t.Fatalf("waiter: %v", err)
		}
		if b.InFlight() != 2 || b.Waiting() != 0 {
			t.Fatalf("InFlight %d Waiting %d", b.InFlight(), b.Waiting())
		}
		// A waiter whose deadline passes gets a timeout error.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		begin := time.Now()
		err = b.Acquire(ctx)
		if !errors.Is(err, ErrBulkheadTimeout) || !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(begin) != 30*time.Millisecond {
			t.Fatalf("err %v after %v", err, time.Since(begin))
		}
		// A canceled waiter gets context.Canceled.
		ctx2, cancel2 := context.WithCancel(context.Background())
		go func() { got <- b.Acquire(ctx2) }()
		synctest.Wait()
		cancel2()
		if err := <-got; !errors.Is(err, context.Canceled) {
			t.Fatalf("canceled waiter: %v", err)
		}
		b.Release()
		b.Release()
		b.Release() // unmatched: ignored
		if b.InFlight() != 0 {
			t.Fatalf("InFlight = %d after releases", b.InFlight())
		}
		if err := b.Acquire(context.Background()); err != nil || b.InFlight() != 1 {
			t.Fatalf("Acquire on an empty bulkhead: %v", err)
		}
	})
	z, _ := NewBulkhead(BulkheadConfig{})
	if z.Cap() != DefaultBulkheadMaxConcurrent {
		t.Fatalf("default cap %d", z.Cap())
	}
	for i, c := range []BulkheadConfig{{MaxConcurrent: -1}, {MaxWaiting: -1}, {MaxConcurrent: 1 << 21}} {
		if _, err := NewBulkhead(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%d: NewBulkhead(%+v) = %v", i, c, err)
		}
	}
}
