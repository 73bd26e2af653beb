package resilience

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// TestRetryNext walks RetryState.Next through timelines: each step is an
// attempt failing at a time with an error, and the decision expected.
func TestRetryNext(t *testing.T) {
	ms := time.Millisecond
	reset := os.NewSyscallError("read", syscall.ECONNRESET)
	noJitter := Backoff{Base: 10 * ms, Max: 80 * ms, Jitter: JitterNone}
	type step struct {
		at   time.Duration // when the attempt failed, from t0
		err  error
		want time.Duration // delay, when stop is nil
		stop error
	}
	tests := []struct {
		name     string
		p        RetryPolicy
		deadline time.Duration // from t0; 0 means none
		steps    []step
	}{
		{"attempt cap", RetryPolicy{MaxAttempts: 3, Backoff: noJitter}, 0, []step{
			{5 * ms, reset, 10 * ms, nil},
			{20 * ms, reset, 20 * ms, nil},
			{45 * ms, reset, 0, ErrAttemptsExhausted},
		}},
		{"default cap is 3", RetryPolicy{Backoff: noJitter}, 0, []step{
			{0, reset, 10 * ms, nil},
			{10 * ms, reset, 20 * ms, nil},
			{30 * ms, reset, 0, ErrAttemptsExhausted},
		}},
		{"max attempts 1 never retries", RetryPolicy{MaxAttempts: 1}, 0, []step{
			{0, reset, 0, ErrAttemptsExhausted},
		}},
		{"backoff caps at Max", RetryPolicy{MaxAttempts: 10, Backoff: noJitter}, 0, []step{
			{0, reset, 10 * ms, nil}, {0, reset, 20 * ms, nil}, {0, reset, 40 * ms, nil},
			{0, reset, 80 * ms, nil}, {0, reset, 80 * ms, nil},
		}},
		{"not retryable stops at once", RetryPolicy{MaxAttempts: 5, Backoff: noJitter}, 0, []step{
			{0, WithClass(errors.New("bad request"), ClassPermanent, 0), 0, ErrNotRetryable},
		}},
		{"internal not retried", RetryPolicy{MaxAttempts: 5, Backoff: noJitter}, 0, []step{
			{0, errors.New("boom"), 0, ErrNotRetryable},
		}},
		{"nil error not retried", RetryPolicy{MaxAttempts: 5}, 0, []step{{0, nil, 0, ErrNotRetryable}}},
		{"overloaded stops", RetryPolicy{MaxAttempts: 5, Backoff: noJitter}, 0, []step{
			{0, reset, 10 * ms, nil},
			{15 * ms, WithClass(errors.New("overloaded"), ClassOverloaded, time.Second), 0, ErrOverloaded},
		}},
		{"retry-after larger than backoff wins", RetryPolicy{MaxAttempts: 5, Backoff: noJitter}, 0, []step{
			{0, WithClass(errors.New("429"), ClassRetryable, 300*ms), 300 * ms, nil},
			{310 * ms, WithClass(errors.New("429"), ClassRetryable, 5*ms), 20 * ms, nil}, // backoff wins
		}},
		{"deadline: never sleep past it", RetryPolicy{MaxAttempts: 10, Backoff: noJitter}, 100 * ms, []step{
			{10 * ms, reset, 10 * ms, nil},           // retry at 20
			{30 * ms, reset, 20 * ms, nil},           // retry at 50
			{60 * ms, reset, 0, ErrDeadlineTooClose}, // 40 ms backoff lands at 100 = deadline
		}},
		{"deadline: keep typical latency", RetryPolicy{MaxAttempts: 10, Backoff: noJitter, TypicalLatency: 15 * ms}, 100 * ms, []step{
			{10 * ms, reset, 10 * ms, nil},           // 20 + 15 < 100
			{30 * ms, reset, 20 * ms, nil},           // 50 + 15 < 100
			{70 * ms, reset, 0, ErrDeadlineTooClose}, // 110 would be past it anyway
		}},
		{"deadline: typical latency refuses a retry that fits", RetryPolicy{MaxAttempts: 10, Backoff: noJitter, TypicalLatency: 30 * ms}, 100 * ms, []step{
			{50 * ms, reset, 10 * ms, nil},           // starts at 60 with 40 left
			{65 * ms, reset, 0, ErrDeadlineTooClose}, // would start at 85 with 15 < 30 left
		}},
		{"deadline: retry-after past the deadline", RetryPolicy{MaxAttempts: 10, Backoff: noJitter}, 200 * ms, []step{
			{10 * ms, WithClass(errors.New("503"), ClassRetryable, 300*ms), 0, ErrDeadlineTooClose},
		}},
		{"deadline already passed", RetryPolicy{MaxAttempts: 10, Backoff: noJitter}, 50 * ms, []step{
			{60 * ms, reset, 0, ErrDeadlineTooClose},
		}},
		{"custom classifier", RetryPolicy{MaxAttempts: 3, Backoff: noJitter, Classify: func(error) Class { return ClassRetryable }}, 0, []step{
			{0, errors.New("anything"), 10 * ms, nil},
		}},
	}
	for i, tt := range tests {
		var deadline time.Time
		if tt.deadline > 0 {
			deadline = at(tt.deadline)
		}
		st := tt.p.Start(deadline)
		for j, s := range tt.steps {
			before := st.Attempts()
			d, stop := st.Next(at(s.at), s.err)
			if !errors.Is(stop, s.stop) || (s.stop == nil && stop != nil) {
				t.Fatalf("%d %s step %d: stop = %v, want %v", i, tt.name, j, stop, s.stop)
			}
			if stop == nil {
				if d != s.want {
					t.Errorf("%d %s step %d: delay = %v, want %v", i, tt.name, j, d, s.want)
				}
				if st.Attempts() != before+1 {
					t.Errorf("%d %s step %d: attempts %d → %d", i, tt.name, j, before, st.Attempts())
				}
			} else if st.Attempts() != before {
				t.Errorf("%d %s step %d: a refused retry counted an attempt", i, tt.name, j)
			}
		}
	}
}

