package spin

import (
	"testing"
	"time"
)

// TestFor: For(d) takes at least about d of wall time (the calibration is
// the fastest trial, so an unhindered run is not shorter), and its
// iteration count scales with d.
func TestFor(t *testing.T) {
	if Iterations(0) != 0 || Iterations(-time.Second) != 0 {
		t.Fatal("work for a non-positive duration")
	}
	a, b := Iterations(time.Millisecond), Iterations(2*time.Millisecond)
	if a == 0 || b < 2*a-2 || b > 2*a+2 {
		t.Fatalf("iterations 1ms %d, 2ms %d", a, b)
	}
	best := time.Hour
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		For(5 * time.Millisecond)
		best = min(best, time.Since(t0))
	}
	if best < 4*time.Millisecond {
		t.Errorf("For(5ms) took %v at best", best)
	}
	t.Logf("%.3f ns per iteration; For(5ms) took %v at best", nanosPerIt, best)
}

func BenchmarkFor(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		For(time.Microsecond)
	}
}
