package kv

import (
	"strconv"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/protocol/envelope"
	"github.com/sluicenet/sluice/protocol/resp"
	"github.com/sluicenet/sluice/server"
)

// The engine answers a frame its admission refused through the codec
// (server.Rejecter); the protocol packages leave that to the server, so the
// kv codecs add it.
var (
	_ server.Rejecter = RESPCodec{}
	_ server.Rejecter = EnvelopeCodec{}
)

// RESPCodec is resp.Codec for the engine, with two additions. It answers
// admission refusals in RESP (AppendReject). And it passes a framing error
// through as a frame holding all the buffered input, instead of failing
// Decode (which would make the engine close the connection without a
// word): RESPHandler.OnFrame finds that Parse rejects it, replies redis's
// "-ERR Protocol error: <reason>" and closes the connection, as
// redis-server does. An admitter in front of RESPHandler should therefore
// admit frames resp.Parse rejects (TenantAdmitter does). A RESPCodec has no
// per-connection state and is safe for concurrent use.
type RESPCodec struct{ resp.Codec }

// Decode is resp.Codec.Decode, except that a framing error yields all of
// buf as one frame and no error (see the type's documentation).
func (c RESPCodec) Decode(buf []byte) (frame []byte, n int, err error) {
	frame, n, err = c.Codec.Decode(buf)
	if err != nil {
		return buf[:len(buf):len(buf)], len(buf), nil
	}
	return frame, n, nil
}

// AppendReject appends the RESP error for a frame admission refused:
// "-ERR sluice: too many requests (tenant), retry in 120 ms" when the
// client is over its quota, "-BUSY sluice: server overloaded (codel),
// retry in 100 ms" otherwise. redis-cli shows it as "(error) ...", and the
// connection stays usable. It does not allocate when dst has room.
func (RESPCodec) AppendReject(dst, _ []byte, reason string, retryAfter time.Duration) []byte {
	if rejectStatus(reason) == envelope.StatusTooManyRequests {
		dst = append(dst, "-ERR sluice: too many requests ("...)
	} else {
		dst = append(dst, "-BUSY sluice: server overloaded ("...)
	}
	dst = appendErrText(dst, reason)
	dst = append(dst, ')')
	if ms := retryAfterMillis(retryAfter); ms > 0 {
		dst = append(dst, ", retry in "...)
		dst = strconv.AppendInt(dst, ms, 10)
		dst = append(dst, " ms"...)
	}
	return append(dst, "\r\n"...)
}

// EnvelopeCodec is envelope.Codec for the engine, answering admission
// refusals with envelope rejects (AppendReject). It is safe for concurrent
// use.
type EnvelopeCodec struct{ envelope.Codec }

// AppendReject appends an envelope reject for the refused request: status
// too many requests when the client is over its quota (reason "tenant"),
// unavailable otherwise, with retryAfter as the retry-after field and the
// reason as the payload. A frame whose request id cannot be read is
// answered with request id 0.
func (EnvelopeCodec) AppendReject(dst, frame []byte, reason string, retryAfter time.Duration) []byte {
	id, _ := envelope.PeekRequestID(frame)
	return envelope.AppendReject(dst, id, rejectStatus(reason), retryAfter, reason)
}

// rejectStatus maps an admission reason to the envelope status with its
// HTTP meaning: 429 for a tenant over quota, 503 for everything else.
func rejectStatus(reason string) envelope.Status {
	if r, err := admission.ParseReason(reason); err == nil && r.HTTPStatus() == 429 {
		return envelope.StatusTooManyRequests
	}
	return envelope.StatusUnavailable
}

// retryAfterMillis rounds d up to whole milliseconds (a client told to
// come back never comes back early); 0 for none.
func retryAfterMillis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
