//go:build !linux

package peers

import (
	"context"
	"net"
)

func serveTrivial(context.Context, Config, func(net.Addr)) error { return ErrUnsupported }
