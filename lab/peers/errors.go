package peers

import "errors"

// Sentinel errors of package peers.
var (
	// ErrUnknownKind reports a Config.Kind other than gnet, net or trivial.
	ErrUnknownKind = errors.New("sluice: peers: unknown peer kind")
	// ErrUnsupported reports a peer that needs Linux on another system.
	ErrUnsupported = errors.New("sluice: peers: unsupported on this system")
)
