package resilience

import (
	"context"
	"errors"
	"os"
	"slices"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// TestRetrierDo runs Retrier.Do on a jumping fake clock: each attempt takes
// its latency, each wait jumps the clock, so attempt start times are exact.
func TestRetrierDo(t *testing.T) {
	ms := time.Millisecond
	reset := os.NewSyscallError("read", syscall.ECONNRESET)
	noJitter := Backoff{Base: 10 * ms, Max: time.Second, Jitter: JitterNone}
	tripFast := func() *Breaker {
		b, _ := NewBreaker(BreakerConfig{MinCalls: 1, OpenTimeout: time.Minute})
		return b
	}
	drained := func() *Budget {
		b, _ := NewBudget(BudgetConfig{})
		for range 5 {
			b.Record(OutcomeFailure)
		}
		return b
	}
	tests := []struct {
		name     string
		r        Retrier
		deadline time.Duration // 0: none
		errs     []error       // per attempt; the last repeats
		latency  time.Duration
		starts   []time.Duration // attempt start times
		reason   error           // nil: success
	}{
		{"succeeds on the third attempt", Retrier{Policy: RetryPolicy{MaxAttempts: 5, Backoff: noJitter}}, 0,
			[]error{reset, reset, nil}, 5 * ms, []time.Duration{0, 15 * ms, 40 * ms}, nil},
		{"attempt cap", Retrier{Policy: RetryPolicy{MaxAttempts: 3, Backoff: noJitter}}, 0,
			[]error{reset}, 5 * ms, []time.Duration{0, 15 * ms, 40 * ms}, ErrAttemptsExhausted},
		{"deadline across attempts", Retrier{Policy: RetryPolicy{MaxAttempts: 10, Backoff: noJitter}}, 100 * ms,
			[]error{reset}, 5 * ms, []time.Duration{0, 15 * ms, 40 * ms, 85 * ms}, ErrDeadlineTooClose},
		{"deadline with typical latency", Retrier{Policy: RetryPolicy{MaxAttempts: 10, Backoff: noJitter, TypicalLatency: 50 * ms}}, 100 * ms,
			[]error{reset}, 5 * ms, []time.Duration{0, 15 * ms, 40 * ms}, ErrDeadlineTooClose}, // 85 ms would leave 15 < 50
		{"retry-after honoured", Retrier{Policy: RetryPolicy{MaxAttempts: 3, Backoff: noJitter}}, 0,
			[]error{WithClass(errors.New("429"), ClassRetryable, 300*ms), nil}, 5 * ms, []time.Duration{0, 305 * ms}, nil},
		{"not retryable", Retrier{Policy: RetryPolicy{MaxAttempts: 3, Backoff: noJitter}}, 0,
			[]error{WithClass(errors.New("409"), ClassPermanent, 0)}, 5 * ms, []time.Duration{0}, ErrNotRetryable},
		{"overloaded", Retrier{Policy: RetryPolicy{MaxAttempts: 3, Backoff: noJitter}}, 0,
			[]error{WithClass(errors.New("shed"), ClassOverloaded, time.Second)}, 5 * ms, []time.Duration{0}, ErrOverloaded},
		{"breaker opens between attempts", Retrier{Policy: RetryPolicy{MaxAttempts: 3, Backoff: noJitter}, Breaker: tripFast()}, 0,
			[]error{reset}, 5 * ms, []time.Duration{0}, ErrBreakerOpen},
		{"budget refuses the retry", Retrier{Policy: RetryPolicy{MaxAttempts: 3, Backoff: noJitter}, Budget: drained()}, 0,
			[]error{reset}, 5 * ms, []time.Duration{0}, ErrBudgetExhausted},
	}
	for i, tt := range tests {
		start := time.Now()
		clk := newJumpClock(start)
		tt.r.Clock = clk
		ctx := context.Background()
		if tt.deadline > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, start.Add(tt.deadline+time.Hour))
			defer cancel()
			// The deadline the policy sees is on the fake timeline; the
			// real context stays alive well past the test.
			ctx = fakeDeadline{ctx, start.Add(tt.deadline)}
		}
		var starts []time.Duration
		err := tt.r.Do(ctx, func(context.Context) error {
			starts = append(starts, clk.Now().Sub(start))
			n := len(starts) - 1
			clk.Advance(tt.latency)
			return tt.errs[min(n, len(tt.errs)-1)]
		})
		if !slices.Equal(starts, tt.starts) {
			t.Errorf("%d %s: attempts started at %v, want %v", i, tt.name, starts, tt.starts)
		}
		if tt.reason == nil {
			if err != nil {
				t.Errorf("%d %s: err = %v", i, tt.name, err)
			}
			continue
		}
		var re *RetryError
		if !errors.As(err, &re) || !errors.Is(err, tt.reason) {
			t.Errorf("%d %s: err = %v, want a RetryError for %v", i, tt.name, err, tt.reason)
			continue
		}
		if re.Attempts != len(tt.starts) {
			t.Errorf("%d %s: RetryError.Attempts = %d, want %d", i, tt.name, re.Attempts, len(tt.starts))
		}
		if tt.reason == ErrDeadlineTooClose && !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%d %s: %v does not match os.ErrDeadlineExceeded", i, tt.name, err)
		}
		if tt.r.Budget != nil && (tt.r.Budget.InFlight() != 0 || tt.r.Budget.Retries() != 0) {
			t.Errorf("%d %s: budget counters leaked", i, tt.name)
		}
	}
}

