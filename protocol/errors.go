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
	// HeaderKind, a negative MaxFrameBytes, a LengthField size of 3).
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
	errFieldTooLarge   = fmt.Errorf("%w: length field declares a frame above MaxFrameBytes", ErrFrameTooLarge)
	errFieldNegative   = fmt.Errorf("%w: length field declares fewer bytes than its header and adjustment", ErrMalformed)
	errFieldBelowZero  = fmt.Errorf("%w: body too short for the length adjustment", ErrMalformed)
	errFieldOverflow   = fmt.Errorf("%w: length does not fit in the length field", ErrFrameTooLarge)
	errFieldShortFrame = fmt.Errorf("%w: frame shorter than its header", ErrMalformed)
	errFieldSize       = fmt.Errorf("%w: length field size not 1, 2, 4 or 8", ErrInvalidConfig)
	errFieldOffset     = fmt.Errorf("%w: length field offset outside 0..MaxLengthFieldOffset", ErrInvalidConfig)
	errFieldAdjustment = fmt.Errorf("%w: length adjustment beyond ±MaxLengthAdjustment", ErrInvalidConfig)
	errUnknownHeader   = fmt.Errorf("%w: unknown HeaderKind", ErrInvalidConfig)
	errNegativeMax     = fmt.Errorf("%w: negative MaxFrameBytes", ErrInvalidConfig)
)