func TestRetryTypicalFromTracker(t *testing.T) {
	lat := NewLatencyTracker(0)
	p := RetryPolicy{MaxAttempts: 5, Backoff: Backoff{Base: time.Millisecond, Jitter: JitterNone}, TypicalLatency: time.Millisecond, Latency: lat}
	if got := p.Typical(); got != time.Millisecond {
		t.Fatalf("Typical with an empty tracker = %v, want the configured 1ms", got)
	}
	for range DefaultLatencyMinSamples {
		lat.Observe(40 * time.Millisecond)
	}
	if got := p.Typical(); got < 38*time.Millisecond || got > 42*time.Millisecond {
		t.Fatalf("Typical = %v, want about 40ms (tracked median)", got)
	}
	st := p.Start(at(100 * time.Millisecond))
	// A retry at 61 ms would have 39 ms left, less than the tracked 40 ms.
	if _, stop := st.Next(at(60*time.Millisecond), syscall.ECONNRESET); !errors.Is(stop, ErrDeadlineTooClose) {
		t.Fatalf("stop = %v, want ErrDeadlineTooClose from the tracked latency", stop)
	}
	if _, stop := st.Next(at(40*time.Millisecond), syscall.ECONNRESET); stop != nil {
		t.Fatalf("stop = %v at 40ms, want a retry", stop)
	}
}

func TestRetryPolicyValidate(t *testing.T) {
	bad := []RetryPolicy{{MaxAttempts: -1}, {MaxAttempts: 101}, {TypicalLatency: -1}, {Backoff: Backoff{Multiplier: 0.1}}}
	for i, p := range bad {
		if err := p.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%d: Validate = %v", i, err)
		}
	}
	var zero RetryPolicy
	if err := zero.Validate(); err != nil {
		t.Errorf("zero value: %v", err)
	}
}
