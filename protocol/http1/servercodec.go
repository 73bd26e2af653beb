package http1

import (
	"time"

	"github.com/sluicenet/sluice/protocol"
)

var (
	_ protocol.Rejecter  = ServerCodec{}
	_ protocol.Codec     = ServerCodec{}
	_ protocol.LoopCodec = ServerCodec{}
)

// ServerCodec is Codec for a server engine, paired with Server, with three
// differences.
//
// Decode parses each request strictly (DecodeRequest: Codec's limits,
// errors and rules) and leaves the parse for Server, so that each request
// is scanned once: Server.Serve or Server.Respond of the frame Decode just
// returned, on the same goroutine, takes the parsed Request instead of
// parsing the frame again. The parse waits in scratch space pooled per P
// (sync.Pool) that Server also uses, and Server takes it at most once, only
// for a frame at the same address, of the same length, with a head byte
// for byte equal to the one parsed, and with equal Codec fields; otherwise
// (a frame served on another goroutine or changed since, a head over
// 16 KiB, other limits) Server parses the frame itself. Either way Server
// answers from the strict parse of the frame it is given. On an engine
// loop the pool is not needed: the engine decodes with the codec ForLoop
// returned for that loop (protocol.LoopCodec), which keeps the space for
// itself, and Serve finds it through the connection (server.Conn.LoopCodec).
//
// Decode passes a framing error through as a frame holding all the
// buffered input instead of failing (which would make the engine close the
// connection without a word): Server parses it again, gets the same error,
// answers with its status (400, 411, 413, 414, 417, 431, 505) and closes
// the connection. An admitter in front of Server should therefore admit
// frames that do not parse.
//
// AppendReject answers admission refusals (protocol.Rejecter) with
// Codec.AppendRejectDated: 429 for a tenant over its quota, 503 for
// overload, with Retry-After, and a Date from Clock.
//
// The zero value uses Codec's default limits and time.Now. A ServerCodec
// has no per-connection state and is safe for concurrent use.
type ServerCodec struct {
	// Codec holds the limits (MaxHeaderBytes, MaxHeaderCount,
	// MaxBodyBytes); zero means the defaults.
	Codec
	// Clock is the wall clock of the Date field, read once per read batch
	// (see Server); nil means time.Now. It must be safe for concurrent use.
	Clock func() time.Time

	// loop is the scratch space of the codec ForLoop returned: one loop's
	// alone, so Decode and Server use it without the pool. nil: pooled.
	loop *scratch
}

// ForLoop returns c with scratch space of its own for one engine loop
// (protocol.LoopCodec): the engine decodes that loop's connections with
// it, and Server.Serve, called on the loop with a connection that hands
// out its loop's codec (server.Conn.LoopCodec), takes the parse from that
// space instead of from the pool, which spares both of them a pool
// round trip per request. The codec returned must be used by one
// goroutine only.
func (c ServerCodec) ForLoop() protocol.Codec {
	c.loop = newScratch()
	return c
}

// loopScratch returns the scratch space of a codec ForLoop returned, or
// nil.
func (c ServerCodec) loopScratch() *scratch { return c.loop }

// Decode returns the first request in buf (see the type's documentation):
// n == 0 && err == nil means more input is needed; a framing error yields
// all of buf as one frame and no error. frame aliases buf, capacity clipped.
// Decode does not allocate (once the scratch space has grown to the
// largest head seen).
func (c ServerCodec) Decode(buf []byte) (frame []byte, n int, err error) {
	if lim, err := c.limits(); err != nil {
		n = len(buf) // passed through: Server reports the error
	} else {
		sc := c.loop
		if sc == nil {
			sc = getScratch()
		}
		n, err = parseInto(buf, &lim, &sc.req)
		switch {
		case err != nil:
			sc.forget()
			sc.req.Reset()
			n = len(buf)
		case n > 0:
			sc.remember(buf[:n], c.Codec, sc.req.ContentLength)
		default:
			sc.forget()
		}
		if c.loop == nil {
			putScratch(sc)
		}
	}
	if n == 0 {
		return nil, 0, nil
	}
	return buf[:n:n], n, nil
}

// AppendReject appends the response to a request admission refused
// (protocol.Rejecter): Codec.AppendRejectDated with a Date from Clock, read
// once per read batch like Server's. It does not allocate when dst has
// room.
func (c ServerCodec) AppendReject(dst, frame []byte, reason string, retryAfter time.Duration) []byte {
	s := getScratch()
	defer putScratch(s)
	now := s.clock(frame, c.Clock)
	return c.AppendRejectDated(dst, frame, reason, retryAfter, s.dates.Value(now))
}
