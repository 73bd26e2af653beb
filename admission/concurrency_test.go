package admission

import (
	"math"
	"sync"
	"testing"
	"time"
)

func TestVegasUpdate(t *testing.T) {
	cfg := VegasConfig{InitialLimit: 20, MaxLimit: 40, MinLimit: 5, ProbeInterval: 10 * time.Second}.withDefaults()
	f20 := math.Log10(20)
	type step struct {
		at       time.Duration
		rtt      float64 // window average, ms
		inflight int64
		want     float64
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"first window only learns the no-load RTT", []step{{0, 10, 20, 20}}},
		{"no queue: grow by 6·log10(limit)", []step{{0, 10, 20, 20}, {100 * ms, 10, 20, 20 + 6*f20}}},
		{"lower RTT re-learns the baseline, no change", []step{{0, 10, 20, 20}, {100 * ms, 8, 20, 20}}},
		// queue = ceil(20 × (1 − 10/11)) = 2: f < 2 < 3f → +f.
		{"small queue: grow by log10(limit)", []step{{0, 10, 20, 20}, {100 * ms, 11, 20, 20 + f20}}},
		// queue = ceil(20 × (1 − 10/14)) = 6: 3f <= 6 <= 6f → hold.
		{"moderate queue: hold", []step{{0, 10, 20, 20}, {100 * ms, 14, 20, 20}}},
		// queue = ceil(20 × (1 − 10/20)) = 10 > 6f → −f.
		{"large queue: shrink by log10(limit)", []step{{0, 10, 20, 20}, {100 * ms, 20, 20, 20 - f20}}},
		{"in-flight under half: no growth", []step{{0, 10, 20, 20}, {100 * ms, 10, 9, 20}, {200 * ms, 10, 10, 20 + 6*f20}}},
		{"in-flight under half: no shrink", []step{{0, 10, 20, 20}, {100 * ms, 50, 9, 20}}},
		{"ceiling", []step{{0, 10, 20, 20}, {100 * ms, 10, 20, 20 + 6*f20},
			{200 * ms, 10, 40, 20 + 6*f20 + 6*math.Log10(20+6*f20)}, {300 * ms, 10, 40, 40}, {400 * ms, 10, 40, 40}}},
		// At 10s the probe halves the limit for two windows, throws the
		// first away and takes the second's RTT as the baseline.
		{"probe halves, measures, restores", []step{
			{0, 10, 20, 20}, {5 * time.Second, 20, 20, 20 - f20},
			{10 * time.Second, 20, 20, math.Floor((20 - f20) / 2)},
			{10*time.Second + 100*ms, 30, 9, math.Floor((20 - f20) / 2)},
			{10*time.Second + 200*ms, 15, 9, 20 - f20},
			{10*time.Second + 300*ms, 15, 20, 20 - f20 + 6*math.Log10(20-f20)},
		}},
	}
	for _, c := range cases {
		v := newVegas(cfg)
		for i, s := range c.steps {
			got := v.update(nanos(at(s.at)), s.rtt*1e6, s.inflight)
			if math.Abs(got-s.want) > 1e-9 {
				t.Errorf("%s: step %d: limit %.6f, want %.6f", c.name, i, got, s.want)
			}
		}
	}
	// Floor.
	v := newVegas(VegasConfig{InitialLimit: 6, MinLimit: 4, MaxLimit: 10}.withDefaults())
	v.update(0, 10e6, 6)
	for i := range 50 {
		v.update(int64(i+1)*int64(100*ms), 1e9, 10)
	}
	if v.limit != 4 {
		t.Errorf("floor: limit %v, want 4", v.limit)
	}
}

// simulate runs a server whose service time is base while in-flight is at
// most capacity and grows linearly beyond it (a queue), under clients that
// keep offered requests outstanding, in 1ms steps with time passed in. It
// returns the class limit's maximum in each simulated second.
func simulate(t *testing.T, c *Concurrency, capacity func(time.Duration) int, offered int, seconds int) []int64 {
	t.Helper()
	type req struct {
		p      Permit
		start  time.Duration
		finish time.Duration
	}
	var inflight []req
	var limits []int64
	base := 10 * ms
	for now := time.Duration(0); now < time.Duration(seconds)*time.Second; now += ms {
		kept := inflight[:0]
		for _, r := range inflight {
			if r.finish <= now {
				c.Release(at(now), r.p, r.finish-r.start)
				continue
			}
			kept = append(kept, r)
		}
		inflight = kept
		for len(inflight) < offered {
			p, v := c.Acquire(at(now), 0)
			if !v.Admit {
				break
			}
			rtt := base
			if n, k := len(inflight)+1, capacity(now); n > k {
				rtt = base * time.Duration(n) / time.Duration(k)
			}
			inflight = append(inflight, req{p, now, now + rtt})
		}
		// Record each second's highest limit, so the short halvings of a
		// probe do not show.
		l, _ := c.Limit(0)
		if now%time.Second == 0 {
			limits = append(limits, l)
		}
		limits[len(limits)-1] = max(limits[len(limits)-1], l)
	}
	return limits
}

