package httpecho

import (
	"fmt"

	"github.com/sluicenet/sluice/protocol"
)

// Sentinel errors of package httpecho. Malformed requests are reported with
// the protocol/http1 sentinels (each an *http1.Error naming its status);
// these cover what this package adds.
var (
	// ErrFramingMismatch is the close cause when a frame the codec's fast
	// framing cut does not parse as exactly one request under the strict
	// parser (the two disagree about where the request ends). The request is
	// answered with 400 and the connection closed. It wraps
	// protocol.ErrMalformed.
	ErrFramingMismatch = fmt.Errorf("%w: httpecho: request framing disagrees with the strict parse", protocol.ErrMalformed)
)
