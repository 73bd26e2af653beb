package httpecho

import (
	"time"

	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/protocol/http1"
)

var (
	_ protocol.Rejecter  = Codec{}
	_ protocol.Codec     = Codec{}
	_ protocol.LoopCodec = Codec{}
)

// Codec is the echo server's http1.ServerCodec (the strict parse, left for
// the handler's http1.Server so each request is scanned once, framing
// errors passed through to the handler, refusals answered with 429 or 503
// and Retry-After), with one difference: a zero MaxBodyBytes means
// DefaultMaxBodyBytes, not http1's 1 MiB.
//
// The zero value uses http1's other default limits and time.Now. A Codec
// has no per-connection state and is safe for concurrent use.
type Codec struct{ http1.ServerCodec }

// DefaultMaxBodyBytes is the request body limit when Codec.MaxBodyBytes is
// zero: 64 KiB, smaller than http1's 1 MiB default because the echo route
// queues the body again as its response, and a response must fit the
// engine's per-connection out-queue (server.DefaultOutQueueBytes, 256 KiB;
// reading pauses at half of it). With a smaller -out-queue-bytes, lower
// MaxBodyBytes to match: an echo that does not fit closes the connection
// with server.ErrQueueFull.
const DefaultMaxBodyBytes = 64 << 10

// Server returns the http1.ServerCodec c stands for, DefaultMaxBodyBytes
// applied.
func (c Codec) Server() http1.ServerCodec {
	s := c.ServerCodec
	if s.MaxBodyBytes == 0 {
		s.MaxBodyBytes = DefaultMaxBodyBytes
	}
	return s
}

// ForLoop is http1.ServerCodec.ForLoop of c.Server() (protocol.LoopCodec):
// the loop decodes with http1's codec for one loop, which keeps scratch
// space of its own that the handler's http1.Server shares there instead of
// a pool's.
func (c Codec) ForLoop() protocol.Codec { return c.Server().ForLoop() }

// Decode is http1.ServerCodec.Decode with c's limits.
func (c Codec) Decode(buf []byte) (frame []byte, n int, err error) {
	return c.Server().Decode(buf)
}

// AppendReject is http1.ServerCodec.AppendReject with c's limits and
// clock (protocol.Rejecter).
func (c Codec) AppendReject(dst, frame []byte, reason string, retryAfter time.Duration) []byte {
	return c.Server().AppendReject(dst, frame, reason, retryAfter)
}
