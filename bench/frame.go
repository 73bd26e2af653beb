package bench

import (
	"fmt"
	"sync"
)

// The exported framing methods: what a program that drives a server outside
// Load (a connection flood, an idle-memory probe, a test) uses to speak the
// generator's wire format and to check what comes back. Load itself calls the
// unexported functions they wrap, with a filler sized to its run.

// sharedFiller is MaxMessageBytes of filler, built on first use by the
// exported framing methods.
var sharedFiller = sync.OnceValue(func() []byte { return newFiller(MaxMessageBytes) })

// AppendRequest appends one request of size payload bytes carrying sequence
// number seq (when the payload is large enough to hold it) to dst and returns
// the extended slice. A size outside 1..MaxPayloadBytes appends nothing.
func (c Codec) AppendRequest(dst []byte, seq uint64, size int) []byte {
	if size < 1 || size > c.MaxPayloadBytes() {
		return dst
	}
	return appendRequest(dst, c, seq, size, sharedFiller())
}

// NextResponse finds the first complete response in buf for a framed codec
// (every codec but CodecRaw). It returns the payload, which aliases buf, and
// the bytes it occupies; n is 0 when buf holds no complete response yet. An
// error means the stream cannot be resynchronised (ErrMismatch), or that the
// codec has no frames (ErrInvalidConfig).
func (c Codec) NextResponse(buf []byte) (payload []byte, n int, err error) {
	return nextResponse(c, buf)
}

// CheckResponse reports, as ErrMismatch, a payload that is not the echo of the
// request AppendRequest built from seq and size: a different length, sequence
// number or content. A size outside 1..MaxMessageBytes is ErrInvalidConfig.
func (c Codec) CheckResponse(payload []byte, seq uint64, size int) error {
	if size < 1 || size > MaxMessageBytes {
		return fmt.Errorf("%w: request size %d outside 1-%d", ErrInvalidConfig, size, MaxMessageBytes)
	}
	return checkResponse(c, payload, seq, size, sharedFiller())
}

// RejectReason reports whether a response payload, as NextResponse returns
// it, is a refusal rather than an echo, and its reason: a sluice reject frame
// ("-REJECT reason retry_after_ms"), a RESP -BUSY or sluice error reply, an
// HTTP 429 (reason "tenant") or 503. The reason is one of global, tenant,
// concurrency, queue, codel, cpu, memory, draining, or "other".
func (c Codec) RejectReason(payload []byte) (reason string, ok bool) {
	k, err := responseReject(c, payload)
	if err != nil || k < 0 {
		return "", false
	}
	if k < len(knownReasons) {
		return knownReasons[k], true
	}
	return "other", true
}
