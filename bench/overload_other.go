//go:build !linux

package bench

import "context"

// Overload returns ErrUnsupported: the runner needs Linux.
func Overload(context.Context, OverloadConfig) (*OverloadReport, error) { return nil, ErrUnsupported }

// ConnFlood returns ErrUnsupported.
func ConnFlood(context.Context, ConnFloodConfig) (*ConnFloodResult, error) {
	return nil, ErrUnsupported
}

// PeerFlood returns ErrUnsupported.
func PeerFlood(context.Context, PeerFloodConfig) (*PeerFloodResult, error) {
	return nil, ErrUnsupported
}
