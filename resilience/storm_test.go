package resilience

import (
	"context"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// stormResult is what one retry-storm run measured.
type stormResult struct {
	inbound, outbound int64
	succeeded         int64
}

func (r stormResult) amplification() float64 { return float64(r.outbound) / float64(r.inbound) }

// runStorm sends inbound calls, one per millisecond of simulated time,
// through Retrier.Do against a dependency that takes 5 ms and fails a share
// of attempts with ECONNRESET. It runs inside a synctest bubble: the real
// Retrier, real timers, simulated time.
func runStorm(t *testing.T, inbound int, failShare float64, budget *Budget, maxAttempts int) stormResult {
	var res stormResult
	synctest.Test(t, func(t *testing.T) {
		r := &Retrier{
			Policy: RetryPolicy{MaxAttempts: maxAttempts, Backoff: Backoff{Base: 10 * time.Millisecond, Max: 500 * time.Millisecond}, TypicalLatency: 5 * time.Millisecond},
			Budget: budget,
		}
		reset := os.NewSyscallError("read", syscall.ECONNRESET)
		var outbound, succeeded atomic.Int64
		var wg sync.WaitGroup
		for i := range inbound {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(i), 7))
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				err := r.Do(ctx, func(ctx context.Context) error {
					outbound.Add(1)
					time.Sleep(5 * time.Millisecond)
					if rng.Float64() < failShare {
						return reset
					}
					return nil
				})
				if err == nil {
					succeeded.Add(1)
				}
			}()
			time.Sleep(time.Millisecond)
		}
		wg.Wait()
		res = stormResult{inbound: int64(inbound), outbound: outbound.Load(), succeeded: succeeded.Load()}
	})
	return res
}

// TestRetryStorm: with the dependency failing 80% of calls, the retry
// budget keeps outbound calls within 1.1× of inbound; without it, retries
// multiply load toward the attempt cap (reported, not asserted).
func TestRetryStorm(t *testing.T) {
	const inbound, maxAttempts = 4000, 5
	budget, err := NewBudget(BudgetConfig{})
	if err != nil {
		t.Fatal(err)
	}
	with := runStorm(t, inbound, 0.8, budget, maxAttempts)
	without := runStorm(t, inbound, 0.8, nil, maxAttempts)
	t.Logf("80%% failures, %d inbound calls, attempt cap %d: amplification %.3f× with the budget (%d outbound, %d succeeded), %.3f× without (%d outbound, %d succeeded; the expected value without a budget is 1+0.8+0.8²+0.8³+0.8⁴ = 3.362)",
		inbound, maxAttempts, with.amplification(), with.outbound, with.succeeded,
		without.amplification(), without.outbound, without.succeeded)
	if a := with.amplification(); a > 1.1 {
		t.Errorf("amplification with the budget %.3f× exceeds 1.1×", a)
	}
	if without.amplification() < 2 {
		t.Errorf("amplification without the budget only %.3f×: the simulation does not retry", without.amplification())
	}
	if budget.InFlight() != 0 || budget.Retries() != 0 {
		t.Errorf("budget counters leaked: %d %d", budget.InFlight(), budget.Retries())
	}
	// A healthy dependency with the same budget: retries still happen when
	// failures are rare (5%), so the budget is not simply "no retries".
	healthy, _ := NewBudget(BudgetConfig{})
	h := runStorm(t, 2000, 0.05, healthy, maxAttempts)
	t.Logf("5%% failures with the budget: amplification %.3f×, %d of %d succeeded", h.amplification(), h.succeeded, h.inbound)
	if h.succeeded < h.inbound*995/1000 {
		t.Errorf("with 5%% failures only %d of %d calls succeeded: the budget starves retries", h.succeeded, h.inbound)
	}
}
