package spin

import (
	"testing"
	"time"
)

// TestFor: the work is proportional to d, and on a machine like the
// reference one For(5ms) takes milliseconds, not micro- or whole seconds
// (generous bounds: the machine is shared and may be slower).
func TestFor(t *testing.T) {
	if Iterations(0) != 0 || Iterations(-time.Second) != 0 {
		t.Fatal("work for a non-positive duration")
	}
	if a, b := Iterations(time.Millisecond), Iterations(2*time.Millisecond); a != 925_000 || b != 2*a {
		t.Fatalf("iterations 1ms %d, 2ms %d", a, b)
	}
	best := time.Hour
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		For(5 * time.Millisecond)
		best = min(best, time.Since(t0))
	}
	if best < time.Millisecond || best > time.Second {
		t.Errorf("For(5ms) took %v at best", best)
	}
	t.Logf("For(5ms) took %v at best", best)
}

func BenchmarkFor(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		For(time.Microsecond)
	}
}
