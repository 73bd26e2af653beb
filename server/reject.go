package server

import (
	"strconv"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/protocol/envelope"
	"github.com/sluicenet/sluice/protocol/http1"
	"github.com/sluicenet/sluice/protocol/resp"
)

// RejectPrefix starts the reject frame of the length-prefixed and line
// codecs (see AppendRejectText). A client tells a reject from an echo or a
// reply by this prefix; a protocol whose payloads may start with it should
// use the envelope, which has a reject type of its own.
const RejectPrefix = "-REJECT "

// AppendRejectText appends the text of a reject frame for the framed codecs
// without a reject type of their own (length-prefixed, line):
//
//	-REJECT <reason> <retry_after_ms>
//
// reason is one word ("tenant", "codel", ...; see admission.Reason) and
// retry_after_ms is a decimal count of milliseconds, rounded up, 0 for no
// hint. For example "-REJECT tenant 120". The codec frames it like any
// payload: a 4-byte length header before it, or a '\n' after it. It does not
// allocate when dst has room.
func AppendRejectText(dst []byte, reason string, retryAfter time.Duration) []byte {
	dst = append(dst, RejectPrefix...)
	dst = append(dst, reason...)
	dst = append(dst, ' ')
	return strconv.AppendInt(dst, retryAfterMillis(retryAfter), 10)
}

// ParseRejectText is the inverse of AppendRejectText for a decoded payload:
// it reports whether payload is a reject frame and returns its fields.
func ParseRejectText(payload []byte) (reason string, retryAfter time.Duration, ok bool) {
	if len(payload) < len(RejectPrefix) || string(payload[:len(RejectPrefix)]) != RejectPrefix {
		return "", 0, false
	}
	rest := payload[len(RejectPrefix):]
	sp := -1
	for i, b := range rest {
		if b == ' ' {
			sp = i
			break
		}
	}
	if sp <= 0 {
		return "", 0, false
	}
	ms, err := strconv.ParseInt(string(rest[sp+1:]), 10, 64)
	if err != nil || ms < 0 {
		return "", 0, false
	}
	return string(rest[:sp]), time.Duration(ms) * time.Millisecond, true
}

// retryAfterMillis rounds d up to whole milliseconds (a client told to come
// back should never come back early); 0 for no hint.
func retryAfterMillis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// RejecterFor returns how the engine answers a refused frame for codec: the
// codec itself when it implements Rejecter, else a built-in answer for the
// codecs of package protocol and its subpackages:
//
//   - protocol.LengthPrefixed and protocol.Delimited: a reject frame
//     (AppendRejectText), framed by the codec;
//   - envelope.Codec: an envelope reject with the request's id, status
//     TooManyRequests for reason "tenant" and Unavailable otherwise, the
//     retry-after field, and the reason as its text;
//   - resp.Codec: "-ERR sluice: too many requests (tenant), retry in N ms"
//     for a tenant over quota, "-BUSY sluice: server overloaded (REASON),
//     retry in N ms" otherwise;
//   - http1.Codec: 429 Too Many Requests for reason "tenant", 503 Service
//     Unavailable otherwise, with Retry-After in whole seconds (rounded
//     up), keeping the connection open.
//
// It returns nil for protocol.Raw and unknown codecs: those connections are
// closed with ErrRejected instead, because a raw byte stream has no place
// for a reply that is not data.
func RejecterFor(codec protocol.Codec) Rejecter {
	switch c := codec.(type) {
	case Rejecter:
		return c
	case protocol.LengthPrefixed:
		return framedRejecter{c}
	case protocol.Delimited:
		return framedRejecter{c}
	case envelope.Codec:
		return envelopeRejecter{}
	case resp.Codec:
		return respRejecter{}
	case http1.Codec:
		return httpRejecter{}
	}
	return nil
}

// tooMany reports whether reason is the client's own fault (its quota),
// which protocols with a status answer as "too many requests" (429) rather
// than "unavailable" (503).
func tooMany(reason string) bool {
	return reason == admission.ReasonTenant.String()
}

// framedRejecter frames AppendRejectText with its codec.
type framedRejecter struct{ codec protocol.Codec }

func (r framedRejecter) AppendReject(dst, _ []byte, reason string, retryAfter time.Duration) []byte {
	var buf [64]byte
	text := AppendRejectText(buf[:0], reason, retryAfter)
	// concrete calls, so that text stays on the stack (through the
	// interface it escaped: one allocation per reject)
	switch c := r.codec.(type) {
	case protocol.LengthPrefixed:
		return c.AppendEncode(dst, text)
	case protocol.Delimited:
		return c.AppendEncode(dst, text)
	}
	return r.codec.AppendEncode(dst, append([]byte(nil), text...)) // not built by RejecterFor
}

type envelopeRejecter struct{}

func (envelopeRejecter) AppendReject(dst, frame []byte, reason string, retryAfter time.Duration) []byte {
	id, _ := envelope.PeekRequestID(frame)
	status := envelope.StatusUnavailable
	if tooMany(reason) {
		status = envelope.StatusTooManyRequests
	}
	return envelope.AppendReject(dst, id, status, retryAfter, reason)
}

type respRejecter struct{}

func (respRejecter) AppendReject(dst, _ []byte, reason string, retryAfter time.Duration) []byte {
	if tooMany(reason) {
		dst = append(dst, "-ERR sluice: too many requests ("...)
	} else {
		dst = append(dst, "-BUSY sluice: server overloaded ("...)
	}
	for i := 0; i < len(reason); i++ { // an error line holds no CR or LF
		if b := reason[i]; b != '\r' && b != '\n' {
			dst = append(dst, b)
		}
	}
	dst = append(dst, ')')
	if ms := retryAfterMillis(retryAfter); ms > 0 {
		dst = append(dst, ", retry in "...)
		dst = strconv.AppendInt(dst, ms, 10)
		dst = append(dst, " ms"...)
	}
	return append(dst, "\r\n"...)
}

type httpRejecter struct{}

func (httpRejecter) AppendReject(dst, _ []byte, reason string, retryAfter time.Duration) []byte {
	status := 503
	if tooMany(reason) {
		status = 429
	}
	return http1.AppendRetryAfter(dst, status, retryAfter, true, nil)
}
