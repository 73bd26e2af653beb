package protocol

import (
	"errors"
	"fmt"
)

// Sentinel errors. Decode returns them (or errors wrapping them) when the input
// can never become a valid frame; callers test with errors.Is. Sub-packages
// (envelope, resp, http1) wrap ErrFrameTooLarge and ErrMalformed with %w.
var (
	// ErrFrameTooLarge reports a frame whose declared or observed size exceeds
	// the codec's MaxFrameBytes.
	ErrFrameTooLarge = errors.New("sluice: frame too large")
	// ErrMalformed reports input that violates the wire format (for example an
	// overlong or non-minimal varint length header).
	ErrMalformed = errors.New("sluice: malformed frame")
	// ErrUnknownCodec reports a codec name ByName does not know.
	ErrUnknownCodec = errors.New("sluice: unknown codec")
	// ErrInvalidConfig reports a codec value that cannot work (an unknown
	// HeaderKind, a negative MaxFrameBytes).
	ErrInvalidConfig = errors.New("sluice: invalid codec configuration")
)

// Wrapped errors are built once here so that Decode never allocates, not even
// on its error paths.
var (
	errFixed32TooLarge = fmt.Errorf("%w: 4-byte length header exceeds MaxFrameBytes", ErrFrameTooLarge)
	errUvarintTooLarge = fmt.Errorf("%w: uvarint length header exceeds MaxFrameBytes", ErrFrameTooLarge)
	errUvarintOverflow = fmt.Errorf("%w: uvarint length header longer than 10 bytes or above 2^64-1", ErrMalformed)
	errUvarintPadded   = fmt.Errorf("%w: uvarint length header is not minimally encoded", ErrMalformed)
	errLineTooLong     = fmt.Errorf("%w: no delimiter within MaxFrameBytes+1 bytes", ErrFrameTooLarge)
	errFrameHasDelim   = fmt.Errorf("%w: frame contains the delimiter byte", ErrMalformed)
	errUnknownHeader   = fmt.Errorf("%w: unknown HeaderKind", ErrInvalidConfig)
	errNegativeMax     = fmt.Errorf("%w: negative MaxFrameBytes", ErrInvalidConfig)
)
