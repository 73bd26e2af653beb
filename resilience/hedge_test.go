package resilience

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// sleepCtx sleeps d of (simulated) time or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type hedgeAttempt struct {
	latency time.Duration
	err     error
}

// TestHedgeTable runs Hedge in a synctest bubble: per attempt a latency and
// an error; the table checks the winner, the attempts started and the
// simulated time the call took.
func TestHedgeTable(t *testing.T) {
	ms := time.Millisecond
	reset := syscall.ECONNRESET
	tests := []struct {
		name     string
		cfg      HedgeConfig
		attempts []hedgeAttempt
		winner   int // -1: the call fails
		started  int
		took     time.Duration
		reason   error
	}{
		{"fast primary, no hedge", HedgeConfig{InitialDelay: 20 * ms}, []hedgeAttempt{{5 * ms, nil}, {5 * ms, nil}},
			0, 1, 5 * ms, nil},
		{"slow primary, hedge wins", HedgeConfig{InitialDelay: 20 * ms}, []hedgeAttempt{{500 * ms, nil}, {5 * ms, nil}},
			1, 2, 25 * ms, nil},
		{"hedge slower than primary", HedgeConfig{InitialDelay: 20 * ms}, []hedgeAttempt{{30 * ms, nil}, {50 * ms, nil}},
			0, 2, 30 * ms, nil},
		{"three attempts", HedgeConfig{MaxAttempts: 3, InitialDelay: 10 * ms}, []hedgeAttempt{{500 * ms, nil}, {500 * ms, nil}, {5 * ms, nil}},
			2, 3, 25 * ms, nil},
		{"retryable failure hedges at once", HedgeConfig{InitialDelay: 100 * ms}, []hedgeAttempt{{5 * ms, reset}, {5 * ms, nil}},
			1, 2, 10 * ms, nil},
		{"retry-after delays the next attempt", HedgeConfig{InitialDelay: 100 * ms},
			[]hedgeAttempt{{5 * ms, WithClass(errors.New("503"), ClassRetryable, 40*ms)}, {5 * ms, nil}},
			1, 2, 50 * ms, nil},
		{"fatal failure ends the call", HedgeConfig{InitialDelay: 100 * ms}, []hedgeAttempt{{5 * ms, WithClass(errors.New("400"), ClassPermanent, 0)}},
			-1, 1, 5 * ms, ErrNotRetryable},
		{"overloaded ends the call", HedgeConfig{InitialDelay: 100 * ms}, []hedgeAttempt{{5 * ms, WithClass(errors.New("shed"), ClassOverloaded, 0)}},
			-1, 1, 5 * ms, ErrOverloaded},
		{"every attempt fails", HedgeConfig{InitialDelay: 10 * ms}, []hedgeAttempt{{30 * ms, reset}, {5 * ms, reset}},
			-1, 2, 30 * ms, ErrAttemptsExhausted},
		{"no samples and no initial delay: no hedge", HedgeConfig{}, []hedgeAttempt{{500 * ms, nil}},
			0, 1, 500 * ms, nil},
	}
	for i, tt := range tests {
		synctest.Test(t, func(t *testing.T) {
			h, err := NewHedger(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var started atomic.Int32
			begin := time.Now()
			v, err := Hedge(context.Background(), h, func(ctx context.Context, attempt int) (int, error) {
				started.Add(1)
				a := tt.attempts[attempt]
				if err := sleepCtx(ctx, a.latency); err != nil {
					return -1, err
				}
				return attempt, a.err
			})
			took := time.Since(begin)
			synctest.Wait() // losers see the cancel and exit
			if tt.winner >= 0 && (err != nil || v != tt.winner) {
				t.Errorf("%d %s: got %v, %v; want winner %d", i, tt.name, v, err, tt.winner)
			}
			if tt.winner < 0 && !errors.Is(err, tt.reason) {
				t.Errorf("%d %s: err = %v, want %v", i, tt.name, err, tt.reason)
			}
			if int(started.Load()) != tt.started {
				t.Errorf("%d %s: %d attempts started, want %d", i, tt.name, started.Load(), tt.started)
			}
			if took != tt.took {
				t.Errorf("%d %s: took %v, want %v", i, tt.name, took, tt.took)
			}
		})
	}
}

func TestHedgeBudgetAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := NewBudget(BudgetConfig{})
		for range 5 {
			b.Record(OutcomeFailure) // tokens at 5: no hedges
		}
		h, _ := NewHedger(HedgeConfig{InitialDelay: 10 * time.Millisecond, Budget: b})
		var started atomic.Int32
		_, err := Hedge(context.Background(), h, func(ctx context.Context, attempt int) (int, error) {
			started.Add(1)
			return attempt, sleepCtx(ctx, 100*time.Millisecond)
		})
		if err != nil || started.Load() != 1 {
			t.Fatalf("err %v, %d attempts: the drained budget must refuse the hedge", err, started.Load())
		}
		if b.InFlight() != 0 || b.Retries() != 0 {
			t.Fatalf("budget leaked: %d %d", b.InFlight(), b.Retries())
		}
		// The caller's context ends the call.
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		h2, _ := NewHedger(HedgeConfig{InitialDelay: 10 * time.Millisecond})
		_, err = Hedge(ctx, h2, func(ctx context.Context, attempt int) (int, error) {
			return 0, sleepCtx(ctx, time.Second)
		})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the deadline", err)
		}
		synctest.Wait()
	})
}

