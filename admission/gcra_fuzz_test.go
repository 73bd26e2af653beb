package admission

import (
	"context"
	"testing"
	"time"
)

// FuzzGCRA drives one tenant with an arbitrary sequence of (time step, cost)
// pairs and checks GCRA's invariants: over any prefix the admitted cost never
// exceeds burst + elapsed × rate; a refusal's RetryAfter is exact (1ns
// earlier is refused, at RetryAfter it is admitted, checked on a copy);
// Remaining never exceeds the burst.
func FuzzGCRA(f *testing.F) {
	f.Add(uint16(10), uint8(3), []byte{0, 1, 0, 1, 0, 1, 0, 1, 50, 1, 100, 2})
	f.Add(uint16(1), uint8(1), []byte{0, 1, 255, 1, 0, 1})
	f.Add(uint16(1000), uint8(200), []byte{1, 200, 1, 200, 0, 0, 3, 7})
	f.Fuzz(func(t *testing.T, ratePerSec uint16, burst uint8, ops []byte) {
		if ratePerSec == 0 || burst == 0 || len(ops) > 512 {
			return
		}
		q := Quota{Count: int64(ratePerSec), Per: time.Second, Burst: int64(burst)}
		l, err := NewTenantLimiter(TenantConfig{Quota: q, Shards: 1})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		key := []byte("k")
		now := t0
		var admitted int64
		for i := 0; i+1 < len(ops); i += 2 {
			now = now.Add(time.Duration(ops[i]) * time.Millisecond)
			cost := int64(ops[i+1]) % (q.Burst + 1)
			d, err := l.AllowN(ctx, now, key, cost)
			if err != nil {
				t.Fatalf("op %d: %v", i/2, err)
			}
			if d.Remaining > q.Burst || d.Remaining < 0 {
				t.Fatalf("op %d: remaining %d", i/2, d.Remaining)
			}
			if d.Allowed {
				admitted += cost
			} else {
				checkRetryExact(t, q, l, now, cost, d.RetryAfter)
			}
			elapsed := now.Sub(t0)
			// burst + elapsed × rate, rounded up by one unit for the
			// nanosecond truncation of the emission interval.
			limit := q.Burst + int64(elapsed)/q.interval(1) + 1
			if admitted > limit {
				t.Fatalf("op %d: admitted %d > %d after %v", i/2, admitted, limit, elapsed)
			}
		}
	})
}

// checkRetryExact replays the refused request on a copy of the tenant's
// state at now+RetryAfter-1ns and now+RetryAfter.
func checkRetryExact(t *testing.T, q Quota, l *TenantLimiter, now time.Time, cost int64, retry time.Duration) {
	t.Helper()
	if retry <= 0 {
		t.Fatalf("refusal with retry-after %v", retry)
	}
	s := &l.shards[0]
	s.mu.Lock()
	tat := s.m["k"].tat
	s.mu.Unlock()
	n := nanos(now)
	if _, d := q.gcra(tat, n+int64(retry)-1, cost); d.Allowed {
		t.Fatalf("admitted 1ns before retry-after %v", retry)
	}
	if _, d := q.gcra(tat, n+int64(retry), cost); !d.Allowed {
		t.Fatalf("refused at retry-after %v: %+v", retry, d)
	}
}
