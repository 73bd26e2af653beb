//go:build !linux

package lab

import (
	"context"

	"github.com/sluicenet/sluice/bench"
)

// Matrix returns ErrUnsupported: the runner needs Linux.
func Matrix(context.Context, MatrixConfig, *MatrixReport) (*MatrixReport, error) {
	return nil, bench.ErrUnsupported
}
