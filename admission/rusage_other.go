//go:build !linux

package admission

import "time"

// ProcessCPUTime returns ErrUnsupported: sluice runs on Linux.
func ProcessCPUTime() (time.Duration, error) { return 0, ErrUnsupported }
