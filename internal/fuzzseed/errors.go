package fuzzseed

import "errors"

var (
	// ErrUnsupportedType reports a seed argument whose type has no corpus
	// file encoding, such as a named type, a pointer or nil: convert it to
	// the fuzz target's parameter type (uint8(m.Type), not m.Type).
	ErrUnsupportedType = errors.New("sluice: fuzzseed: unsupported argument type")

	// ErrNoArgs reports a seed with no arguments; every fuzz target has at
	// least one.
	ErrNoArgs = errors.New("sluice: fuzzseed: seed has no arguments")

	// ErrBadName reports a target or seed name that is empty, ".", "..",
	// contains a path separator, or repeats a seed name within its target.
	ErrBadName = errors.New("sluice: fuzzseed: bad target or seed name")

	// ErrMissing reports a seed in the table that has no file.
	ErrMissing = errors.New("sluice: fuzzseed: seed file missing")

	// ErrStale reports a seed file whose bytes differ from its table entry.
	ErrStale = errors.New("sluice: fuzzseed: seed file stale")

	// ErrUnexpected reports a file under the corpus directory that the
	// table does not name (CheckStrict only).
	ErrUnexpected = errors.New("sluice: fuzzseed: seed file not in the table")
)
