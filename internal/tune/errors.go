package tune

import "errors"

// Sentinel errors. Every error the package returns or records in a Reading
// wraps one of these, so callers can test with errors.Is.
var (
	// ErrMissing reports that a host file does not exist under the root. A
	// missing file makes its value unknown; it is never a crash.
	ErrMissing = errors.New("sluice: tune: host value not found")

	// ErrMalformed reports that a host file exists but its content does not
	// parse. The report names the file and quotes the offending text.
	ErrMalformed = errors.New("sluice: tune: malformed host value")

	// ErrInvalidTarget reports a target (connections, message size, memory
	// share, ...) that cannot be planned for, such as zero connections.
	ErrInvalidTarget = errors.New("sluice: tune: invalid target")

	// ErrUsage reports bad command-line arguments.
	ErrUsage = errors.New("sluice: tune: usage")
)
