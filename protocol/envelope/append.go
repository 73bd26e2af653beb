package envelope

import (
	"encoding/binary"
	"math"
	"slices"
	"time"
)

// Append validates m and appends it in wire form to dst. On error it
// returns dst unchanged: ErrFrameTooLarge when m does not fit the 32-bit
// length field, otherwise what Validate reports. It allocates only when dst
// lacks room, and then once.
func (m *Message) Append(dst []byte) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return dst, err
	}
	size := m.Size()
	if uint64(size-LengthFieldBytes) > math.MaxUint32 {
		return dst, errBodyTooLarge
	}
	return appendValid(dst, m, size), nil
}

// AppendMessage appends m in wire form to dst, like m.Append, for callers
// that build messages they know to be valid. An invalid m is not written:
// dst is returned unchanged, so check with Validate (or use Append) whenever
// m comes from outside.
func AppendMessage(dst []byte, m *Message) []byte {
	dst, _ = m.Append(dst)
	return dst
}

// appendValid writes a validated message of size bytes.
func appendValid(dst []byte, m *Message, size int) []byte {
	return append(appendHead(dst, m, size), m.Payload...)
}

// appendHead writes everything but the payload of a validated message whose
// whole frame is size bytes, growing dst once for all of it.
func appendHead(dst []byte, m *Message, size int) []byte {
	dst = slices.Grow(dst, size)
	dst = binary.BigEndian.AppendUint32(dst, uint32(size-LengthFieldBytes))
	dst = append(dst, Version, byte(m.Type))
	dst = binary.BigEndian.AppendUint16(dst, uint16(m.Flags))
	dst = binary.BigEndian.AppendUint64(dst, m.RequestID)
	dst = append(dst, byte(m.Status), byte(m.Priority), byte(len(m.Method)), byte(len(m.Tenant)), byte(len(m.IdempotencyKey)))
	if m.Flags&FlagDeadlineAbsolute != 0 {
		dst = binary.BigEndian.AppendUint64(dst, uint64(m.DeadlineMillis))
	}
	if m.Flags&FlagDeadlineRelative != 0 {
		dst = binary.BigEndian.AppendUint32(dst, uint32(m.DeadlineMillis))
	}
	if m.Flags&FlagRetryAfter != 0 {
		dst = binary.BigEndian.AppendUint32(dst, m.RetryAfterMillis)
	}
	dst = append(dst, m.Method...)
	dst = append(dst, m.Tenant...)
	return append(dst, m.IdempotencyKey...)
}

// AppendReject appends a reject for requestID to dst: the server refused
// the request before running its handler. A retryAfter above zero becomes
// the retry-after field (rounded up to the millisecond, clamped to
// MaxRetryAfterMillis); zero or less sends no hint. The reason is truncated
// to MaxReasonBytes, at a UTF-8 character boundary. A status that is
// StatusOK or undefined is sent as StatusInternal, because a reject always
// reports a failure. AppendReject allocates only when dst lacks room.
func AppendReject(dst []byte, requestID uint64, status Status, retryAfter time.Duration, reason string) []byte {
	if status == StatusOK || status > maxStatus {
		status = StatusInternal
	}
	reason = truncateUTF8(reason, MaxReasonBytes)
	m := Message{Type: TypeReject, RequestID: requestID, Status: status}
	m.SetRetryAfter(retryAfter)
	// The reason goes in as a string, so it is never converted to []byte.
	dst = appendHead(dst, &m, m.Size()+len(reason))
	return append(dst, reason...)
}

// AppendResponse appends a response to requestID with status and payload.
// An undefined status is sent as StatusInternal. The payload must fit the
// receiving codec's MaxFrameBytes (it is not checked here). It allocates
// only when dst lacks room.
func AppendResponse(dst []byte, requestID uint64, status Status, payload []byte) []byte {
	if status > maxStatus {
		status = StatusInternal
	}
	m := Message{Type: TypeResponse, RequestID: requestID, Status: status, Payload: payload}
	return appendValid(dst, &m, m.Size())
}

// truncateUTF8 cuts s to at most n bytes without splitting a UTF-8
// sequence (invalid bytes are cut as single bytes).
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	// Back up over continuation bytes (10xxxxxx), at most 3, to the start
	// of the character that crosses the limit.
	for j := 0; j < 3 && i > 0 && s[i]&0xC0 == 0x80; j++ {
		i--
	}
	return s[:i]
}
