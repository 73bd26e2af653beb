//go:build !linux

package bench

import (
	"context"
	"os"
	"os/exec"
)

// Load returns ErrUnsupported: the generator needs Linux.
func Load(context.Context, LoadConfig) (*LoadResult, error) { return nil, ErrUnsupported }

// Compare returns ErrUnsupported: the runner needs Linux.
func Compare(context.Context, CompareConfig) (*Report, error) { return nil, ErrUnsupported }

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
