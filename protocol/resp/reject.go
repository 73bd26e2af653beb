package resp

import (
	"strconv"
	"time"

	"github.com/sluicenet/sluice/protocol"
)

var _ protocol.Rejecter = Codec{}

// AppendReject answers a refused command with a RESP error
// (protocol.Rejecter): "-ERR sluice: too many requests (tenant), retry in
// 120 ms" when the client's tenant is over its quota (status 429 in
// protocol.RejectStatus), "-BUSY sluice: server overloaded (codel), retry
// in 100 ms" for every other reason; without a retry-after the ", retry in"
// part is left out. redis-cli shows it as "(error) ...", and the
// connection stays usable. CR and LF in reason become spaces. It does not
// allocate when dst has room.
func (Codec) AppendReject(dst, _ []byte, reason string, retryAfter time.Duration) []byte {
	if protocol.RejectStatus(reason) == 429 {
		dst = append(dst, "-ERR sluice: too many requests ("...)
	} else {
		dst = append(dst, "-BUSY sluice: server overloaded ("...)
	}
	dst = appendLine(dst, reason)
	dst = append(dst, ')')
	if ms := protocol.RetryAfterMillis(retryAfter); ms > 0 {
		dst = append(dst, ", retry in "...)
		dst = strconv.AppendInt(dst, ms, 10)
		dst = append(dst, " ms"...)
	}
	return append(dst, crlf...)
}
