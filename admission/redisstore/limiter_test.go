package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
)

func newLimiter(t testing.TB, q admission.Quota) *Limiter {
	t.Helper()
	l, err := NewLimiter(newClient(t), prefix(t), q)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLimiterGCRA(t *testing.T) {
	// One unit per 10s: nothing refills during the test, so the decisions
	// are exact even though Redis's clock runs.
	q := admission.Quota{Count: 1, Per: 10 * time.Second, Burst: 3}
	l := newLimiter(t, q)
	key := []byte("tenant")
	// Redis's clock runs between the calls: the lower bounds below allow
	// for the time they took, measured here (begin is before the first).
	begin := time.Now()
	for i, want := range []int64{2, 1, 0} {
		d, err := l.AllowN(bg, time.Time{}, key, 1)
		if err != nil || !d.Allowed || d.Remaining != want {
			t.Fatalf("request %d: %+v %v", i, d, err)
		}
	}
	d, err := l.AllowN(bg, time.Time{}, key, 1)
	took := time.Since(begin)
	if err != nil || d.Allowed {
		t.Fatalf("over burst: %+v %v", d, err)
	}
	// Exact retry-after up to the time the calls took: 10s less at most
	// the time since the first call.
	if d.RetryAfter > 10*time.Second || d.RetryAfter < 10*time.Second-took {
		t.Fatalf("retry-after %v, want 10s less at most the %v the calls took", d.RetryAfter, took)
	}
	d2, _ := l.AllowN(bg, time.Time{}, key, 2)
	if took := time.Since(begin); d2.Allowed || d2.RetryAfter < 20*time.Second-took || d2.RetryAfter > 20*time.Second {
		t.Fatalf("cost 2: %+v, want a refusal for 20s less at most %v", d2, took)
	}
	// Tenants are independent.
	if d, _ := l.AllowN(bg, time.Time{}, []byte("other"), 3); !d.Allowed {
		t.Fatalf("other tenant: %+v", d)
	}
	if _, err := l.AllowN(bg, time.Time{}, key, 4); !errors.Is(err, admission.ErrCostExceedsBurst) {
		t.Fatalf("cost above burst: %v", err)
	}
	if _, err := l.AllowN(bg, time.Time{}, key, -1); !errors.Is(err, admission.ErrBadCost) {
		t.Fatalf("negative cost: %v", err)
	}
	// The key expires when the TAT passes: 30s for three units, less the
	// time since the first call (and the millisecond PTTL truncates).
	pttl, _ := l.c.PTTL(bg, l.prefix+"tenant").Result()
	if took := time.Since(begin); pttl < 30*time.Second-took-time.Millisecond || pttl > 30*time.Second {
		t.Fatalf("TAT key TTL %v, want 30s less at most %v", pttl, took)
	}
}

func TestLimiterRefills(t *testing.T) {
	// One per interval, burst 1: a refused request is allowed after its
	// retry-after (Redis's clock; a real wait of up to the interval). The
	// second of two back-to-back calls is refused only if it comes before
	// the refill, so the interval is derived from round trips measured
	// here on an open connection: 10 ms, or 20 times the slowest of five
	// if that is longer (a loaded machine's round trips could otherwise
	// span the 10 ms).
	probe := newLimiter(t, admission.Quota{Count: 1, Per: time.Hour, Burst: 1000})
	if _, err := probe.AllowN(bg, time.Time{}, []byte("probe"), 1); err != nil { // dials: not a round trip
		t.Fatal(err)
	}
	var rtt time.Duration
	for range 5 {
		begin := time.Now()
		if _, err := probe.AllowN(bg, time.Time{}, []byte("probe"), 1); err != nil {
			t.Fatal(err)
		}
		rtt = max(rtt, time.Since(begin))
	}
	interval := max(10*time.Millisecond, 20*rtt)
	l := newLimiter(t, admission.Quota{Count: 1, Per: interval, Burst: 1})
	var d admission.Decision
	for try := 0; ; try++ {
		key := fmt.Appendf(nil, "r%d", try)
		begin := time.Now()
		if d, _ := l.AllowN(bg, time.Time{}, key, 1); !d.Allowed {
			t.Fatalf("first refused: %+v", d)
		}
		d, _ = l.AllowN(bg, time.Time{}, key, 1)
		took := time.Since(begin)
		if !d.Allowed {
			if d.RetryAfter <= 0 || d.RetryAfter > interval {
				t.Fatalf("second: %+v, want a retry-after in (0, %v]", d, interval)
			}
			time.Sleep(d.RetryAfter + time.Millisecond)
			if d, _ := l.AllowN(bg, time.Time{}, key, 1); !d.Allowed {
				t.Fatalf("after retry-after: %+v", d)
			}
			t.Logf("refill interval %v (round trips up to %v), retry-after %v", interval, rtt, d.RetryAfter)
			return
		}
		// Allowed: only right if the two calls spanned the refill, a stall
		// past the reference; then try again on a fresh key.
		if took < interval || try == 2 {
			t.Fatalf("second: %+v after %v, within the %v refill interval (try %d)", d, took, interval, try)
		}
		t.Logf("try %d: the two calls took %v, past the %v interval (round trips up to %v): again", try, took, interval, rtt)
	}
}

// TestLimiterSharedAcrossInstances: two limiters with their own clients (two
// servers of a fleet) charging one tenant concurrently admit exactly the
// burst between them.
func TestLimiterSharedAcrossInstances(t *testing.T) {
	q := admission.Quota{Count: 1, Per: time.Hour, Burst: 50}
	a := newLimiter(t, q)
	b, _ := NewLimiter(newClient(t), a.prefix, q)
	var admitted atomic.Int64
	var perServer [2]atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		l := a
		if g%2 == 1 {
			l = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				d, err := l.AllowN(bg, time.Time{}, []byte("shared"), 1)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					admitted.Add(1)
					perServer[g%2].Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if admitted.Load() != 50 {
		t.Fatalf("admitted %d across two instances, want the shared burst 50 (a %d, b %d)",
			admitted.Load(), perServer[0].Load(), perServer[1].Load())
	}
	if perServer[0].Load() == 0 || perServer[1].Load() == 0 {
		t.Logf("one instance got everything (a %d, b %d)", perServer[0].Load(), perServer[1].Load())
	}
}

// TestLimiterBehindAdmitter wires the Redis limiter into an Admitter: the
// same interface as the in-memory default.
func TestLimiterBehindAdmitter(t *testing.T) {
	l := newLimiter(t, admission.Quota{Count: 1, Per: time.Hour, Burst: 2})
	a, err := admission.NewAdmitter(admission.Config{Tenants: l, MemoryLimitBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Bind(admission.Binding{Loops: 1}); err != nil {
		t.Fatal(err)
	}
	f := &admission.Frame{Tenant: []byte("t")}
	for i, want := range []bool{true, true, false} {
		v := a.Loop(0).Admit(context.Background(), time.Now(), f)
		if v.Admit != want {
			t.Fatalf("frame %d: %+v", i, v)
		}
		if !v.Admit && (v.Reason != admission.ReasonTenant || v.RetryAfter < 59*time.Minute) {
			t.Fatalf("refusal %+v", v)
		}
	}
}

func TestLimiterConfig(t *testing.T) {
	if _, err := NewLimiter(nil, "", admission.Quota{Count: 1, Per: time.Second, Burst: 1}); !errors.Is(err, admission.ErrBadConfig) {
		t.Errorf("nil client: %v", err)
	}
	if _, err := NewLimiter(redisClientAt("127.0.0.1:1"), "", admission.Quota{}); !errors.Is(err, admission.ErrBadQuota) {
		t.Errorf("zero quota: %v", err)
	}
}

// BenchmarkLimiter measures the Redis GCRA limiter: one script call per
// decision, 32 concurrent callers, 1,000 tenants.
func BenchmarkLimiter(b *testing.B) {
	l := newLimiter(b, admission.Quota{Count: 1_000_000, Per: time.Second, Burst: 1000})
	var seq atomic.Uint64
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := fmt.Appendf(nil, "tenant-%d", seq.Add(1)%1000)
			if _, err := l.AllowN(bg, time.Time{}, k, 1); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