func constant(n int) func(time.Duration) int { return func(time.Duration) int { return n } }

func TestAdaptiveLimitFindsCapacity(t *testing.T) {
	// Unlimited demand against capacity 50 from below and from 4× above:
	// the limit settles a few requests above capacity (Vegas holds while
	// the estimated queue is between 3 and 6 log10(limit)) and the probes
	// keep it there instead of ratcheting it up. From above, the first
	// window's RTT is already inflated, so it takes the probes (every 5s
	// here) to find the real baseline.
	cases := []struct {
		initial  int
		settleBy int // seconds
	}{{20, 2}, {200, 20}}
	for _, c := range cases {
		g := &VegasConfig{InitialLimit: c.initial, MaxLimit: 400, ProbeInterval: 5 * time.Second}
		cc, err := NewConcurrency(ConcurrencyConfig{Classes: []ClassConfig{{Name: "all", Limit: LimitConfig{Adaptive: g}}}})
		if err != nil {
			t.Fatal(err)
		}
		limits := simulate(t, cc, constant(50), 1000, 40)
		t.Logf("initial %d: limit per second: %v", c.initial, limits)
		for i, l := range limits {
			if l < 1 || l > 400 {
				t.Fatalf("limit %d outside [1, 400]", l)
			}
			if i >= c.settleBy && (l < 50 || l > 70) {
				t.Errorf("initial %d: second %d: limit %d, want 50..70 (capacity 50)", c.initial, i, l)
			}
		}
	}
}

func TestAdaptiveLimitFollowsCapacity(t *testing.T) {
	// Capacity 50, then a dependency slows down and it drops to 25 at 10s,
	// then it recovers to 100 at 25s.
	capacity := func(now time.Duration) int {
		switch {
		case now < 10*time.Second:
			return 50
		case now < 25*time.Second:
			return 25
		}
		return 100
	}
	g := &VegasConfig{InitialLimit: 20, MaxLimit: 400, ProbeInterval: 5 * time.Second}
	c, _ := NewConcurrency(ConcurrencyConfig{Classes: []ClassConfig{{Name: "all", Limit: LimitConfig{Adaptive: g}}}})
	limits := simulate(t, c, capacity, 1000, 40)
	t.Logf("limit per second: %v", limits)
	check := func(sec int, lo, hi int64) {
		if l := limits[sec]; l < lo || l > hi {
			t.Errorf("second %d: limit %d, want %d..%d", sec, l, lo, hi)
		}
	}
	check(9, 50, 70)
	check(20, 25, 40)
	check(24, 25, 40)
	check(35, 100, 125)
	check(39, 100, 125)
}

func TestAdaptiveLimitDoesNotGrowWhenAppLimited(t *testing.T) {
	g := &VegasConfig{InitialLimit: 40, MaxLimit: 1000}
	c, _ := NewConcurrency(ConcurrencyConfig{Classes: []ClassConfig{{Name: "all", Limit: LimitConfig{Adaptive: g}}}})
	// Only 15 requests ever outstanding (< 40/2), RTT perfect: the limit
	// must not creep up.
	limits := simulate(t, c, constant(1000), 15, 10)
	for i, l := range limits {
		if l != 40 {
			t.Fatalf("second %d: limit %d, want 40 (in-flight 15 is under half)", i, l)
		}
	}
	// With demand above half the limit it grows, up to the hard ceiling.
	c, _ = NewConcurrency(ConcurrencyConfig{Classes: []ClassConfig{{Name: "all", Limit: LimitConfig{Adaptive: &VegasConfig{InitialLimit: 40, MaxLimit: 60}}}}})
	limits = simulate(t, c, constant(1000), 1000, 10)
	if l := limits[len(limits)-1]; l != 60 {
		t.Fatalf("with demand and no queueing: limit %d, want the ceiling 60 (%v)", l, limits)
	}
}

