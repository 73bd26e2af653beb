//go:build !linux

package lab

import (
	"context"

	"github.com/sluicenet/sluice/bench"
)

// Overload returns ErrUnsupported: the runner needs Linux.
func Overload(context.Context, OverloadConfig) (*OverloadReport, error) {
	return nil, bench.ErrUnsupported
}

// ConnFlood returns ErrUnsupported.
func ConnFlood(context.Context, ConnFloodConfig) (*ConnFloodResult, error) {
	return nil, bench.ErrUnsupported
}

// PeerFlood returns ErrUnsupported.
func PeerFlood(context.Context, PeerFloodConfig) (*PeerFloodResult, error) {
	return nil, bench.ErrUnsupported
}
