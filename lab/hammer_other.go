//go:build !linux

package lab

import (
	"context"

	"github.com/sluicenet/sluice/bench"
)

// Hammer returns ErrUnsupported: the runner needs Linux.
func Hammer(context.Context, HammerConfig, *HammerReport) (*HammerReport, error) {
	return nil, bench.ErrUnsupported
}
