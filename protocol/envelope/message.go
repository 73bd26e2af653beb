package envelope

import (
	"strconv"
	"strings"
	"time"

	"github.com/sluicenet/sluice/protocol"
)

// Wire constants. Every variable field has a bound, in bytes, that Parse and
// Append enforce; see docs/ENVELOPE.md for the layout.
const (
	// Version is the only envelope version this package reads and writes.
	Version = 1
	// LengthFieldBytes is the size of the leading big-endian length field,
	// which counts the bytes after itself.
	LengthFieldBytes = 4
	// FixedHeaderBytes is the size of the fixed part of every frame, the
	// length field included: the smallest possible frame.
	FixedHeaderBytes = 21
	// MaxMethodBytes bounds the method (operation or route name): enough for
	// "DELETE" or "users.Get", small enough to switch on cheaply.
	MaxMethodBytes = 64
	// MaxTenantBytes bounds the tenant, the key quotas are charged to.
	MaxTenantBytes = 64
	// MaxIdempotencyKeyBytes bounds the idempotency key: room for a UUID (36),
	// a ULID (26) or a hex SHA-256 (64) with a prefix, while keeping the
	// server's key store small.
	MaxIdempotencyKeyBytes = 128
	// MaxReasonBytes bounds the payload of a reject, a human-readable reason.
	MaxReasonBytes = 256
	// MaxRetryAfterMillis bounds retry-after (one hour): a server asking for
	// a longer wait is misconfigured, and a client would rather fail.
	MaxRetryAfterMillis = 60 * 60 * 1000
	// MaxRelativeDeadlineMillis bounds a relative deadline (the 32-bit field,
	// about 49.7 days).
	MaxRelativeDeadlineMillis = 1<<32 - 1
)

// Type says what a message is.
type Type uint8

// The message types. The zero value is invalid on the wire.
const (
	// TypeRequest asks the server to run a method.
	TypeRequest Type = 1
	// TypeResponse carries the handler's outcome, successful or not.
	TypeResponse Type = 2
	// TypeReject says the server refused the request before running its
	// handler (admission, parse error): no effect took place, so when the
	// status is retryable the request may be retried whatever its method.
	TypeReject Type = 3
)

