package protocol

import (
	"time"
)

// Limits on a LengthField's configuration. They keep every size the
// decoder computes far inside int64, so Decode needs no overflow checks
// beyond one comparison of the length field's value.
const (
	// MaxLengthFieldOffset is the largest LengthField.Offset: 64 KiB of
	// header before the length field, far more than any protocol puts there.
	MaxLengthFieldOffset = 1 << 16
	// MaxLengthAdjustment bounds the magnitude of LengthField.Adjustment
	// (1 GiB): an adjustment corrects for header bytes, so real ones are
	// small.
	MaxLengthAdjustment = 1 << 30
	// maxLengthValue is the largest length field value Decode accepts: a
	// value above 2^62 declares a frame no memory can hold, whatever
	// MaxFrameBytes says, and rejecting it early keeps the arithmetic exact.
	maxLengthValue = 1 << 62
	// defaultLengthFieldSize is the size used when LengthField.Size is 0.
	defaultLengthFieldSize = 4
)

// LengthField frames a byte stream by a length field inside a header, the
// framing of Netty's LengthFieldBasedFrameDecoder. On the wire a frame is
//
//	[Offset bytes][length field: Size bytes][body]
//
// and the header is the first Offset+Size bytes. The body's size is the
// field's unsigned value plus Adjustment, minus the header's size when
// IncludesHeader says the value counts the header too. A value that makes
// the body negative is ErrMalformed.
//
// Decode returns the body, or the whole frame, header included, when
// KeepHeader is set (so a handler can read a type or id in the header).
// MaxFrameBytes bounds the frame Decode returns (0 means
// DefaultMaxFrameBytes) and is enforced as soon as the header has arrived,
// before the body: ErrFrameTooLarge.
//
// Size is 1, 2, 4 or 8 (0 means 4); the field is big-endian unless
// LittleEndian is set. The zero value frames exactly as LengthPrefixed's
// zero value does: a 4-byte big-endian length of the body that follows.
// A LengthField is a plain value, safe for concurrent use.
//
// For example, a 2-byte big-endian length: LengthField{Size: 2}; a header
// of a type byte and a 4-byte little-endian length counting the whole
// frame: LengthField{Offset: 1, Size: 4, LittleEndian: true,
// IncludesHeader: true, KeepHeader: true}.
type LengthField struct {
	Offset         int  // bytes before the length field, 0..MaxLengthFieldOffset
	Size           int  // bytes of the length field: 1, 2, 4 or 8; 0 means 4
	LittleEndian   bool // byte order of the length field; false: big-endian
	Adjustment     int  // added to the field's value, like Netty's lengthAdjustment
	IncludesHeader bool // the field's value counts the header (Offset+Size) too
	KeepHeader     bool // Decode's frame starts at the header, not at the body
	MaxFrameBytes  int  // limit on len(frame) as Decode returns it; 0: DefaultMaxFrameBytes
}

// size returns the effective field size.
func (c LengthField) size() int {
	if c.Size == 0 {
		return defaultLengthFieldSize
	}
	return c.Size
}

// HeaderBytes returns the size of the header, Offset plus the field size.
func (c LengthField) HeaderBytes() int {
	return c.Offset + c.size()
}

// Validate reports ErrInvalidConfig for a Size other than 0, 1, 2, 4 or 8,
// an Offset outside 0..MaxLengthFieldOffset, an Adjustment whose magnitude
// exceeds MaxLengthAdjustment, or a negative MaxFrameBytes.
func (c LengthField) Validate() error {
	switch c.Size {
	case 0, 1, 2, 4, 8:
	default:
		return errFieldSize
	}
	if c.Offset < 0 || c.Offset > MaxLengthFieldOffset {
		return errFieldOffset
	}
	if c.Adjustment < -MaxLengthAdjustment || c.Adjustment > MaxLengthAdjustment {
		return errFieldAdjustment
	}
	if c.MaxFrameBytes < 0 {
		return errNegativeMax
	}
	return nil
}

// Decode returns the first complete frame in buf (see LengthField for what
// the frame holds) and the bytes it consumed. It needs more input (n == 0,
// err == nil) until the header and then the whole body have arrived. Once
// the header is in, a frame larger than MaxFrameBytes is ErrFrameTooLarge
// and a length that leaves the body negative is ErrMalformed; an invalid
// configuration is ErrInvalidConfig. frame aliases buf (its capacity is
// clipped to its length) and stays valid until buf is modified. Decode
// does not allocate.
func (c LengthField) Decode(buf []byte) (frame []byte, n int, err error) {
	if err := c.Validate(); err != nil {
		return nil, 0, err
	}
	hdr := c.HeaderBytes()
	if len(buf) < hdr {
		return nil, 0, nil
	}
	v := c.value(buf[c.Offset:hdr])
	if v > maxLengthValue {
		return nil, 0, errFieldTooLarge
	}
	// |Adjustment| <= 2^30 and hdr <= 2^16+8, so nothing below overflows.
	body := int64(v) + int64(c.Adjustment)
	if c.IncludesHeader {
		body -= int64(hdr)
	}
	if body < 0 {
		return nil, 0, errFieldNegative
	}
	size, start := body, int64(hdr)
	if c.KeepHeader {
		size, start = body+int64(hdr), 0
	}
	if size > int64(maxFrame(c.MaxFrameBytes)) {
		return nil, 0, errFieldTooLarge
	}
	// size <= MaxFrameBytes, so end fits in an int; comparing against what
	// is left after the header avoids overflow.
	if int64(len(buf)-hdr) < body {
		return nil, 0, nil
	}
	end := hdr + int(body)
	return buf[start:end:end], end, nil
}

