// Package spin burns a fixed amount of CPU work: the simulated per-request
// cost of cmd/echo -work and of the bench peers' -work, shared so that every
// server under comparison does exactly the same work per frame.
//
// It owns a calibrated busy loop and nothing else. The work is a number of
// loop iterations, calibrated once per process as the fastest of several
// timed trials, rather than a wait on the clock: a server preempted in the
// middle of a clock-based spin would finish it early in CPU terms, so on a
// shared machine the "work" would shrink exactly when the server competes
// for its core. A calibrated loop costs the same CPU whatever the
// scheduler does; its wall time grows instead.
//
// Usage:
//
//	spin.For(200 * time.Microsecond) // about 200 µs of one core's time
package spin

import (
	"runtime"
	"sync"
	"time"
)

// calibrationIterations is the length of one calibration trial (about a
// tenth of a millisecond); calibrationTrials is how many are timed, the
// fastest counting.
const (
	calibrationIterations = 100_000
	calibrationTrials     = 9
)

var (
	once       sync.Once
	nanosPerIt float64
)

// calibrate times the loop; the fastest trial is the one no preemption or
// interrupt interrupted.
func calibrate() {
	best := time.Duration(1<<63 - 1)
	for i := 0; i < calibrationTrials; i++ {
		t0 := time.Now()
		runtime.KeepAlive(burn(calibrationIterations))
		if d := time.Since(t0); d > 0 && d < best {
			best = d
		}
	}
	nanosPerIt = float64(best) / calibrationIterations
}

// burn runs n iterations of a dependent multiply-add chain, which the
// compiler cannot shorten and the CPU cannot overlap.
func burn(n uint64) uint64 {
	x := n | 1
	for i := uint64(0); i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// Iterations returns how many loop iterations For runs for d (calibrating
// on first use).
func Iterations(d time.Duration) uint64 {
	once.Do(calibrate)
	if d <= 0 || nanosPerIt <= 0 {
		return 0
	}
	return uint64(float64(d) / nanosPerIt)
}

// For burns about d of CPU time on the calling goroutine (more wall time if
// the thread is preempted). It is safe for concurrent use.
func For(d time.Duration) {
	if n := Iterations(d); n > 0 {
		runtime.KeepAlive(burn(n)) // the result is used: the loop stays
	}
}
