//go:build !linux

package bench

import "context"

// Load returns ErrUnsupported: the generator needs Linux.
func Load(context.Context, LoadConfig) (*LoadResult, error) { return nil, ErrUnsupported }
