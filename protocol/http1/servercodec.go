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
}

// ForLoop returns c for one engine loop (protocol.LoopCodec): a codec
// with scratch space of its own and its limits computed once. The engine
// decodes that loop's connections with it, and Server.Serve, called on the
// loop with a connection that hands out its loop's codec
// (server.Conn.LoopCodec), takes the parse from that space instead of
// from the pool, which spares both of them a pool round trip per request.
// The codec returned must be used by one goroutine only.
func (c ServerCodec) ForLoop() protocol.Codec {
	lc := &loopServerCodec{c: c, sc: newScratch()}
	lc.lim, lc.limErr = c.limits()
	return lc
}

// loopServerCodec is the codec ServerCodec.ForLoop returns: a pointer, so
// that calls through the engine's Codec interface do not copy the
// ServerCodec.
type loopServerCodec struct {
	c      ServerCodec
	sc     *scratch
	lim    limits
	limErr error
}

var _ protocol.Rejecter = (*loopServerCodec)(nil)

// Decode is ServerCodec.Decode with the loop's scratch space.
func (l *loopServerCodec) Decode(buf []byte) (frame []byte, n int, err error) {
	if l.limErr != nil {
		return passThrough(buf)
	}
	return l.c.decode(buf, &l.lim, l.sc)
}

// AppendEncode is ServerCodec.AppendEncode.
func (l *loopServerCodec) AppendEncode(dst, frame []byte) []byte { return l.c.AppendEncode(dst, frame) }

// AppendReject is ServerCodec.AppendReject.
func (l *loopServerCodec) AppendReject(dst, frame []byte, reason string, retryAfter time.Duration) []byte {
	return l.c.AppendReject(dst, frame, reason, retryAfter)
}

// Decode returns the first request in buf (see the type's documentation):
// n == 0 && err == nil means more input is needed; a framing error yields
// all of buf as one frame and no error. frame aliases buf, capacity clipped.
// Decode does not allocate (once the scratch space has grown to the
// largest head seen).
func (c ServerCodec) Decode(buf []byte) (frame []byte, n int, err error) {
	lim, err := c.limits()
	if err != nil {
		return passThrough(buf) // Server reports the error
	}
	sc := getScratch()
	defer putScratch(sc)
	return c.decode(buf, &lim, sc)
}

// decode is Decode with limits lim, leaving the parse in sc.
func (c *ServerCodec) decode(buf []byte, lim *limits, sc *scratch) (frame []byte, n int, err error) {
	n, err = parseInto(buf, lim, &sc.req)
	switch {
	case err != nil:
		sc.forget()
		sc.req.Reset()
		return passThrough(buf)
	case n > 0:
		sc.remember(buf[:n], c.Codec, sc.req.ContentLength)
		return buf[:n:n], n, nil
	}
	sc.forget()
	return nil, 0, nil
}

// passThrough returns all of buf as one frame (none if it is empty): a
// framing error Server answers.
func passThrough(buf []byte) (frame []byte, n int, err error) {
	if len(buf) == 0 {
		return nil, 0, nil
	}
	return buf[:len(buf):len(buf)], len(buf), nil
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
