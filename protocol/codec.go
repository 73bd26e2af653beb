package protocol

// DefaultMaxFrameBytes is the frame size limit used when a codec's
// MaxFrameBytes is zero: 1 MiB, large enough for ordinary request bodies and
// small enough that one connection cannot make the server buffer much.
const DefaultMaxFrameBytes = 1 << 20

// Codec splits a byte stream into frames and encodes replies. Codecs are
// values with no per-connection state and are safe for concurrent use.
type Codec interface {
	// Decode returns the first complete frame in buf and the number of bytes
	// it consumed. n == 0 && err == nil: more input needed. err != nil: the
	// input can never become valid (errors.Is with ErrFrameTooLarge /
	// ErrMalformed). frame aliases buf and is valid until buf is modified.
	// Decode never consumes more than len(buf) and never allocates.
	Decode(buf []byte) (frame []byte, n int, err error)
	// AppendEncode appends frame in wire form to dst and returns the extended
	// slice.
	AppendEncode(dst, frame []byte) []byte
}

// LoopCodec is a Codec that keeps working space for each engine loop
// instead of sharing it (through a sync.Pool, say) between goroutines. An
// engine that finds it calls ForLoop once per loop, at start, and decodes
// that loop's connections with the Codec ForLoop returned, only ever on the
// loop's goroutine; that Codec may therefore keep scratch space without
// locks, and is not safe for concurrent use. The LoopCodec itself stays the
// concurrency-safe value the Codec contract describes (refusals answered
// off the loop, by a worker pool, use it). server.Conn.LoopCodec hands a
// handler its loop's Codec, so that the handler can reach the same space.
type LoopCodec interface {
	Codec
	// ForLoop returns the Codec for one loop's goroutine.
	ForLoop() Codec
}

// maxFrame returns the effective limit for a configured MaxFrameBytes.
func maxFrame(configured int) int {
	if configured <= 0 {
		return DefaultMaxFrameBytes
	}
	return configured
}

// Raw treats whatever bytes are available as one frame, for echo-style
// servers where message boundaries do not matter. The read budget of the
// caller bounds the frame size. The zero value is ready to use.
type Raw struct{}

// Decode returns all of buf as one frame; an empty buf needs more input.
func (Raw) Decode(buf []byte) (frame []byte, n int, err error) {
	if len(buf) == 0 {
		return nil, 0, nil
	}
	return buf[:len(buf):len(buf)], len(buf), nil
}

// AppendEncode appends frame unchanged to dst.
func (Raw) AppendEncode(dst, frame []byte) []byte {
	return append(dst, frame...)
}