// value reads the length field f (len(f) is the field size) in c's byte
// order.
func (c LengthField) value(f []byte) uint64 {
	var v uint64
	if c.LittleEndian {
		for i := len(f) - 1; i >= 0; i-- {
			v = v<<8 | uint64(f[i])
		}
		return v
	}
	for _, b := range f {
		v = v<<8 | uint64(b)
	}
	return v
}

// fieldValue returns the length field's value for a body of bodyBytes:
// ErrMalformed when the adjustment makes it negative, ErrFrameTooLarge
// when it does not fit in the field.
func (c LengthField) fieldValue(bodyBytes int) (uint64, error) {
	v := int64(bodyBytes) - int64(c.Adjustment)
	if c.IncludesHeader {
		v += int64(c.HeaderBytes())
	}
	if v < 0 {
		return 0, errFieldBelowZero
	}
	if s := c.size(); s < 8 && uint64(v) >= 1<<(8*s) {
		return 0, errFieldOverflow
	}
	return uint64(v), nil
}

// appendFrame appends a header (prefix, or zero bytes for a nil prefix,
// then the length field for body) and body.
func (c LengthField) appendFrame(dst, prefix, body []byte) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return dst, err
	}
	v, err := c.fieldValue(len(body))
	if err != nil {
		return dst, err
	}
	if prefix == nil {
		for range c.Offset {
			dst = append(dst, 0)
		}
	} else {
		dst = append(dst, prefix...)
	}
	s := c.size()
	if c.LittleEndian {
		for i := 0; i < s; i++ {
			dst = append(dst, byte(v>>(8*i)))
		}
	} else {
		for i := s - 1; i >= 0; i-- {
			dst = append(dst, byte(v>>(8*i)))
		}
	}
	return append(dst, body...), nil
}

// split returns the prefix (nil for none) and body of a frame as Decode
// returns it: with KeepHeader the frame carries its header, whose first
// Offset bytes are kept and whose length field is recomputed.
func (c LengthField) split(frame []byte) (prefix, body []byte, ok bool) {
	if !c.KeepHeader {
		return nil, frame, true
	}
	hdr := c.HeaderBytes()
	if len(frame) < hdr {
		return nil, nil, false
	}
	return frame[:c.Offset:c.Offset], frame[hdr:], true
}

// AppendEncode appends frame in wire form to dst. Without KeepHeader the
// frame is the body, and the Offset bytes before the length field are
// written as zeros; with KeepHeader the frame is a whole frame as Decode
// returns it, its first Offset bytes are copied and its length field is
// rewritten for the body that follows the header. A frame that cannot be
// encoded (see AppendFrame, which says why) leaves dst unchanged. It does
// not check MaxFrameBytes and allocates only when dst lacks room.
func (c LengthField) AppendEncode(dst, frame []byte) []byte {
	dst, _ = c.AppendFrame(dst, frame)
	return dst
}

// AppendFrame is AppendEncode that reports why a frame cannot be encoded:
// ErrInvalidConfig for an invalid codec, ErrMalformed for a KeepHeader
// frame shorter than the header or a body too short for a positive
// Adjustment (the field's value would be negative), and ErrFrameTooLarge
// for a frame above MaxFrameBytes or a length that does not fit the
// field. On error dst is returned unchanged.
func (c LengthField) AppendFrame(dst, frame []byte) ([]byte, error) {
	if len(frame) > maxFrame(c.MaxFrameBytes) {
		return dst, errFieldTooLarge
	}
	prefix, body, ok := c.split(frame)
	if !ok {
		return dst, errFieldShortFrame
	}
	return c.appendFrame(dst, prefix, body)
}

// AppendReject appends a reject frame: a header whose Offset bytes are
// zero and whose length field frames the reject text (AppendRejectText).
// It implements Rejecter and does not allocate when dst has room. With a
// configuration that cannot frame the text (a 1-byte field with a large
// negative Adjustment, say) it appends nothing, and the engine's refusal
// reaches the client only as the connection's close.
func (c LengthField) AppendReject(dst, _ []byte, reason string, retryAfter time.Duration) []byte {
	var buf [maxRejectTextBytes]byte
	dst, _ = c.appendFrame(dst, nil, AppendRejectText(buf[:0], reason, retryAfter))
	return dst
}
