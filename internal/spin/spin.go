// Package spin burns a fixed amount of CPU work: the simulated per-request
// cost of cmd/echo -work and of the bench peers' -work, shared so that every
// server under comparison does exactly the same work per frame.
//
// It owns a busy loop and nothing else. The work is a fixed number of loop
// iterations per microsecond (IterationsPerMicrosecond, measured once on
// the reference machine), not a wait on the clock and not a per-process
// calibration: a server preempted in the middle of a clock-based spin
// finishes it early in CPU terms, and a calibration taken while a sibling
// hyperthread is busy makes one process's "200 µs" cheaper than another's;
// both happened on the shared machine. A fixed loop costs every process the
// same work whatever the scheduler does; its wall time varies instead.
//
// # Testing the suite's independence from CPU speed
//
// The environment variable SLUICE_SPIN_SCALE, read once when the package is
// initialised, multiplies the iterations (see Scale): 0.5 runs half of them,
// so the work runs as it would on a CPU twice as fast as the reference
// machine; 2 runs twice as many, as on a CPU twice as slow. Unset, empty,
// not a number, infinite or not positive means 1. It is a knob for testing
// that the test suite does not depend on the speed of the CPU it runs on
// (SLUICE_SPIN_SCALE=0.5 go test ./...), not a tuning knob: leave it unset
// for benchmarks, where every server compared must do the same work.
//
// Usage:
//
//	spin.For(200 * time.Microsecond) // 200 µs of work on the reference machine
package spin

import (
	"math"
	"os"
	"runtime"
	"strconv"
	"time"
)

// IterationsPerMicrosecond is the loop's speed on the reference machine (an
// AMD EPYC vCPU, measured as the fastest of several timed runs: 1.08 ns per
// iteration). On another machine For(d) takes proportionally more or less
// time, but the same work.
const IterationsPerMicrosecond = 925

// ScaleEnv is the environment variable read once for Scale.
const ScaleEnv = "SLUICE_SPIN_SCALE"

// scale is ScaleEnv's factor, read once at package initialisation.
var scale = parseScale(os.Getenv(ScaleEnv))

// parseScale returns the factor s names: a finite positive float, or 1 for
// anything else (empty included).
func parseScale(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f > 0) || math.IsInf(f, 0) {
		return 1
	}
	return f
}

// Scale returns the factor Iterations applies: SLUICE_SPIN_SCALE as read
// when the package was initialised, or 1 (see the package documentation).
func Scale() float64 { return scale }

// burn runs n iterations of a dependent multiply-add chain, which the
// compiler cannot shorten and the CPU cannot overlap.
func burn(n uint64) uint64 {
	x := n | 1
	for i := uint64(0); i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// Iterations returns how many loop iterations For runs for d: d's worth at
// IterationsPerMicrosecond, times Scale (exactly d·IterationsPerMicrosecond/µs,
// truncated, when Scale is 1; rounded to the nearest iteration otherwise).
// It is 0 for a non-positive d.
func Iterations(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	n := uint64(d) * IterationsPerMicrosecond / uint64(time.Microsecond)
	if scale == 1 {
		return n
	}
	f := math.Round(float64(n) * scale)
	if f >= math.MaxUint64 { // 2⁶⁴ as a float: out of uint64's range
		return math.MaxUint64
	}
	return uint64(f)
}

// For does d's worth of work (Iterations(d) loop iterations: see
// IterationsPerMicrosecond and Scale) on the calling goroutine. It is safe
// for concurrent use.
func For(d time.Duration) {
	if n := Iterations(d); n > 0 {
		runtime.KeepAlive(burn(n)) // the result is used: the loop stays
	}
}
