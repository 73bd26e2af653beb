package admission

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestGCRATable(t *testing.T) {
	// 10 per second (one every 100ms), burst 3.
	q := Quota{Count: 10, Per: time.Second, Burst: 3}
	type step struct {
		at        time.Duration
		cost      int64
		allowed   bool
		retry     time.Duration
		remaining int64
	}
	cases := []struct {
		name  string
		q     Quota
		steps []step
	}{
		{"burst then exact retry", q, []step{
			{0, 1, true, 0, 2},
			{0, 1, true, 0, 1},
			{0, 1, true, 0, 0},
			{0, 1, false, 100 * ms, 0},
			{40 * ms, 1, false, 60 * ms, 0},
			{100 * ms, 1, true, 0, 0},
			{100 * ms, 1, false, 100 * ms, 0},
		}},
		{"refill to burst, not beyond", q, []step{
			{0, 3, true, 0, 0},
			{10 * time.Second, 1, true, 0, 2},
			{10 * time.Second, 2, true, 0, 0},
			{10 * time.Second, 1, false, 100 * ms, 0},
		}},
		{"cost in units", q, []step{
			{0, 2, true, 0, 1},
			{0, 2, false, 100 * ms, 1},
			{50 * ms, 2, false, 50 * ms, 1},
			{100 * ms, 2, true, 0, 0},
			{100 * ms, 3, false, 300 * ms, 0}, // TAT is 400ms: 700ms-300ms burst
		}},
		{"zero cost reports headroom", q, []step{
			{0, 0, true, 0, 3},
			{0, 3, true, 0, 0},
			{0, 0, true, 0, 0},
			{250 * ms, 0, true, 0, 2},
		}},
		{"bytes: 1000 B/s, burst 500 B", Quota{Count: 1000, Per: time.Second, Burst: 500}, []step{
			{0, 400, true, 0, 100},
			{0, 200, false, 100 * ms, 100},
			{100 * ms, 200, true, 0, 0},
			{100 * ms, 1, false, time.Millisecond, 0},
		}},
		{"uneven rate: 3 per second", Quota{Count: 3, Per: time.Second, Burst: 1}, []step{
			{0, 1, true, 0, 0},
			{0, 1, false, 333333333, 0},
			{333333333, 1, true, 0, 0},
		}},
	}
	for _, c := range cases {
		l, err := NewTenantLimiter(TenantConfig{Quota: c.q})
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range c.steps {
			d, err := l.AllowN(context.Background(), at(s.at), []byte("t1"), s.cost)
			if err != nil {
				t.Fatalf("%s: step %d: %v", c.name, i, err)
			}
			if d.Allowed != s.allowed || d.RetryAfter != s.retry || d.Remaining != s.remaining {
				t.Errorf("%s: step %d (t=%v cost=%d): got %+v, want allowed=%v retry=%v remaining=%d",
					c.name, i, s.at, s.cost, d, s.allowed, s.retry, s.remaining)
			}
		}
	}
}

func TestGCRARetryAfterIsExact(t *testing.T) {
	// Whatever the state, waiting exactly RetryAfter admits the same cost
	// and waiting 1ns less does not.
	q := Quota{Count: 7, Per: time.Second, Burst: 5}
	for cost := int64(1); cost <= q.Burst; cost++ {
		l, _ := NewTenantLimiter(TenantConfig{Quota: q})
		key := []byte("k")
		now := at(0)
		// Drain the bucket.
		for l.Allow(now, key).Allowed {
		}
		d, _ := l.AllowN(context.Background(), now, key, cost)
		if d.Allowed || d.RetryAfter <= 0 {
			t.Fatalf("cost %d: %+v", cost, d)
		}
		early, _ := l.AllowN(context.Background(), now.Add(d.RetryAfter-1), key, cost)
		if early.Allowed {
			t.Errorf("cost %d: allowed 1ns before RetryAfter %v", cost, d.RetryAfter)
		}
		onTime, _ := l.AllowN(context.Background(), now.Add(d.RetryAfter), key, cost)
		if !onTime.Allowed {
			t.Errorf("cost %d: refused at RetryAfter %v: %+v", cost, d.RetryAfter, onTime)
		}
	}
}

func TestGCRAErrors(t *testing.T) {
	l, _ := NewTenantLimiter(TenantConfig{Quota: Quota{Count: 1, Per: time.Second, Burst: 2}})
	if _, err := l.AllowN(context.Background(), t0, []byte("a"), 3); !errors.Is(err, ErrCostExceedsBurst) {
		t.Errorf("cost above burst: %v", err)
	}
	if _, err := l.AllowN(context.Background(), t0, []byte("a"), -1); !errors.Is(err, ErrBadCost) {
		t.Errorf("negative cost: %v", err)
	}
	for i, q := range []Quota{{}, {Count: 1, Per: time.Second}, {Count: 2e9, Per: time.Second, Burst: 1}, {Count: -1, Per: 1, Burst: 1}} {
		if _, err := NewTenantLimiter(TenantConfig{Quota: q}); !errors.Is(err, ErrBadQuota) {
			t.Errorf("quota %d %+v: err %v", i, q, err)
		}
	}
}

