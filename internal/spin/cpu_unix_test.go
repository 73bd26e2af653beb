//go:build linux || darwin

package spin

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cpuCost returns the CPU time the calling thread spent in f (the caller
// locks the goroutine to its thread): time the thread waited while
// preempted does not count.
func cpuCost(t *testing.T, f func()) time.Duration {
	t.Helper()
	var a, b unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &a); err != nil {
		t.Fatal(err)
	}
	f()
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &b); err != nil {
		t.Fatal(err)
	}
	return time.Duration(b.Nano() - a.Nano())
}
