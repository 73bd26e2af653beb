package protocol

import (
	"encoding/binary"
	"math"
	"strconv"
)

// HeaderKind selects the length header of a LengthPrefixed codec.
type HeaderKind uint8

const (
	// Fixed32 is a 4-byte big-endian unsigned length. It is the zero value.
	Fixed32 HeaderKind = iota
	// Uvarint is an unsigned LEB128 varint length (encoding/binary's Uvarint),
	// 1 to 10 bytes, which must be minimally encoded.
	Uvarint
)

// String returns "fixed32", "uvarint" or "HeaderKind(n)".
func (k HeaderKind) String() string {
	switch k {
	case Fixed32:
		return "fixed32"
	case Uvarint:
		return "uvarint"
	}
	return "HeaderKind(" + strconv.Itoa(int(k)) + ")"
}

// fixed32HeaderBytes is the size of a Fixed32 header.
const fixed32HeaderBytes = 4

// LengthPrefixed frames are a length header followed by that many bytes; the
// frame excludes the header. MaxFrameBytes 0 means DefaultMaxFrameBytes. The
// zero value is a Fixed32 codec with the default limit. A LengthPrefixed is
// safe for concurrent use.
type LengthPrefixed struct {
	Header        HeaderKind
	MaxFrameBytes int
}

// Validate reports ErrInvalidConfig for an unknown Header or a negative
// MaxFrameBytes.
func (c LengthPrefixed) Validate() error {
	if c.Header != Fixed32 && c.Header != Uvarint {
		return errUnknownHeader
	}
	if c.MaxFrameBytes < 0 {
		return errNegativeMax
	}
	return nil
}

// Decode returns the payload of the first complete frame in buf. A header
// that declares more than MaxFrameBytes is rejected with ErrFrameTooLarge as
// soon as the header bytes received so far prove it, before the payload
// arrives. A Uvarint header that is longer than 10 bytes, overflows 64 bits
// or is not minimally encoded is ErrMalformed. frame aliases buf (its
// capacity is clipped to its length) and stays valid until buf is modified.
func (c LengthPrefixed) Decode(buf []byte) (frame []byte, n int, err error) {
	if err := c.Validate(); err != nil {
		return nil, 0, err
	}
	limit := maxFrame(c.MaxFrameBytes)
	var size uint64
	var hdr int
	if c.Header == Uvarint {
		size, hdr, err = readUvarint(buf, uint64(limit))
	} else {
		size, hdr, err = readFixed32(buf, uint64(limit))
	}
	if err != nil || hdr == 0 {
		return nil, 0, err
	}
	// size <= limit <= MaxInt, so the conversion is exact; comparing against
	// the remaining bytes avoids overflow in hdr+size.
	if uint64(len(buf)-hdr) < size {
		return nil, 0, nil
	}
	end := hdr + int(size)
	return buf[hdr:end:end], end, nil
}

// readFixed32 reads a 4-byte big-endian header. hdr == 0 means more input is
// needed. A partial header whose value is already above limit (the missing
// low bytes taken as zero) is rejected early.
func readFixed32(buf []byte, limit uint64) (size uint64, hdr int, err error) {
	if len(buf) >= fixed32HeaderBytes {
		size = uint64(binary.BigEndian.Uint32(buf))
		if size > limit {
			return 0, 0, errFixed32TooLarge
		}
		return size, fixed32HeaderBytes, nil
	}
	var least uint64
	for i := 0; i < fixed32HeaderBytes; i++ {
		least <<= 8
		if i < len(buf) {
			least |= uint64(buf[i])
		}
	}
	if least > limit {
		return 0, 0, errFixed32TooLarge
	}
	return 0, 0, nil
}

// readUvarint reads a minimally encoded unsigned varint. hdr == 0 means more
// input is needed. Because the encoding must be minimal, every continuation
// byte promises at least one more non-zero group, so a header whose smallest
// possible value is already above limit is rejected before it is complete.
func readUvarint(buf []byte, limit uint64) (size uint64, hdr int, err error) {
	var x uint64
	var shift uint
	for i, b := range buf {
		if i == binary.MaxVarintLen64-1 && b > 1 {
			// The tenth byte carries bit 63 only; more is an 11th byte or overflow.
			return 0, 0, errUvarintOverflow
		}
		if b < 0x80 {
			if b == 0 && i > 0 {
				return 0, 0, errUvarintPadded
			}
			x |= uint64(b) << shift
			if x > limit {
				return 0, 0, errUvarintTooLarge
			}
			return x, i + 1, nil
		}
		x |= uint64(b&0x7f) << shift
		shift += 7
		if shift < 64 && x+1<<shift > limit {
			// The next byte is non-zero, so the value is at least x + 2^shift.
			// (x < 2^shift, so the sum cannot overflow.)
			return 0, 0, errUvarintTooLarge
		}
	}
	return 0, 0, nil
}

// AppendEncode appends the length header and frame to dst. It does not check
// MaxFrameBytes (use AppendFrame for that); with an invalid configuration it
// returns dst unchanged. It allocates only when dst lacks room.
func (c LengthPrefixed) AppendEncode(dst, frame []byte) []byte {
	switch c.Header {
	case Fixed32:
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(frame)))
	case Uvarint:
		dst = binary.AppendUvarint(dst, uint64(len(frame)))
	default:
		return dst
	}
	return append(dst, frame...)
}

// AppendFrame is AppendEncode with checks: it returns dst unchanged and
// ErrFrameTooLarge when frame exceeds MaxFrameBytes (or, for Fixed32, 2^32-1
// bytes), and ErrInvalidConfig for an invalid codec.
func (c LengthPrefixed) AppendFrame(dst, frame []byte) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return dst, err
	}
	if len(frame) > maxFrame(c.MaxFrameBytes) || (c.Header == Fixed32 && uint64(len(frame)) > math.MaxUint32) {
		return dst, ErrFrameTooLarge
	}
	return c.AppendEncode(dst, frame), nil
}

// HeaderBytes returns the size of the header that AppendEncode writes for a
// frame of frameBytes bytes (0 for an invalid Header).
func (c LengthPrefixed) HeaderBytes(frameBytes int) int {
	switch c.Header {
	case Fixed32:
		return fixed32HeaderBytes
	case Uvarint:
		n := 1
		for v := uint64(frameBytes); v >= 0x80; v >>= 7 {
			n++
		}
		return n
	}
	return 0
}
