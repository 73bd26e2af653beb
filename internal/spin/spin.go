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
// Usage:
//
//	spin.For(200 * time.Microsecond) // 200 µs of work on the reference machine
package spin

import (
	"runtime"
	"time"
)

// IterationsPerMicrosecond is the loop's speed on the reference machine (an
// AMD EPYC vCPU, measured as the fastest of several timed runs: 1.08 ns per
// iteration). On another machine For(d) takes proportionally more or less
// time, but the same work.
const IterationsPerMicrosecond = 925

// burn runs n iterations of a dependent multiply-add chain, which the
// compiler cannot shorten and the CPU cannot overlap.
func burn(n uint64) uint64 {
	x := n | 1
	for i := uint64(0); i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// Iterations returns how many loop iterations For runs for d.
func Iterations(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	return uint64(d) * IterationsPerMicrosecond / uint64(time.Microsecond)
}

// For does d's worth of work (see IterationsPerMicrosecond) on the calling
// goroutine. It is safe for concurrent use.
func For(d time.Duration) {
	if n := Iterations(d); n > 0 {
		runtime.KeepAlive(burn(n)) // the result is used: the loop stays
	}
}
