package resilience

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestLatencyBuckets(t *testing.T) {
	// Indexes are monotonic and each value lies within 1/16 of its bucket's
	// midpoint (8 sub-buckets per power of two).
	prev := -1
	for _, ns := range []int64{0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 1000, 1023, 1024, 1e6, 1e9, 1 << 40, 1<<41 - 1} {
		i := latencyIndex(ns)
		if i < prev {
			t.Fatalf("index(%d) = %d < previous %d", ns, i, prev)
		}
		prev = i
		if i >= latencyBuckets {
			t.Fatalf("index(%d) = %d out of range", ns, i)
		}
		mid := float64(latencyValue(i))
		if ns >= 8 && math.Abs(mid-float64(ns))/float64(ns) > 1.0/16+1e-9 {
			t.Errorf("value %d lands in bucket %d with midpoint %v", ns, i, mid)
		}
	}
	if latencyIndex(-5) != 0 || latencyIndex(math.MaxInt64) != latencyBuckets-1 {
		t.Error("out-of-range values not clamped")
	}
	for i := 1; i < latencyBuckets; i++ {
		if latencyValue(i) <= latencyValue(i-1) {
			t.Fatalf("bucket %d midpoint %v not above bucket %d", i, latencyValue(i), i-1)
		}
	}
}

func TestLatencyQuantile(t *testing.T) {
	var lt LatencyTracker // zero value is usable
	if _, ok := lt.Quantile(0.5); ok {
		t.Fatal("empty tracker reported a quantile")
	}
	r := rand.New(rand.NewPCG(3, 4))
	var xs []float64
	for range 900 {
		// Log-normal around 10 ms.
		d := time.Duration(float64(10*time.Millisecond) * math.Exp(0.5*r.NormFloat64()))
		lt.Observe(d)
		xs = append(xs, float64(d))
	}
	slices.Sort(xs)
	for _, q := range []float64{0.5, 0.9, 0.95, 0.99} {
		exact := xs[int(math.Ceil(q*float64(len(xs))))-1]
		got, ok := lt.Quantile(q)
		if !ok || math.Abs(float64(got)-exact)/exact > 0.07 {
			t.Errorf("p%v = %v, exact %v", q*100, got, time.Duration(exact))
		}
	}
	if lt.Count() != 900 {
		t.Errorf("Count = %d, want 900", lt.Count())
	}
}

func TestLatencyDecay(t *testing.T) {
	lt := NewLatencyTracker(100)
	for range 100 {
		lt.Observe(100 * time.Millisecond)
	}
	if n := lt.Count(); n != 50 {
		t.Fatalf("Count after one half-life = %d, want 50", n)
	}
	// The latency drops to 1 ms; after a few half-lives the median follows.
	for range 300 {
		lt.Observe(time.Millisecond)
	}
	p50, _ := lt.Quantile(0.5)
	if p50 > 2*time.Millisecond {
		t.Fatalf("p50 = %v after the shift, want about 1ms", p50)
	}
	if n := lt.Count(); n > 100 {
		t.Fatalf("Count = %d, decayed counts must stay bounded by the half-life", n)
	}
}
