package protocol

import (
	"strconv"
	"time"
)

// Rejecter is implemented by codecs that can answer a refused frame in
// their protocol: a reject frame, a RESP error, an HTTP 429. The engine
// finds a codec's Rejecter with a type assertion; a codec without one
// (Raw, whose byte stream has no place for a reply that is not data) has
// the connection of a refused frame closed instead, so a refusal is never
// silent.
type Rejecter interface {
	// AppendReject appends to dst the answer to frame, refused for reason
	// (one word: "tenant", "codel", ...; see RejectStatus) with a
	// retry-after hint (0: none). frame is the refused frame as Decode
	// returned it, or nil for a connection refused before it sent one.
	// It must not retain frame and should not allocate when dst has room.
	AppendReject(dst, frame []byte, reason string, retryAfter time.Duration) []byte
}

// Refusal reasons every codec maps (see RejectStatus). The admission
// reasons ("tenant", "codel", "queue", ...) are admission.Reason names;
// these are the ones that are not, plus the one reason that is the
// client's own fault.
const (
	// ReasonTenant: the client's tenant is over its quota.
	ReasonTenant = "tenant"
	// ReasonFair: the server is overloaded and the client's tenant has
	// had more than its share of it.
	ReasonFair = "fair"
	// ReasonGoAway: the client's connection kept sending while refused;
	// this refusal is its last, the server closes it (admission.ReasonGoAway).
	ReasonGoAway = "goaway"
	// ReasonInProgress: the request's idempotency key is claimed by a
	// request still running.
	ReasonInProgress = "in_progress"
	// ReasonMismatch: the idempotency key was reused with another payload.
	ReasonMismatch = "mismatch"
)

// RejectStatus is the one mapping from a refusal reason to the status a
// protocol with statuses reports, as an HTTP status code: 429 Too Many
// Requests for ReasonTenant, ReasonFair and ReasonGoAway (the client
// exceeded its own quota, or its share of an overloaded server), 409 Conflict for
// ReasonInProgress, 422 Unprocessable Content for ReasonMismatch (the
// statuses of the IETF Idempotency-Key draft), and 503 Service Unavailable
// for every other reason (the server is overloaded or draining).
func RejectStatus(reason string) int {
	switch reason {
	case ReasonTenant, ReasonFair, ReasonGoAway:
		return 429
	case ReasonInProgress:
		return 409
	case ReasonMismatch:
		return 422
	}
	return 503
}

// RetryAfterMillis is the one rounding of a retry-after hint: d rounded up
// to whole milliseconds (a client told to come back never comes back
// early), 0 for no hint (d <= 0). Protocols with coarser units round this
// up again (HTTP's whole seconds: (ms+999)/1000).
func RetryAfterMillis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// RejectPrefix starts the reject frame of the length-prefixed and line
// codecs (see AppendRejectText). A client tells a reject from an echo or a
// reply by this prefix; a protocol whose payloads may start with it should
// use the envelope, which has a reject type of its own.
const RejectPrefix = "-REJECT "

// maxRejectTextBytes is room for a reject text on the stack: the prefix, a
// reason word and a 20-digit retry-after. A longer reason spills to the
// heap (no built-in reason comes close).
const maxRejectTextBytes = 64

// AppendRejectText appends the text of a reject frame for the framings
// without a reject type of their own (length-prefixed, line):
//
//	-REJECT <reason> <retry_after_ms>
//
// reason is one word ("tenant", "codel", ...) and retry_after_ms is
// RetryAfterMillis(retryAfter) in decimal, 0 for no hint. For example
// "-REJECT tenant 120". The codec frames it like any payload: a length
// header before it, or a '\n' after it. It does not allocate when dst has
// room.
func AppendRejectText(dst []byte, reason string, retryAfter time.Duration) []byte {
	dst = append(dst, RejectPrefix...)
	dst = append(dst, reason...)
	dst = append(dst, ' ')
	return strconv.AppendInt(dst, RetryAfterMillis(retryAfter), 10)
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

// AppendReject appends a reject frame (AppendRejectText) with c's header.
// It implements Rejecter and does not allocate when dst has room.
func (c LengthPrefixed) AppendReject(dst, _ []byte, reason string, retryAfter time.Duration) []byte {
	var buf [maxRejectTextBytes]byte
	return c.AppendEncode(dst, AppendRejectText(buf[:0], reason, retryAfter))
}

// AppendReject appends a reject line (AppendRejectText and the delimiter).
// It implements Rejecter and does not allocate when dst has room.
func (c Delimited) AppendReject(dst, _ []byte, reason string, retryAfter time.Duration) []byte {
	return c.AppendEncode(AppendRejectText(dst, reason, retryAfter), nil)
}