func TestConcurrencyClassesAndPriorities(t *testing.T) {
	c, err := NewConcurrency(ConcurrencyConfig{
		Total: LimitConfig{Fixed: 10},
		Classes: []ClassConfig{
			{Name: "critical", Priority: PriorityCritical},
			{Name: "normal", Priority: PriorityNormal},
			{Name: "batch", Priority: PriorityBestEffort, Limit: LimitConfig{Fixed: 3}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	crit, _ := c.Class("critical")
	norm, _ := c.Class("normal")
	batch, _ := c.Class("batch")
	type step struct {
		class ClassID
		admit bool
	}
	var held []Permit
	steps := []step{
		// Batch has its own bulkhead of 3.
		{batch, true}, {batch, true}, {batch, true}, {batch, false},
		// Total in-flight 3; normal may fill to 9 (0.9 × 10).
		{norm, true}, {norm, true}, {norm, true}, {norm, true}, {norm, true}, {norm, true}, {norm, false},
		// Critical may fill to 10.
		{crit, true}, {crit, false},
	}
	for i, s := range steps {
		p, v := c.Acquire(t0, s.class)
		if v.Admit != s.admit || p.Held() != s.admit {
			t.Fatalf("step %d class %d: admit %v, want %v", i, s.class, v.Admit, s.admit)
		}
		if !v.Admit {
			if v.Reason != ReasonConcurrency || v.RetryAfter != 20*ms {
				t.Fatalf("step %d: verdict %+v", i, v)
			}
			continue
		}
		held = append(held, p)
	}
	// Releasing the batch permits: total 7, batch share is 0.5 × 10 = 5,
	// so best-effort work is refused before anything else.
	for _, p := range held[:3] {
		c.Release(t0, p, 0)
	}
	if _, v := c.Acquire(t0, batch); v.Admit {
		t.Fatal("best-effort admitted at total 7 >= its share 5")
	}
	if p, v := c.Acquire(t0, norm); !v.Admit {
		t.Fatal("normal refused at total 7 < 9")
	} else {
		c.Release(t0, p, 0)
	}
	total, classes := c.Stats()
	if total.Inflight != 7 || classes[batch].Inflight != 0 || classes[norm].Inflight != 6 || classes[crit].Inflight != 1 {
		t.Fatalf("stats %+v %+v", total, classes)
	}
	c.Release(t0, Permit{}, 0) // the zero permit is ignored
	if _, v := c.Acquire(t0, 99); v.Admit {
		t.Fatal("unknown class admitted")
	}
}

func TestConcurrencyConcurrentAcquireRelease(t *testing.T) {
	c, _ := NewConcurrency(ConcurrencyConfig{
		Total:   LimitConfig{Adaptive: &VegasConfig{InitialLimit: 8, MaxLimit: 16, Window: time.Millisecond}},
		Classes: []ClassConfig{{Name: "a"}, {Name: "b", Priority: PriorityBestEffort, Limit: LimitConfig{Fixed: 4}}},
	})
	var wg sync.WaitGroup
	var mu sync.Mutex
	peak := int64(0)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				now := at(time.Duration(i) * time.Microsecond * 100)
				p, v := c.Acquire(now, ClassID(g%2))
				if !v.Admit {
					continue
				}
				total, _ := c.Stats()
				mu.Lock()
				peak = max(peak, total.Inflight)
				mu.Unlock()
				c.Release(now, p, time.Millisecond)
			}
		}()
	}
	wg.Wait()
	total, classes := c.Stats()
	if total.Inflight != 0 || classes[0].Inflight != 0 || classes[1].Inflight != 0 {
		t.Fatalf("leaked slots: %+v %+v", total, classes)
	}
	if peak > 16 {
		t.Fatalf("peak in-flight %d above the ceiling", peak)
	}
}

func TestConcurrencyConfigValidate(t *testing.T) {
	for i, cfg := range []ConcurrencyConfig{
		{},
		{Classes: []ClassConfig{{Priority: 9}}},
		{Classes: []ClassConfig{{Limit: LimitConfig{Fixed: -1}}}},
		{Classes: []ClassConfig{{}}, Shares: [NumPriorities]float64{1, 0, 0.5}},
		{Classes: []ClassConfig{{Limit: LimitConfig{Adaptive: &VegasConfig{MinLimit: 10, MaxLimit: 5}}}}},
		{Classes: []ClassConfig{{Limit: LimitConfig{Adaptive: &VegasConfig{Smoothing: 2}}}}},
	} {
		if _, err := NewConcurrency(cfg); err == nil {
			t.Errorf("%d: accepted %+v", i, cfg)
		}
	}
}

func BenchmarkConcurrencyAcquireRelease(b *testing.B) {
	c, _ := NewConcurrency(ConcurrencyConfig{
		Total:   LimitConfig{Adaptive: &VegasConfig{}},
		Classes: []ClassConfig{{Name: "a", Limit: LimitConfig{Fixed: 100}}},
	})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now := at(time.Duration(i) * time.Microsecond)
		p, _ := c.Acquire(now, 0)
		c.Release(now, p, time.Millisecond)
	}
}
