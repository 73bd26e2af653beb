//go:build !linux

package lab

import (
	"context"

	"github.com/sluicenet/sluice/bench"
)

// Compare returns bench.ErrUnsupported: the runner needs Linux.
func Compare(context.Context, CompareConfig) (*Report, error) { return nil, bench.ErrUnsupported }
