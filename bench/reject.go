package bench

import (
	"bytes"
	"time"
)

// rejectPrefix starts a reject frame of sluice's framed codecs
// ("-REJECT reason retry_after_ms"; server.AppendRejectText). The generator
// keeps its own copy rather than import the server it measures. An echo of
// a generator request never starts with it: payloads are a sequence number
// and 'x' filler.
const rejectPrefix = "-REJECT "

// knownReasons are the refusal reasons counted by name; others count as
// "other".
var knownReasons = [...]string{"global", "tenant", "concurrency", "queue", "codel", "cpu", "memory", "draining", "fair", "goaway"}

// goAwayKind is the index of "goaway", the final refusal after which the
// server closes the connection (server.ErrGoAway).
const goAwayKind = 9

// rejectRetryAfter returns the retry-after of a reject frame of sluice's
// framed codecs ("-REJECT reason retry_after_ms"), in nanoseconds, or 0
// when payload carries none. It does not allocate.
func rejectRetryAfter(payload []byte) int64 {
	if !bytes.HasPrefix(payload, []byte(rejectPrefix)) {
		return 0
	}
	rest := payload[len(rejectPrefix):]
	i := bytes.IndexByte(rest, ' ')
	if i < 0 {
		return 0
	}
	var ms int64
	for _, b := range rest[i+1:] {
		if b < '0' || b > '9' || ms > 1<<40 {
			return 0
		}
		ms = ms*10 + int64(b-'0')
	}
	return ms * int64(time.Millisecond)
}

// numRejectKinds is knownReasons plus "other".
const numRejectKinds = len(knownReasons) + 1

// rejectCounts counts reject frames by reason.
type rejectCounts [numRejectKinds]int64

// rejectReason returns the index of a reject frame's reason in
// rejectCounts, or -1 when payload is not a reject frame. It does not
// allocate.
func rejectReason(payload []byte) int {
	if !bytes.HasPrefix(payload, []byte(rejectPrefix)) {
		return -1
	}
	rest := payload[len(rejectPrefix):]
	if i := bytes.IndexByte(rest, ' '); i >= 0 {
		rest = rest[:i]
	}
	return reasonIndex(rest)
}

// reasonIndex returns the index of reason in rejectCounts: its place in
// knownReasons, or the last ("other"). It does not allocate.
func reasonIndex(reason []byte) int {
	for k, r := range knownReasons {
		if string(reason) == r {
			return k
		}
	}
	return len(knownReasons)
}

// asMap returns the non-zero counts by reason name.
func (c *rejectCounts) asMap() map[string]int64 {
	m := map[string]int64{}
	for i, v := range c {
		if v == 0 {
			continue
		}
		name := "other"
		if i < len(knownReasons) {
			name = knownReasons[i]
		}
		m[name] += v
	}
	return m
}