// fakeDeadline reports a deadline on the fake clock's timeline.
type fakeDeadline struct {
	context.Context
	d time.Time
}

func (c fakeDeadline) Deadline() (time.Time, bool) { return c.d, true }

func TestRetrierCancel(t *testing.T) {
	// Canceled during an attempt.
	ctx, cancel := context.WithCancel(context.Background())
	r := Retrier{Policy: RetryPolicy{MaxAttempts: 5}, Clock: newJumpClock(time.Now())}
	calls := 0
	err := r.Do(ctx, func(context.Context) error {
		calls++
		cancel()
		return syscall.ECONNRESET
	})
	if calls != 1 || !errors.Is(err, context.Canceled) {
		t.Fatalf("calls %d err %v, want 1 call and context.Canceled", calls, err)
	}
	// Canceled while waiting to retry: the stuck clock never fires.
	ctx, cancel = context.WithCancel(context.Background())
	r.Clock = stuckClock{time.Now()}
	calls = 0
	done := make(chan error, 1)
	go func() {
		done <- r.Do(ctx, func(context.Context) error { calls++; return syscall.ECONNRESET })
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("err = %v, want context.Canceled wrapping the last error", err)
	}
}

// TestRetrierSystemClock runs Do on the real clock inside a synctest
// bubble, where time is simulated and the backoff waits cost nothing.
func TestRetrierSystemClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lat := NewLatencyTracker(0)
		r := Retrier{Policy: RetryPolicy{MaxAttempts: 4, Backoff: Backoff{Base: 100 * time.Millisecond, Jitter: JitterNone}, Latency: lat}}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		begin := time.Now()
		n := 0
		err := r.Do(ctx, func(ctx context.Context) error {
			n++
			time.Sleep(10 * time.Millisecond)
			if n < 3 {
				return syscall.ECONNREFUSED
			}
			return nil
		})
		if err != nil || n != 3 {
			t.Fatalf("err %v after %d attempts", err, n)
		}
		// 10 + 100 + 10 + 200 + 10 ms of simulated time.
		if got := time.Since(begin); got != 330*time.Millisecond {
			t.Fatalf("took %v of simulated time, want 330ms", got)
		}
		if lat.Count() != 1 {
			t.Fatalf("latency samples = %d, want 1 (the success)", lat.Count())
		}
		// The context's deadline ends a long wait: at 1 s the 4th attempt
		// (after 400 ms more backoff) would not fit.
		n = 0
		err = r.Do(ctx, func(ctx context.Context) error { n++; time.Sleep(10 * time.Millisecond); return syscall.ECONNREFUSED })
		if !errors.Is(err, os.ErrDeadlineExceeded) || n != 3 {
			t.Fatalf("err %v after %d attempts, want a deadline error after 3", err, n)
		}
		if time.Since(begin) > time.Second {
			t.Fatalf("slept past the deadline: %v", time.Since(begin))
		}
	})
}
