package envelope

import (
	"encoding/binary"

	"github.com/sluicenet/sluice/protocol"
)

// Codec frames envelopes on a byte stream. It satisfies protocol.Codec:
// Decode returns each whole wire frame, length field included, ready for
// Parse; AppendEncode appends a frame built by Append or AppendMessage
// unchanged. MaxFrameBytes bounds a whole frame, length field included; 0
// means protocol.DefaultMaxFrameBytes. The zero value is ready to use; a
// Codec is safe for concurrent use.
type Codec struct {
	MaxFrameBytes int
}

var _ protocol.Codec = Codec{}

// Validate reports ErrInvalidConfig for a negative MaxFrameBytes or one
// smaller than FixedHeaderBytes (no frame would fit).
func (c Codec) Validate() error {
	switch {
	case c.MaxFrameBytes < 0:
		return errConfigNegative
	case c.MaxFrameBytes > 0 && c.MaxFrameBytes < FixedHeaderBytes:
		return errConfigSmall
	}
	return nil
}

func (c Codec) limit() int {
	if c.MaxFrameBytes == 0 {
		return protocol.DefaultMaxFrameBytes
	}
	return c.MaxFrameBytes
}

// Decode returns the first whole frame in buf. It checks only what framing
// needs, as early as the bytes allow: a length field above MaxFrameBytes is
// ErrFrameTooLarge and one below the fixed header is ErrTruncated, both as
// soon as the length field is complete (and a partial length field already
// above the limit is rejected at once); a version byte other than Version
// is ErrUnknownVersion as soon as it arrives. Everything else is Parse's
// job, so a frame that fails Parse leaves the stream in sync and can be
// answered with a reject. frame aliases buf (capacity clipped) and is valid
// until buf is modified. Decode never allocates.
func (c Codec) Decode(buf []byte) (frame []byte, n int, err error) {
	if err := c.Validate(); err != nil {
		return nil, 0, err
	}
	limit := uint64(c.limit())
	if len(buf) < LengthFieldBytes {
		// The smallest value the length can still take: missing bytes zero.
		var least uint64
		for i := 0; i < LengthFieldBytes; i++ {
			least <<= 8
			if i < len(buf) {
				least |= uint64(buf[i])
			}
		}
		if least+LengthFieldBytes > limit {
			return nil, 0, errDecodeTooLarge
		}
		return nil, 0, nil
	}
	size := uint64(binary.BigEndian.Uint32(buf)) + LengthFieldBytes
	switch {
	case size > limit:
		return nil, 0, errDecodeTooLarge
	case size < FixedHeaderBytes:
		return nil, 0, errLengthTooSmall
	case len(buf) > offVersion && buf[offVersion] != Version:
		return nil, 0, errVersion
	case uint64(len(buf)) < size:
		return nil, 0, nil
	}
	end := int(size)
	return buf[:end:end], end, nil
}

// AppendEncode appends frame, a whole wire frame, to dst unchanged.
func (Codec) AppendEncode(dst, frame []byte) []byte {
	return append(dst, frame...)
}
