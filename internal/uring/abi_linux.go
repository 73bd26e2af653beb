//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package uring

import "unsafe"

// The io_uring ABI, from include/uapi/linux/io_uring.h. Only what this
// package uses; names follow the header with the IORING_ prefix dropped.

const (
	setupSingleIssuer = 1 << 12
	setupDeferTaskrun = 1 << 13
	setupCoopTaskrun  = 1 << 8
	setupTaskrunFlag  = 1 << 9
	setupCQSize       = 1 << 3
	setupClamp        = 1 << 4

	featSingleMmap = 1 << 0
	featNoDrop     = 1 << 1
	featExtArg     = 1 << 8

	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	enterGetEvents = 1 << 0
	enterExtArg    = 1 << 3

	sqNeedWakeup = 1 << 0
	sqCQOverflow = 1 << 1
	sqTaskrun    = 1 << 2

	registerProbe         = 8
	registerEventfd       = 4
	cqEventfdDisabled     = 1 << 0 // IORING_CQ_EVENTFD_DISABLED, in the CQ ring's flags
	registerPbufRing      = 22
	unregisterPbufRing    = 23
	probeOpSupported      = 1 << 0
	probeOps              = 256
	sqeBufferSelect       = 1 << 5
	recvPollFirst         = 1 << 0 // IORING_RECVSEND_POLL_FIRST
	recvMultishot         = 1 << 1
	acceptMultishot       = 1 << 0
	asyncCancelAll        = 1 << 0
	asyncCancelFD         = 1 << 1
	asyncCancelAny        = 1 << 2
	msgData               = 0
	maxBufRingEntries     = 1 << 15
	cqeBufferShift        = 16
	cqeFlagBuffer         = 1 << 0
	cqeFlagMore           = 1 << 1
	cqeFlagSockNonEmpty   = 1 << 2
	bufRingTailOffset     = 14
	bufRingTailWordOffset = 12
)

// Opcodes (enum io_uring_op).
const (
	opNop         = 0
	opSendmsg     = 9
	opTimeout     = 11
	opAccept      = 13
	opAsyncCancel = 14
	opClose       = 19
	opRead        = 22
	opSend        = 26
	opRecv        = 27
	opMsgRing     = 40
)

type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

type getEventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	minWait   uint32
	ts        uint64
}

type probeOp struct {
	op    uint8
	resv  uint8
	flags uint16
	resv2 uint32
}

type probe struct {
	lastOp uint8
	opsLen uint8
	resv   uint16
	resv2  [3]uint32
	ops    [probeOps]probeOp
}

type bufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	flags       uint16
	resv        [3]uint64
}

// bufRingEntry is struct io_uring_buf.
type bufRingEntry struct {
	addr uint64
	len  uint32
	bid  uint16
	resv uint16
}

// Compile-time checks of the layouts the kernel reads.
var (
	_ [64 - unsafe.Sizeof(SQE{})]struct{}
	_ [unsafe.Sizeof(SQE{}) - 64]struct{}
	_ [16 - unsafe.Sizeof(CQE{})]struct{}
	_ [unsafe.Sizeof(CQE{}) - 16]struct{}
	_ [120 - unsafe.Sizeof(params{})]struct{}
	_ [unsafe.Sizeof(params{}) - 120]struct{}
	_ [16 - unsafe.Sizeof(bufRingEntry{})]struct{}
	_ [40 - unsafe.Sizeof(bufReg{})]struct{}
	_ [24 - unsafe.Sizeof(getEventsArg{})]struct{}
	_ [16 + 8*probeOps - unsafe.Sizeof(probe{})]struct{}
)