// String returns "request", "response", "reject" or "type(n)".
func (t Type) String() string {
	switch t {
	case TypeRequest:
		return "request"
	case TypeResponse:
		return "response"
	case TypeReject:
		return "reject"
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// Flags is the 16-bit flag field. Bits not defined here are rejected.
type Flags uint16

// The flags, with the message types that may carry them.
const (
	// FlagDeadlineAbsolute (requests): an 8-byte deadline field follows the
	// fixed header, a signed unix time in milliseconds.
	FlagDeadlineAbsolute Flags = 1 << 0
	// FlagDeadlineRelative (requests): a 4-byte deadline field follows the
	// fixed header, milliseconds from the moment the server reads the frame.
	// Exclusive with FlagDeadlineAbsolute.
	FlagDeadlineRelative Flags = 1 << 1
	// FlagIdempotent (requests): the caller declares the call safe to repeat,
	// so clients may hedge it and servers may retry it internally.
	FlagIdempotent Flags = 1 << 2
	// FlagRetryAfter (responses, rejects): a 4-byte retry-after field in
	// milliseconds follows the fixed header (after any deadline).
	FlagRetryAfter Flags = 1 << 3
	// FlagNoRetry (responses, rejects): the server is overloaded and asks the
	// client not to retry at all. Exclusive with FlagRetryAfter.
	FlagNoRetry Flags = 1 << 4
	// FlagReplayed (responses): the outcome was stored under the request's
	// idempotency key and is replayed; the handler did not run again.
	FlagReplayed Flags = 1 << 5

	// knownFlags is every flag this version defines.
	knownFlags = FlagDeadlineAbsolute | FlagDeadlineRelative | FlagIdempotent | FlagRetryAfter | FlagNoRetry | FlagReplayed
	// requestFlags, responseFlags and rejectFlags are the flags each type
	// may carry.
	requestFlags  = FlagDeadlineAbsolute | FlagDeadlineRelative | FlagIdempotent
	responseFlags = FlagRetryAfter | FlagNoRetry | FlagReplayed
	rejectFlags   = FlagRetryAfter | FlagNoRetry
)

var flagNames = [...]string{"deadline-absolute", "deadline-relative", "idempotent", "retry-after", "no-retry", "replayed"}

// String returns the set flags joined by "|" ("idempotent|deadline-relative"),
// "0" for none, with undefined bits in hex.
func (f Flags) String() string {
	if f == 0 {
		return "0"
	}
	var b strings.Builder
	for i, name := range flagNames {
		if f&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(name)
		}
	}
	if rest := f &^ knownFlags; rest != 0 {
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		b.WriteString("0x" + strconv.FormatUint(uint64(rest), 16))
	}
	return b.String()
}

// Priority is a request's class for shedding: under overload the server
// refuses lower classes first. Compare with Importance, not numerically.
type Priority uint8

// The priority classes. The zero value is PriorityNormal.
const (
	// PriorityNormal is interactive traffic; the default.
	PriorityNormal Priority = 0
	// PriorityCritical is shed last (health checks, control traffic, the
	// requests that let the system recover).
	PriorityCritical Priority = 1
	// PriorityLow is batch work; shed before normal traffic.
	PriorityLow Priority = 2
	// PriorityBackground is work nobody waits for (prefetch, cache warming);
	// shed first.
	PriorityBackground Priority = 3
)

// Importance orders priorities for shedding: 0 (background, shed first) to
// 3 (critical, shed last); an undefined priority is -1.
func (p Priority) Importance() int {
	switch p {
	case PriorityBackground:
		return 0
	case PriorityLow:
		return 1
	case PriorityNormal:
		return 2
	case PriorityCritical:
		return 3
	}
	return -1
}

// String returns "normal", "critical", "low", "background" or "priority(n)".
func (p Priority) String() string {
	switch p {
	case PriorityNormal:
		return "normal"
	case PriorityCritical:
		return "critical"
	case PriorityLow:
		return "low"
	case PriorityBackground:
		return "background"
	}
	return "priority(" + strconv.Itoa(int(p)) + ")"
}

// Message is one envelope, parsed or to be written. Its byte-slice fields
// alias the frame it was parsed from and stay valid until that frame's
// buffer is modified. Fields a type may not carry must be zero (see
// Validate). The zero value is not a valid message: set Type.
type Message struct {
	Type      Type
	Flags     Flags
	RequestID uint64 // chosen by the client; a response or reject echoes it
	Status    Status // StatusOK on requests; a failure status on rejects
	Priority  Priority
	// DeadlineMillis is a unix time in milliseconds with FlagDeadlineAbsolute,
	// milliseconds from arrival with FlagDeadlineRelative, else 0.
	DeadlineMillis int64
	// RetryAfterMillis is the server's retry hint with FlagRetryAfter, else 0.
	RetryAfterMillis uint32
	Method           []byte // requests only; at most MaxMethodBytes
	Tenant           []byte // requests only; at most MaxTenantBytes
	IdempotencyKey   []byte // requests only; at most MaxIdempotencyKeyBytes
	Payload          []byte // the body; on a reject, the reason (MaxReasonBytes)
}

// Reset zeroes m, dropping its references to any frame.
func (m *Message) Reset() { *m = Message{} }

// SetDeadline sets an absolute deadline at t, truncated to the millisecond.
// A zero t clears the deadline.
func (m *Message) SetDeadline(t time.Time) {
	m.Flags &^= FlagDeadlineAbsolute | FlagDeadlineRelative
	m.DeadlineMillis = 0
	if t.IsZero() {
		return
	}
	m.Flags |= FlagDeadlineAbsolute
	m.DeadlineMillis = t.UnixMilli()
}

// SetTimeout sets a relative deadline d after the server reads the request,
// truncated to the millisecond (so the server gives up no later than the
// caller) and clamped to 0..MaxRelativeDeadlineMillis.
func (m *Message) SetTimeout(d time.Duration) {
	m.Flags &^= FlagDeadlineAbsolute
	m.Flags |= FlagDeadlineRelative
	ms := d.Milliseconds()
	m.DeadlineMillis = min(max(ms, 0), MaxRelativeDeadlineMillis)
}

// Deadline returns the request's absolute deadline, resolving a relative one
// against now (the moment the frame was read), and false without one.
func (m *Message) Deadline(now time.Time) (time.Time, bool) {
	switch {
	case m.Flags&FlagDeadlineAbsolute != 0:
		return time.UnixMilli(m.DeadlineMillis), true
	case m.Flags&FlagDeadlineRelative != 0:
		return now.Add(time.Duration(m.DeadlineMillis) * time.Millisecond), true
	}
	return time.Time{}, false
}

// SetRetryAfter sets the retry hint to d rounded up to the millisecond (so
// a client never comes back early) and clamped to MaxRetryAfterMillis. A
// non-positive d clears the hint.
func (m *Message) SetRetryAfter(d time.Duration) {
	m.RetryAfterMillis = retryAfterMillis(d)
	if d <= 0 {
		m.Flags &^= FlagRetryAfter
		return
	}
	m.Flags |= FlagRetryAfter
}

func retryAfterMillis(d time.Duration) uint32 {
	return uint32(min(protocol.RetryAfterMillis(d), MaxRetryAfterMillis))
}

// RetryAfter returns the server's retry hint, and false without one.
func (m *Message) RetryAfter() (time.Duration, bool) {
	if m.Flags&FlagRetryAfter == 0 {
		return 0, false
	}
	return time.Duration(m.RetryAfterMillis) * time.Millisecond, true
}
