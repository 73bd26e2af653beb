//go:build !linux

package procstat

import (
	"os"
	"os/exec"
)

// AvailableCPUs returns ErrUnsupported.
func AvailableCPUs() ([]int, error) { return nil, ErrUnsupported }

// PinProcess returns ErrUnsupported.
func PinProcess([]int) error { return ErrUnsupported }

// StartPinned returns ErrUnsupported.
func StartPinned(*exec.Cmd, []int) error { return ErrUnsupported }

// ProcessCPUs returns ErrUnsupported.
func ProcessCPUs(int) ([]int, error) { return nil, ErrUnsupported }

// IsTerminal reports false.
func IsTerminal(*os.File) bool { return false }
