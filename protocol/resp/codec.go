package resp

import "math"

// Default limits used when the corresponding Codec field is zero.
const (
	// DefaultMaxArgs bounds the arguments of one command: 1,048,576, enough
	// for any MSET or DEL a real client sends, while a count beyond it is
	// refused as soon as the array header arrives.
	DefaultMaxArgs = 1 << 20
	// DefaultMaxBulkBytes bounds one bulk string: 64 MiB (redis allows
	// 512 MiB; a sluice server should have to hold far less per connection).
	DefaultMaxBulkBytes = 64 << 20
	// DefaultMaxInlineBytes bounds an inline command line, CRLF excluded:
	// 64 KiB, redis's PROTO_INLINE_MAX_SIZE.
	DefaultMaxInlineBytes = 64 << 10
	// DefaultMaxCommandBytes bounds the wire size of one whole command:
	// 128 MiB. It is the most a connection can make the server buffer
	// before a frame is complete.
	DefaultMaxCommandBytes = 128 << 20
)

// Codec frames RESP2 requests: arrays of bulk strings ("*2\r\n$3\r\nGET\r\n
// $1\r\nk\r\n") and inline commands ("GET k\r\n"), the two forms
// redis-server accepts from clients. A zero limit means the default above;
// a negative one is invalid (Validate, and Decode returns the same error).
// A Codec has no per-connection state and is safe for concurrent use; it
// satisfies protocol.Codec.
type Codec struct {
	// MaxArgs bounds the arguments (array elements) of one command.
	MaxArgs int
	// MaxBulkBytes bounds the payload of one bulk string, in bytes.
	MaxBulkBytes int
	// MaxInlineBytes bounds an inline command line, in bytes, excluding
	// the line ending.
	MaxInlineBytes int
	// MaxCommandBytes bounds the whole wire frame of one command, in bytes.
	MaxCommandBytes int
}

// limits is a Codec with defaults applied.
type limits struct {
	maxArgs, maxBulk, maxInline, maxCmd int
}

// parseLimits lets Parse accept any well-formed frame: the limits were
// Decode's business. maxInline leaves room for the "\r\n" arithmetic.
var parseLimits = limits{
	maxArgs:   math.MaxInt,
	maxBulk:   math.MaxInt,
	maxInline: math.MaxInt - 2,
	maxCmd:    math.MaxInt,
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Validate reports protocol.ErrInvalidConfig when a limit is negative.
func (c Codec) Validate() error {
	if c.MaxArgs < 0 || c.MaxBulkBytes < 0 || c.MaxInlineBytes < 0 || c.MaxCommandBytes < 0 {
		return errNegativeLimit
	}
	return nil
}

func (c Codec) limits() (limits, error) {
	if err := c.Validate(); err != nil {
		return limits{}, err
	}
	return limits{
		maxArgs:   orDefault(c.MaxArgs, DefaultMaxArgs),
		maxBulk:   orDefault(c.MaxBulkBytes, DefaultMaxBulkBytes),
		maxInline: min(orDefault(c.MaxInlineBytes, DefaultMaxInlineBytes), math.MaxInt-2),
		maxCmd:    orDefault(c.MaxCommandBytes, DefaultMaxCommandBytes),
	}, nil
}

// Decode returns the whole wire frame of the first command in buf: an array
// of bulk strings if buf starts with '*', otherwise an inline command
// through its '\n'. With pipelined input it returns one command per call.
// n == 0 && err == nil means more input is needed. A limit is enforced as
// soon as the bytes received prove it is exceeded (a bulk header announcing
// too much data fails before the data arrives). Errors are *ProtocolError
// sentinels wrapping protocol.ErrMalformed or protocol.ErrFrameTooLarge.
//
// An empty command ("*0\r\n", "*-1\r\n", a blank inline line) is a frame
// with no arguments; redis-server ignores it without replying.
//
// frame aliases buf (capacity clipped to its length) and stays valid until
// buf is modified. Decode does not allocate. Each call walks the frame's
// headers from the start, so a command that trickles in costs its header
// count per call; bulk payloads are skipped by length, never scanned.
func (c Codec) Decode(buf []byte) (frame []byte, n int, err error) {
	lim, err := c.limits()
	if err != nil {
		return nil, 0, err
	}
	n, _, err = scan(buf, &lim, nil, false)
	if n == 0 || err != nil {
		return nil, 0, err
	}
	return buf[:n:n], n, nil
}

// DecodeCommand is Decode and Parse in one pass: it appends the arguments of
// the first command in buf to args and returns the extended slice and the
// bytes consumed. On an error or when more input is needed (n == 0) it
// returns args unchanged. Like Parse, it unescapes quoted inline arguments
// in place in buf. It does not allocate when args has room.
func (c Codec) DecodeCommand(buf []byte, args [][]byte) (out [][]byte, n int, err error) {
	lim, err := c.limits()
	if err != nil {
		return args, 0, err
	}
	n, out, err = scan(buf, &lim, args, true)
	if n == 0 || err != nil {
		return args, 0, err
	}
	return out, n, nil
}

// AppendEncode appends frame unchanged: a RESP frame (from Decode, or built
// with the Append functions) is already in wire form. It does not check
// frame.
func (Codec) AppendEncode(dst, frame []byte) []byte {
	return append(dst, frame...)
}

// Parse appends the arguments of the one command in frame to args and
// returns the extended slice. Each argument aliases frame (capacity clipped
// to its length), so Parse does not allocate when args has room. frame must
// hold exactly one command, as Decode returns it: less is
// ErrIncompleteCommand, more is ErrTrailingBytes. Parse applies no size
// limits (Decode did); it checks the syntax again, so it is safe on any
// input. On error it returns args unchanged.
//
// Parse reads frame without changing it, with one exception: an inline
// command with quotes ("SET k \"a b\"", 'x', "\x41") is unquoted in place,
// as redis-server's sdssplitargs would, and the argument then aliases the
// rewritten bytes. The unquoted text is never longer than the quoted one.
// Parse such a frame once.
func Parse(frame []byte, args [][]byte) ([][]byte, error) {
	if len(frame) == 0 {
		return args, ErrIncompleteCommand
	}
	n, out, err := scan(frame, &parseLimits, args, true)
	if err != nil {
		return args, err
	}
	if n == 0 {
		return args, ErrIncompleteCommand
	}
	if n != len(frame) {
		return args, ErrTrailingBytes
	}
	return out, nil
}

// scan walks the command at the start of buf, appending its arguments to
// args when collect is set. n == 0 && err == nil means more input is needed.
func scan(buf []byte, lim *limits, args [][]byte, collect bool) (n int, out [][]byte, err error) {
	if len(buf) == 0 {
		return 0, args, nil
	}
	if buf[0] == '*' {
		return scanArray(buf, lim, args, collect)
	}
	return scanInline(buf, lim, args, collect)
}
