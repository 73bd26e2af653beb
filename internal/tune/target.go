package tune

import (
	"fmt"
	"math"
)

// Target is what the operator plans for. The zero value is not valid; start
// from DefaultTarget.
type Target struct {
	// Conns is the number of concurrent connections expected in normal
	// operation.
	Conns int `json:"conns"`
	// MsgBytes is the typical size of one message (request or reply) in
	// bytes, framing included.
	MsgBytes int `json:"msg_bytes"`
	// InflightMsgs is how many messages one connection pipelines before it
	// waits for replies.
	InflightMsgs int `json:"inflight_msgs"`
	// MemShare is the fraction of the host's (or cgroup's) memory sluice may
	// use, in (0, 1].
	MemShare float64 `json:"mem_share"`
	// MemBytes, when > 0, replaces the memory read from the host (to plan
	// for another machine, or when the host's memory is unknown).
	MemBytes int64 `json:"mem_bytes,omitempty"`
	// ConnRatePerSec is the peak rate of new connections; 0 assumes a
	// reconnect storm in which every connection returns within one second.
	ConnRatePerSec float64 `json:"conn_rate_per_sec,omitempty"`
	// MsgRatePerSec is the expected message rate over all connections; 0
	// means unknown (no per-packet checks are made).
	MsgRatePerSec float64 `json:"msg_rate_per_sec,omitempty"`
}

// DefaultTarget is the target cmd/tune starts from before flags.
var DefaultTarget = Target{
	Conns:        10000,
	MsgBytes:     512,
	InflightMsgs: 16,
	MemShare:     0.5,
}

// Hard bounds on a Target, so the arithmetic cannot overflow.
const (
	maxTargetConns    = 1 << 26 // 67M: far beyond any fd limit
	maxTargetMsgBytes = 1 << 30
	maxTargetInflight = 1 << 16
)

// Validate reports a target that cannot be planned for, wrapping
// ErrInvalidTarget.
func (t Target) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidTarget}, args...)...)
	}
	switch {
	case t.Conns <= 0 || t.Conns > maxTargetConns:
		return bad("connections %d: want 1..%d", t.Conns, maxTargetConns)
	case t.MsgBytes <= 0 || t.MsgBytes > maxTargetMsgBytes:
		return bad("message size %d bytes: want 1..%d", t.MsgBytes, maxTargetMsgBytes)
	case t.InflightMsgs <= 0 || t.InflightMsgs > maxTargetInflight:
		return bad("in-flight messages %d: want 1..%d", t.InflightMsgs, maxTargetInflight)
	case !(t.MemShare > 0 && t.MemShare <= 1):
		return bad("memory share %v: want a fraction in (0, 1]", t.MemShare)
	case t.MemBytes < 0:
		return bad("memory %d bytes: want >= 0", t.MemBytes)
	case !(t.ConnRatePerSec >= 0) || math.IsInf(t.ConnRatePerSec, 0):
		return bad("connection rate %v/s: want a finite number >= 0", t.ConnRatePerSec)
	case !(t.MsgRatePerSec >= 0) || math.IsInf(t.MsgRatePerSec, 0):
		return bad("message rate %v/s: want a finite number >= 0", t.MsgRatePerSec)
	}
	return nil
}

// burstBytes is what one connection sends (or is sent) in one pipelined
// burst.
func (t Target) burstBytes() int64 { return int64(t.MsgBytes) * int64(t.InflightMsgs) }
