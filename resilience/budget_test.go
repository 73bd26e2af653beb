package resilience

import (
	"errors"
	"sync"
	"testing"
)

func TestBudgetTokens(t *testing.T) {
	b, err := NewBudget(BudgetConfig{})
	if err != nil {
		t.Fatal(err)
	}
	b.Begin() // one call in flight: the cap is the floor of 3
	type step struct {
		record []Outcome
		tokens float64
		retry  bool
	}
	F, S, I := OutcomeFailure, OutcomeSuccess, OutcomeIgnored
	steps := []step{
		{nil, 10, true},
		{[]Outcome{F, F, F, F}, 6, true},
		{[]Outcome{F}, 5, false}, // at MaxTokens/2: throttled
		{[]Outcome{S}, 5.1, true},
		{[]Outcome{I, I}, 5.1, true}, // ignored outcomes change nothing
		{[]Outcome{F, F, F, F, F, F, F, F}, 0, false},
		{[]Outcome{F}, 0, false}, // floor at zero
		{[]Outcome{S, S, S, S, S, S, S, S, S, S}, 1, false},
	}
	for i, s := range steps {
		for _, o := range s.record {
			b.Record(o)
		}
		if got := b.Tokens(); got < s.tokens-1e-9 || got > s.tokens+1e-9 {
			t.Fatalf("step %d: tokens = %v, want %v", i, got, s.tokens)
		}
		ok := b.TryRetry()
		if ok != s.retry {
			t.Fatalf("step %d: TryRetry = %v, want %v", i, ok, s.retry)
		}
		if ok {
			b.EndRetry()
		}
	}
	// Successes refill up to MaxTokens and no further.
	for range 200 {
		b.Record(S)
	}
	if b.Tokens() != 10 {
		t.Fatalf("tokens = %v after refill, want 10", b.Tokens())
	}
}

func TestBudgetInflightShare(t *testing.T) {
	b, _ := NewBudget(BudgetConfig{RetryRatio: 0.2, MinRetries: 3})
	tests := []struct {
		inflight, want int // calls in flight; retries admitted before refusal
	}{
		{0, 3}, {1, 3}, {10, 3}, {15, 3}, {20, 4}, {50, 10}, {100, 20},
	}
	for i, tt := range tests {
		for range tt.inflight {
			b.Begin()
		}
		got := 0
		for b.TryRetry() {
			got++
			if got > 1000 {
				break
			}
		}
		if got != tt.want {
			t.Errorf("%d: %d in flight admitted %d retries, want %d", i, tt.inflight, got, tt.want)
		}
		if b.Retries() != got {
			t.Errorf("%d: Retries() = %d, want %d", i, b.Retries(), got)
		}
		for range got {
			b.EndRetry()
		}
		for range tt.inflight {
			b.End()
		}
		if b.InFlight() != 0 || b.Retries() != 0 {
			t.Fatalf("%d: counters not back to zero: %d %d", i, b.InFlight(), b.Retries())
		}
	}
}

func TestBudgetConcurrent(t *testing.T) {
	b, _ := NewBudget(BudgetConfig{MaxTokens: 1000, MinRetries: 5})
	var wg sync.WaitGroup
	var mu sync.Mutex
	peak := 0
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				b.Begin()
				if b.TryRetry() {
					mu.Lock()
					peak = max(peak, b.Retries())
					mu.Unlock()
					b.EndRetry()
				}
				if (g+i)%2 == 0 {
					b.Record(OutcomeFailure)
				} else {
					b.Record(OutcomeSuccess)
				}
				b.End()
			}
		}()
	}
	wg.Wait()
	if b.InFlight() != 0 || b.Retries() != 0 {
		t.Fatalf("counters leaked: inflight %d retries %d", b.InFlight(), b.Retries())
	}
	if peak > 5 {
		t.Fatalf("peak concurrent retries %d above the cap max(5, 0.2×8)", peak)
	}
}

func TestBudgetValidate(t *testing.T) {
	bad := []BudgetConfig{{MaxTokens: -1}, {TokenRatio: 20}, {RetryRatio: -0.1}, {MinRetries: -1}}
	for i, c := range bad {
		if _, err := NewBudget(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%d: NewBudget(%+v) = %v", i, c, err)
		}
	}
}
