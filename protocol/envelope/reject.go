package envelope

import (
	"time"

	"github.com/sluicenet/sluice/protocol"
)

var _ protocol.Rejecter = Codec{}

// AppendReject answers a refused request with an envelope reject
// (protocol.Rejecter): the request's id (0 when frame is too short to hold
// one), the status of protocol.RejectStatus (StatusTooManyRequests for a
// tenant over its quota, StatusConflict for an idempotency key in
// progress or reused with another payload, StatusUnavailable otherwise), retryAfter as the retry-after field and
// the reason as the payload. It does not allocate when dst has room.
func (Codec) AppendReject(dst, frame []byte, reason string, retryAfter time.Duration) []byte {
	id, _ := PeekRequestID(frame)
	return AppendReject(dst, id, RejectStatus(reason), retryAfter, reason)
}

// RejectStatus is the envelope status for a refusal reason: the status
// closest in meaning to protocol.RejectStatus's HTTP code, except that 422
// (an idempotency key reused with another payload) is StatusConflict, whose
// meaning covers both idempotency conflicts.
func RejectStatus(reason string) Status {
	code := protocol.RejectStatus(reason)
	if code == 422 {
		return StatusConflict
	}
	return StatusFromHTTP(code)
}