func TestTenantsAreIndependent(t *testing.T) {
	l, _ := NewTenantLimiter(TenantConfig{Quota: Quota{Count: 1, Per: time.Second, Burst: 1}})
	if !l.Allow(t0, []byte("a")).Allowed || l.Allow(t0, []byte("a")).Allowed {
		t.Fatal("tenant a: want one allowed then refused")
	}
	if !l.Allow(t0, []byte("b")).Allowed {
		t.Fatal("tenant b refused because of a")
	}
}

func TestTenantCapBoundsMemory(t *testing.T) {
	const maxTenants = 64
	l, _ := NewTenantLimiter(TenantConfig{Quota: Quota{Count: 1, Per: time.Second, Burst: 1}, MaxTenants: maxTenants, Shards: 4})
	for i := range 10_000 {
		// A new tenant every 50ms spends its burst and owes 1s: the table
		// holds ~3s of tenants, of which those older than 1s owe nothing.
		l.Allow(at(time.Duration(i)*50*ms), fmt.Appendf(nil, "tenant-%d", i))
		if n := l.Len(); n > maxTenants {
			t.Fatalf("after %d tenants: %d tracked > cap %d", i+1, n, maxTenants)
		}
	}
	st := l.Stats()
	if st.Evicted < 10_000-maxTenants || st.Tenants > maxTenants {
		t.Fatalf("stats %+v", st)
	}
	// Tenants 1s old have no debt: evicting them is lossless, and the
	// sample prefers them, so few evictions are lossy.
	if st.LossyEvicted > st.Evicted/10 {
		t.Errorf("lossy evictions %d of %d", st.LossyEvicted, st.Evicted)
	}
}

func TestTenantRejectNewKeepsDebts(t *testing.T) {
	l, _ := NewTenantLimiter(TenantConfig{Quota: Quota{Count: 1, Per: time.Second, Burst: 1}, MaxTenants: 2, Shards: 1, WhenFull: RejectNew})
	l.Allow(t0, []byte("a"))
	l.Allow(t0, []byte("b"))
	d, err := l.AllowN(context.Background(), at(100*ms), []byte("c"), 1)
	if !errors.Is(err, ErrTenantTableFull) || d.Allowed || d.RetryAfter != 900*ms {
		t.Fatalf("new tenant at full table: %+v %v", d, err)
	}
	// a still has its debt.
	if l.Allow(at(100*ms), []byte("a")).Allowed {
		t.Fatal("a's debt was forgotten")
	}
	// Once a's debt is paid, a may be evicted losslessly and c gets in.
	if d, err := l.AllowN(context.Background(), at(time.Second), []byte("c"), 1); err != nil || !d.Allowed {
		t.Fatalf("c after debts paid: %+v %v", d, err)
	}
	if st := l.Stats(); st.RejectedNew != 1 || st.LossyEvicted != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestTenantSweepDropsOnlyIdle(t *testing.T) {
	l, _ := NewTenantLimiter(TenantConfig{Quota: Quota{Count: 10, Per: time.Second, Burst: 10}, IdleTTL: time.Second, Shards: 2})
	l.AllowN(context.Background(), t0, []byte("idle"), 1)            // debt until t0+100ms
	l.AllowN(context.Background(), at(900*ms), []byte("active"), 10) // debt until t0+1.9s
	if n := l.Sweep(at(1100*ms), 0); n != 1 {
		t.Fatalf("swept %d at 1.1s, want 1 (idle)", n)
	}
	if n := l.Sweep(at(2800*ms), 0); n != 0 {
		t.Fatalf("swept %d at 2.8s, want 0 (active's bucket full only since 1.9s)", n)
	}
	if n := l.Sweep(at(2900*ms), 0); n != 1 || l.Len() != 0 {
		t.Fatalf("swept %d at 2.9s, %d left", n, l.Len())
	}
}

func TestTenantLimiterConcurrent(t *testing.T) {
	// Run with -race: many goroutines on a few tenants; the total admitted
	// per tenant at one instant is exactly the burst.
	l, _ := NewTenantLimiter(TenantConfig{Quota: Quota{Count: 1, Per: time.Hour, Burst: 100}})
	keys := [][]byte{[]byte("x"), []byte("y"), []byte("z")}
	counts := make(chan int, 8)
	for g := range 8 {
		go func() {
			n := 0
			for i := range 300 {
				if l.Allow(t0, keys[(g+i)%3]).Allowed {
					n++
				}
			}
			counts <- n
		}()
	}
	total := 0
	for range 8 {
		total += <-counts
	}
	if total != 300 {
		t.Fatalf("admitted %d, want 3 tenants × burst 100", total)
	}
}

func BenchmarkGCRAAllow(b *testing.B) {
	l, _ := NewTenantLimiter(TenantConfig{Quota: Quota{Count: 1e6, Per: time.Second, Burst: 1000}})
	key := AppendIPKey(nil, netipMustParse("192.0.2.7"))
	ctx := context.Background()
	now := t0
	l.Allow(now, key)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := l.AllowN(ctx, now.Add(time.Duration(i)*time.Microsecond), key, 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGCRAAllowParallel(b *testing.B) {
	l, _ := NewTenantLimiter(TenantConfig{Quota: Quota{Count: 1e6, Per: time.Second, Burst: 1000}})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		key := fmt.Appendf(nil, "tenant-%p", pb)
		i := 0
		for pb.Next() {
			l.AllowN(context.Background(), t0.Add(time.Duration(i)*time.Microsecond), key, 1)
			i++
		}
	})
}
