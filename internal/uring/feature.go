package uring

import (
	"math/bits"
	"strings"
)

// Feature is a set of io_uring capabilities, as Detect found them. The zero
// value is the empty set.
type Feature uint64

// The capabilities Detect reports. Setup flags first (optional: a ring works
// without them, only slower), then kernel features, then opcodes, then the
// modes an engine is built on.
const (
	// FeatSingleIssuer: IORING_SETUP_SINGLE_ISSUER (6.0) is accepted.
	FeatSingleIssuer Feature = 1 << iota
	// FeatDeferTaskrun: IORING_SETUP_DEFER_TASKRUN (6.1) is accepted.
	FeatDeferTaskrun
	// FeatCoopTaskrun: IORING_SETUP_COOP_TASKRUN (5.19) is accepted.
	FeatCoopTaskrun
	// FeatSingleMmap: IORING_FEAT_SINGLE_MMAP (5.4), one mapping for both rings.
	FeatSingleMmap
	// FeatNoDrop: IORING_FEAT_NODROP (5.5), completions are never dropped on overflow.
	FeatNoDrop
	// FeatExtArg: IORING_FEAT_EXT_ARG (5.11), a wait takes a timeout.
	FeatExtArg
	// FeatOpAccept: IORING_OP_ACCEPT.
	FeatOpAccept
	// FeatOpRecv: IORING_OP_RECV.
	FeatOpRecv
	// FeatOpSend: IORING_OP_SEND.
	FeatOpSend
	// FeatOpSendmsg: IORING_OP_SENDMSG.
	FeatOpSendmsg
	// FeatOpAsyncCancel: IORING_OP_ASYNC_CANCEL.
	FeatOpAsyncCancel
	// FeatOpTimeout: IORING_OP_TIMEOUT.
	FeatOpTimeout
	// FeatOpRead: IORING_OP_READ (the eventfd wake-up).
	FeatOpRead
	// FeatOpClose: IORING_OP_CLOSE.
	FeatOpClose
	// FeatOpMsgRing: IORING_OP_MSG_RING (5.18), ring-to-ring wake-ups.
	FeatOpMsgRing
	// FeatMultishotAccept: IORING_ACCEPT_MULTISHOT (5.19).
	FeatMultishotAccept
	// FeatMultishotRecv: IORING_RECV_MULTISHOT (6.0).
	FeatMultishotRecv
	// FeatBufRing: IORING_REGISTER_PBUF_RING (5.19), provided buffer rings.
	FeatBufRing
)

// Required is what an engine built on this package needs; without any of it
// Detect returns a *MissingError. The setup flags are optional (Config.Flags
// from Features.SetupFlags uses what exists), and so is MSG_RING: the wake-up
// is an eventfd read.
const Required = FeatNoDrop | FeatExtArg | FeatOpAccept | FeatOpRecv | FeatOpSend |
	FeatOpSendmsg | FeatOpAsyncCancel | FeatOpTimeout | FeatOpRead | FeatOpClose |
	FeatMultishotAccept | FeatMultishotRecv | FeatBufRing

var featureNames = [...]string{
	"SETUP_SINGLE_ISSUER", "SETUP_DEFER_TASKRUN", "SETUP_COOP_TASKRUN",
	"FEAT_SINGLE_MMAP", "FEAT_NODROP", "FEAT_EXT_ARG",
	"OP_ACCEPT", "OP_RECV", "OP_SEND", "OP_SENDMSG", "OP_ASYNC_CANCEL",
	"OP_TIMEOUT", "OP_READ", "OP_CLOSE", "OP_MSG_RING",
	"ACCEPT_MULTISHOT", "RECV_MULTISHOT", "REGISTER_PBUF_RING",
}

// Has reports whether f holds every capability in g.
func (f Feature) Has(g Feature) bool { return f&g == g }

// String lists the capabilities in f, separated by "|", or "none".
func (f Feature) String() string {
	if f == 0 {
		return "none"
	}
	var b strings.Builder
	for f != 0 {
		i := bits.TrailingZeros64(uint64(f))
		f &^= 1 << i
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		if i < len(featureNames) {
			b.WriteString(featureNames[i])
		} else {
			b.WriteString("?")
		}
	}
	return b.String()
}
