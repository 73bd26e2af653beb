//go:build !linux && !darwin

package spin

import (
	"testing"
	"time"
)

// cpuCost returns f's wall time: without a thread CPU clock, time the thread
// waited while preempted counts too.
func cpuCost(_ *testing.T, f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}
