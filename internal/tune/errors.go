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

// HostError is why one host value is unknown: its file is missing
// (ErrMissing), unreadable, or malformed (ErrMalformed). errors.Is sees the
// kind through Unwrap.
type HostError struct {
	// Path is the file, relative to the root ("" when not yet known).
	Path string
	// Kind is ErrMissing, ErrMalformed, or the error reading the file.
	Kind error
	// Detail says what was wrong, quoting the offending text.
	Detail string
}

// Error returns "KIND: PATH: DETAIL".
func (e *HostError) Error() string {
	s := e.Kind.Error()
	if e.Path != "" {
		s += ": " + e.Path
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the kind.
func (e *HostError) Unwrap() error { return e.Kind }
