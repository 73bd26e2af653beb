package resilience

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

func BenchmarkBreakerAllowRecord(b *testing.B) {
	br, _ := NewBreaker(BreakerConfig{SlowCallLatency: time.Second})
	b.ReportAllocs()
	now := t0
	for i := 0; b.Loop(); i++ {
		now = now.Add(time.Millisecond)
		tk, err := br.Allow(now)
		if err != nil {
			b.Fatal(err)
		}
		o := OutcomeSuccess
		if i%10 == 0 {
			o = OutcomeFailure
		}
		br.Record(now, tk, time.Millisecond, o)
	}
}

func BenchmarkBreakerAllowOpen(b *testing.B) {
	br, _ := NewBreaker(BreakerConfig{MinCalls: 1, OpenTimeout: time.Hour})
	tk, _ := br.Allow(t0)
	br.Record(t0, tk, 0, OutcomeFailure)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := br.Allow(t0); err == nil {
			b.Fatal("allowed")
		}
	}
}

func BenchmarkBudget(b *testing.B) {
	bu, _ := NewBudget(BudgetConfig{})
	b.ReportAllocs()
	for b.Loop() {
		bu.Begin()
		if bu.TryRetry() {
			bu.EndRetry()
		}
		bu.Record(OutcomeSuccess)
		bu.End()
	}
}

func BenchmarkBackoff(b *testing.B) {
	for _, j := range []Jitter{JitterFull, JitterEqual, JitterDecorrelated} {
		b.Run(j.String(), func(b *testing.B) {
			bo := Backoff{Jitter: j}
			var prev time.Duration
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				prev = bo.Delay(i%8+1, prev, nil)
			}
		})
	}
}

func BenchmarkRetryNext(b *testing.B) {
	p := RetryPolicy{MaxAttempts: 3, Rand: rand.NewPCG(1, 2)}
	err := error(syscall.ECONNRESET)
	b.ReportAllocs()
	for b.Loop() {
		st := p.Start(t0.Add(time.Second))
		for {
			if _, stop := st.Next(t0, err); stop != nil {
				break
			}
		}
	}
}

func BenchmarkLatencyTracker(b *testing.B) {
	lt := NewLatencyTracker(0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		lt.Observe(time.Duration(i%5000) * time.Microsecond)
		if i%16 == 0 {
			lt.Quantile(0.95)
		}
	}
}

func BenchmarkClassify(b *testing.B) {
	err := WithClass(syscall.ECONNRESET, ClassRetryable, time.Second)
	b.ReportAllocs()
	for b.Loop() {
		_ = Classify(err)
		_, _ = RetryAfter(err)
	}
}

func BenchmarkBulkhead(b *testing.B) {
	bh, _ := NewBulkhead(BulkheadConfig{MaxConcurrent: 4})
	b.ReportAllocs()
	for b.Loop() {
		if bh.TryAcquire() {
			bh.Release()
		}
	}
}

// TestHotPathAllocs pins the per-call paths at zero allocations.
func TestHotPathAllocs(t *testing.T) {
	br, _ := NewBreaker(BreakerConfig{})
	bu, _ := NewBudget(BudgetConfig{})
	bh, _ := NewBulkhead(BulkheadConfig{})
	p := RetryPolicy{MaxAttempts: 3}
	lt := NewLatencyTracker(0)
	now := t0
	err := error(syscall.ECONNRESET)
	n := testing.AllocsPerRun(200, func() {
		now = now.Add(time.Millisecond)
		tk, _ := br.Allow(now)
		br.Record(now, tk, time.Millisecond, OutcomeFailure)
		bu.Begin()
		if bu.TryRetry() {
			bu.EndRetry()
		}
		bu.Record(OutcomeFailure)
		bu.End()
		st := p.Start(now.Add(time.Second))
		_, _ = st.Next(now, err)
		_ = Backoff{Jitter: JitterDecorrelated}.Delay(2, time.Millisecond, nil)
		lt.Observe(time.Millisecond)
		_, _ = lt.Quantile(0.95)
		if bh.TryAcquire() {
			bh.Release()
		}
	})
	if n != 0 {
		t.Fatalf("per-call paths allocate %v times", n)
	}
}