func TestHedgeDelay(t *testing.T) {
	lat := NewLatencyTracker(0)
	h, _ := NewHedger(HedgeConfig{Latency: lat, MinSamples: 10, MinDelay: 2 * time.Millisecond, MaxDelay: 50 * time.Millisecond})
	if _, ok := h.Delay(); ok {
		t.Fatal("hedging before any sample")
	}
	for i := range 100 {
		lat.Observe(time.Duration(i+1) * 100 * time.Microsecond) // 0.1 .. 10 ms
	}
	d, ok := h.Delay()
	if !ok || d < 9*time.Millisecond || d > 10*time.Millisecond {
		t.Fatalf("Delay = %v, %v; want about p95 = 9.5ms", d, ok)
	}
	for range 2000 {
		lat.Observe(time.Second)
	}
	if d, _ := h.Delay(); d != 50*time.Millisecond {
		t.Fatalf("Delay = %v, want MaxDelay", d)
	}
	for range 4000 {
		lat.Observe(time.Microsecond)
	}
	if d, _ := h.Delay(); d != 2*time.Millisecond {
		t.Fatalf("Delay = %v, want MinDelay", d)
	}
	for i, c := range []HedgeConfig{{MaxAttempts: -1}, {Quantile: 1}, {MinDelay: -1}, {MinDelay: 10, MaxDelay: 5}} {
		if _, err := NewHedger(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%d: NewHedger(%+v) = %v", i, c, err)
		}
	}
}

// runReplicas sends calls, one every 2 ms of simulated time, each to a
// random one of 25 replicas (a hedge goes to the next replica); replica 0
// takes 250 ms, the others 8–12 ms. It returns the per-call latencies and
// the attempts sent.
func runReplicas(t *testing.T, calls int, h *Hedger) ([]time.Duration, int64) {
	var lats []time.Duration
	var attempts atomic.Int64
	synctest.Test(t, func(t *testing.T) {
		const replicas = 25
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(i), 11))
				first := rng.IntN(replicas)
				jitter := [4]time.Duration{}
				for k := range jitter {
					jitter[k] = time.Duration(8000+rng.IntN(4001)) * time.Microsecond
				}
				begin := time.Now()
				_, err := Hedge(context.Background(), h, func(ctx context.Context, attempt int) (int, error) {
					attempts.Add(1)
					d := jitter[attempt]
					if (first+attempt)%replicas == 0 {
						d = 250 * time.Millisecond
					}
					return attempt, sleepCtx(ctx, d)
				})
				if err != nil {
					t.Errorf("call %d: %v", i, err)
				}
				mu.Lock()
				lats = append(lats, time.Since(begin))
				mu.Unlock()
			}()
			time.Sleep(2 * time.Millisecond)
		}
		wg.Wait()
		synctest.Wait()
	})
	slices.Sort(lats)
	return lats, attempts.Load()
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// TestHedgingCutsTail: one replica of 25 is slow. Without hedging the p99 is
// the slow replica's latency; hedging at the running p95 cuts it to about
// the p95 plus one fast call, and adds no more extra calls than the budget's
// share.
func TestHedgingCutsTail(t *testing.T) {
	const calls = 3000
	plain, _ := NewHedger(HedgeConfig{MaxAttempts: 1})
	base, baseAttempts := runReplicas(t, calls, plain)

	budget, _ := NewBudget(BudgetConfig{})
	hedger, _ := NewHedger(HedgeConfig{MaxAttempts: 2, Budget: budget})
	hedged, hedgedAttempts := runReplicas(t, calls, hedger)

	extra := float64(hedgedAttempts-calls) / calls
	delay, _ := hedger.Delay()
	t.Logf("no hedging: p50 %v p95 %v p99 %v, %d attempts", quantile(base, 0.5), quantile(base, 0.95), quantile(base, 0.99), baseAttempts)
	t.Logf("hedging at p95 (final delay %v): p50 %v p95 %v p99 %v, %d attempts, %.1f%% extra calls (budget share %.0f%%)",
		delay, quantile(hedged, 0.5), quantile(hedged, 0.95), quantile(hedged, 0.99), hedgedAttempts, 100*extra, 100*DefaultRetryRatio)
	if baseAttempts != calls {
		t.Fatalf("MaxAttempts 1 sent %d attempts for %d calls", baseAttempts, calls)
	}
	if p99b, p99h := quantile(base, 0.99), quantile(hedged, 0.99); p99h*3 > p99b {
		t.Errorf("hedging did not cut p99 enough: %v → %v", p99b, p99h)
	}
	if extra > DefaultRetryRatio {
		t.Errorf("hedging added %.1f%% extra calls, above the budget's %.0f%%", 100*extra, 100*DefaultRetryRatio)
	}
	if budget.InFlight() != 0 || budget.Retries() != 0 {
		t.Errorf("budget leaked: %d %d", budget.InFlight(), budget.Retries())
	}
}
