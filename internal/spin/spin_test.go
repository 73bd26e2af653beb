package spin

import (
	"math"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"
)

func TestParseScale(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
	}{
		{"", 1}, {"1", 1}, {"0.5", 0.5}, {"2", 2}, {" 2", 1}, {"1e-3", 0.001},
		{"0", 1}, {"-1", 1}, {"-0", 1}, {"x", 1}, {"NaN", 1}, {"Inf", 1}, {"+Inf", 1}, {"1e400", 1},
	} {
		if got := parseScale(c.in); got != c.want {
			t.Errorf("parseScale(%q) = %v, want %v", c.in, got, c.want)
		}
	}
	// The factor in use is the environment's, read once.
	if want := parseScale(os.Getenv(ScaleEnv)); Scale() != want {
		t.Errorf("Scale() = %v, want %v from %s=%q", Scale(), want, ScaleEnv, os.Getenv(ScaleEnv))
	}
}

// TestIterations: the count is d's worth at IterationsPerMicrosecond times
// Scale (exact when the scale is 1), so it passes whatever SLUICE_SPIN_SCALE
// says.
func TestIterations(t *testing.T) {
	if Iterations(0) != 0 || Iterations(-time.Second) != 0 {
		t.Fatal("work for a non-positive duration")
	}
	a, b := Iterations(time.Millisecond), Iterations(2*time.Millisecond)
	if want := uint64(math.Round(925_000 * Scale())); a != want {
		t.Errorf("Iterations(1ms) = %d, want %d (scale %v)", a, want, Scale())
	}
	if Scale() == 1 && (a != 925_000 || b != 2*a) || b < 2*a-1 || b > 2*a+1 {
		t.Errorf("Iterations 1ms %d, 2ms %d: not proportional", a, b)
	}
}

// TestFor: For's work is proportional to d. The reference is measured in
// the test, not taken from the calibration: For(4d) against For(d), run back
// to back in pairs on one locked thread and timed on that thread's CPU
// clock, so neither the CPU's speed (nor SLUICE_SPIN_SCALE) nor CPU hogs
// that preempt the test move the ratio. The median ratio of the pairs must
// be near 4; the bounds (2 and 8) are loose for a sibling hyperthread that
// is busy in one run of a pair and idle in the other, and still tell
// proportional work from a constant (1) or no work at all.
func TestFor(t *testing.T) {
	d := time.Millisecond
	for Iterations(d) < 1_000_000 { // well above the clock's cost, whatever the scale
		d *= 2
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const pairs = 7
	var ratios []float64
	best := time.Duration(math.MaxInt64)
	for range pairs {
		one := cpuCost(t, func() { For(d) })
		four := cpuCost(t, func() { For(4 * d) })
		ratios = append(ratios, float64(four)/float64(max(one, 1)))
		best = min(best, one)
	}
	slices.Sort(ratios)
	median := ratios[pairs/2]
	t.Logf("For(%v) cost %v at best (%.2f ns per iteration; the reference machine: 1.08); For(4×) / For(1×): median %.2f of %.2f",
		d, best, float64(best)/float64(Iterations(d)), median, ratios)
	if median < 2 || median > 8 {
		t.Errorf("For(%v) cost %.2f times For(%v) (median of %d pairs: %.2f), want about 4: the work is not proportional to d", 4*d, median, d, pairs, ratios)
	}
}

func BenchmarkFor(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		For(time.Microsecond)
	}
}
