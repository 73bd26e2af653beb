package protocol

import "bytes"

// DefaultDelim is the delimiter of a Delimited codec whose Delim is zero.
const DefaultDelim = '\n'

// Delimited frames end with Delim (zero value means '\n'); the frame excludes
// the delimiter, and a "\r" before it is kept (lines are bytes, not text).
// MaxFrameBytes 0 means DefaultMaxFrameBytes. Because zero selects '\n', a NUL
// delimiter cannot be expressed. A Delimited is safe for concurrent use.
type Delimited struct {
	Delim         byte
	MaxFrameBytes int
}

func (c Delimited) delim() byte {
	if c.Delim == 0 {
		return DefaultDelim
	}
	return c.Delim
}

// Validate reports ErrInvalidConfig for a negative MaxFrameBytes.
func (c Delimited) Validate() error {
	if c.MaxFrameBytes < 0 {
		return errNegativeMax
	}
	return nil
}

// Decode returns the bytes before the first delimiter and consumes them and
// the delimiter. It looks at no more than MaxFrameBytes+1 bytes: if that many
// bytes hold no delimiter the line can never fit and Decode returns
// ErrFrameTooLarge at once. frame aliases buf (capacity clipped to its
// length) and stays valid until buf is modified.
func (c Delimited) Decode(buf []byte) (frame []byte, n int, err error) {
	if c.MaxFrameBytes < 0 {
		return nil, 0, errNegativeMax
	}
	limit := maxFrame(c.MaxFrameBytes)
	window := buf
	if len(window) > limit {
		window = window[:limit+1]
	}
	i := bytes.IndexByte(window, c.delim())
	if i < 0 {
		if len(buf) > limit {
			return nil, 0, errLineTooLong
		}
		return nil, 0, nil
	}
	return buf[:i:i], i + 1, nil
}

// AppendEncode appends frame and the delimiter to dst. It does not check the
// frame (use AppendFrame for that). It allocates only when dst lacks room.
func (c Delimited) AppendEncode(dst, frame []byte) []byte {
	dst = append(dst, frame...)
	return append(dst, c.delim())
}

// AppendFrame is AppendEncode with checks: it returns dst unchanged with
// ErrFrameTooLarge when frame exceeds MaxFrameBytes and with ErrMalformed when
// frame contains the delimiter (the peer would split it).
func (c Delimited) AppendFrame(dst, frame []byte) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return dst, err
	}
	if len(frame) > maxFrame(c.MaxFrameBytes) {
		return dst, ErrFrameTooLarge
	}
	if bytes.IndexByte(frame, c.delim()) >= 0 {
		return dst, errFrameHasDelim
	}
	return c.AppendEncode(dst, frame), nil
}
