package http1

import "time"

// TimeFormat is the IMF-fixdate layout of the Date header (RFC 9110
// section 5.6.7), as in net/http.
const TimeFormat = "Mon, 02 Jan 2006 15:04:05 GMT"

// DateCache keeps the Date header value for the current second, so a server
// formats the date once per second, not once per response, and never reads
// the clock itself: the event loop passes the time it read once per turn.
// The zero value is ready to use. A DateCache is not safe for concurrent
// use; keep one per event loop.
type DateCache struct {
	sec int64
	n   int
	buf [len(TimeFormat) + 8]byte // room for five-digit years
}

// Value returns the Date value for now ("Sun, 06 Nov 1994 08:49:37 GMT"),
// formatting it only when now's second differs from the previous call's.
// The slice aliases the cache: it is valid until a later call with another
// second, so append it to the response at once. Value does not allocate.
func (d *DateCache) Value(now time.Time) []byte {
	sec := now.Unix()
	if d.n == 0 || sec != d.sec {
		b := now.UTC().AppendFormat(d.buf[:0], TimeFormat)
		d.n = copy(d.buf[:], b)
		d.sec = sec
	}
	return d.buf[:d.n:d.n]
}
