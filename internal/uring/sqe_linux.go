//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package uring

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SQE is one submission queue entry, laid out as struct io_uring_sqe. Get
// one from GetSQE or a prep method; it lives in memory shared with the kernel
// and is valid until the next Submit or SubmitAndWait.
type SQE struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	opFlags     uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFdIn  int32
	addr3       uint64
	pad         uint64
}

// SQE flags a caller may add with SetFlags.
const (
	// FlagLink (IOSQE_IO_LINK) starts the next entry only after this one
	// completes successfully.
	FlagLink uint8 = 1 << 2
	// FlagSkipSuccess (IOSQE_CQE_SKIP_SUCCESS) posts no completion when the
	// operation succeeds.
	FlagSkipSuccess uint8 = 1 << 6
)

// SetFlags adds IOSQE_* flags (FlagLink, FlagSkipSuccess) to s.
func (s *SQE) SetFlags(f uint8) { s.flags |= f }

// SetPollFirst makes a recv or send wait for readiness before its first
// attempt (IORING_RECVSEND_POLL_FIRST): cheaper when the socket is
// expected to be empty (a recv armed right after the last bytes were
// taken), since the attempt would only fail with EAGAIN.
func (s *SQE) SetPollFirst() { s.ioprio |= recvPollFirst }

// SetUserData sets the tag the completions of s carry.
func (s *SQE) SetUserData(u UserData) { s.userData = uint64(u) }

// UserData returns the tag s carries.
func (s *SQE) UserData() UserData { return UserData(s.userData) }

func (s *SQE) prep(op uint8, fd int, addr uint64, length uint32, off uint64, u UserData) {
	s.opcode = op
	s.fd = int32(fd)
	s.addr = addr
	s.len = length
	s.off = off
	s.userData = uint64(u)
}

// PrepNop queues a no-op that completes with Res 0.
func (r *Ring) PrepNop(u UserData) (*SQE, error) {
	s, err := r.GetSQE()
	if err != nil {
		return nil, err
	}
	s.prep(opNop, -1, 0, 0, 0, u)
	return s, nil
}

// PrepAcceptMultishot queues a multishot accept on the listening socket fd:
// one completion per accepted connection (Res is its descriptor), with More
// set while the accept stays armed. flags are accept4 flags
// (unix.SOCK_NONBLOCK, unix.SOCK_CLOEXEC). Cancel it (PrepCancel) to stop
// accepting; a completion without More means it must be re-armed.
func (r *Ring) PrepAcceptMultishot(fd int, flags int, u UserData) (*SQE, error) {
	s, err := r.GetSQE()
	if err != nil {
		return nil, err
	}
	s.prep(opAccept, fd, 0, 0, 0, u)
	s.ioprio = acceptMultishot
	s.opFlags = uint32(flags)
	return s, nil
}

// PrepRecvMultishot queues a multishot recv on fd that takes a buffer from
// the provided buffer ring of group for each completion (BufRing.Take
// returns it). More is set while it stays armed; a completion without More
// (end of file with Res 0, an error, or -ENOBUFS when the buffer ring ran
// dry) ends it, and the engine re-arms it after recycling buffers.
func (r *Ring) PrepRecvMultishot(fd int, group uint16, flags int, u UserData) (*SQE, error) {
	s, err := r.PrepRecv(fd, group, flags, u)
	if err != nil {
		return nil, err
	}
	s.ioprio = recvMultishot
	return s, nil
}

// SetMultishotLimit caps a multishot recv (PrepRecvMultishot) at
// totalBytes received in all: the first completion that brings the total
// to the cap or past it ends the recv (no More). The kernel does not
// shorten that last receive, so the total stays below totalBytes plus one
// buffer. The field is the SQE's optlen; a kernel without the cap fails
// the recv at once with -EINVAL (Detect does not probe for it: a caller
// falls back to single recvs on that completion). 0 means no cap.
func (s *SQE) SetMultishotLimit(totalBytes uint32) { s.spliceFdIn = int32(totalBytes) }

// PrepRecv queues one recv on fd into a buffer taken from the provided
// buffer ring of group.
func (r *Ring) PrepRecv(fd int, group uint16, flags int, u UserData) (*SQE, error) {
	s, err := r.GetSQE()
	if err != nil {
		return nil, err
	}
	s.prep(opRecv, fd, 0, 0, 0, u)
	s.flags = sqeBufferSelect
	s.bufIndex = group
	s.opFlags = uint32(flags)
	return s, nil
}

// PrepSend queues a send of b on fd. flags are send flags (unix.MSG_NOSIGNAL;
// without unix.MSG_WAITALL a stream socket may complete short, with Res
// less than len(b): the engine resubmits the rest). b must stay reachable and
// unmodified until the completion arrives.
func (r *Ring) PrepSend(fd int, b []byte, flags int, u UserData) (*SQE, error) {
	s, err := r.GetSQE()
	if err != nil {
		return nil, err
	}
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	r.pins[r.slot(s)] = p
	s.prep(opSend, fd, uint64(uintptr(p)), uint32(len(b)), 0, u)
	s.opFlags = uint32(flags)
	return s, nil
}

// PrepSendmsg queues a sendmsg of the iovecs on fd. The kernel copies the
// message header and iovs when it consumes the entry, so iovs may be reused
// once Submit returns; the bytes they point at must stay reachable and
// unmodified until the completion arrives. (Older kernels read the header
// when the operation starts, which for an entry linked behind another
// (FlagLink) is after Submit returns: do not link a sendmsg there.) A short send (Res below the
// total) leaves the rest to resubmit: ConsumeIovecs trims iovs.
func (r *Ring) PrepSendmsg(fd int, iovs []unix.Iovec, flags int, u UserData) (*SQE, error) {
	s, err := r.GetSQE()
	if err != nil {
		return nil, err
	}
	i := r.slot(s)
	m := &r.msgs[i]
	*m = unix.Msghdr{}
	if len(iovs) > 0 {
		m.Iov = &iovs[0]
		m.SetIovlen(len(iovs))
	}
	s.prep(opSendmsg, fd, uint64(uintptr(unsafe.Pointer(m))), 1, 0, u)
	s.opFlags = uint32(flags)
	return s, nil
}

// PrepCancel queues a cancellation of the in-flight operation tagged target
// (all of them when all is set). Its own completion, tagged u, has Res 0 when
// it found the operation, -ENOENT when none was found and -EALREADY when the
// operation was already running; the cancelled operation completes with
// -ECANCELED (a multishot one without More).
func (r *Ring) PrepCancel(target UserData, all bool, u UserData) (*SQE, error) {
	s, err := r.GetSQE()
	if err != nil {
		return nil, err
	}
	s.prep(opAsyncCancel, -1, uint64(target), 0, 0, u)
	if all {
		s.opFlags = asyncCancelAll
	}
	return s, nil
}

// PrepCancelFD queues a cancellation of every in-flight operation on fd; its
// completion's Res is the count cancelled or -ENOENT.
func (r *Ring) PrepCancelFD(fd int, u UserData) (*SQE, error) {
	s, err := r.GetSQE()
	if err != nil {
		return nil, err
	}
	s.prep(opAsyncCancel, fd, 0, 0, 0, u)
	s.opFlags = asyncCancelFD | asyncCancelAll
	return s, nil
}

// PrepTimeout queues a timer that completes with -ETIME after d, or with
// Res 0 once count other completions have been posted (count 0: a pure
// timer). Cancel it with PrepCancel on its tag (it then completes with
// -ECANCELED).
func (r *Ring) PrepTimeout(d time.Duration, count uint32, u UserData) (*SQE, error) {
	s, err := r.GetSQE()
	if err != nil {
		return nil, err
	}
	ts := &r.ts[r.slot(s)]
	*ts = unix.NsecToTimespec(int64(d))
	s.prep(opTimeout, -1, uint64(uintptr(unsafe.Pointer(ts))), 1, uint64(count), u)
	return s, nil
}

// PrepClose queues a close of fd. The engine cancels the descriptor's
// operations first (PrepCancelFD) if it wants their completions before the
// close's.
func (r *Ring) PrepClose(fd int, u UserData) (*SQE, error) {
	s, err := r.GetSQE()
	if err != nil {
		return nil, err
	}
	s.prep(opClose, fd, 0, 0, 0, u)
	return s, nil
}

// PrepMsgRing queues a message to the ring whose descriptor is ringFd: that
// ring gets a completion with UserData data and Res res, and this ring one
// tagged u. It wakes a loop from another loop without an eventfd; a
// goroutine that owns no ring uses a Waker.
func (r *Ring) PrepMsgRing(ringFd int, res int32, data UserData, u UserData) (*SQE, error) {
	s, err := r.GetSQE()
	if err != nil {
		return nil, err
	}
	s.prep(opMsgRing, ringFd, msgData, uint32(res), uint64(data), u)
	return s, nil
}

// prepRead queues a read of len(b) bytes from fd into b, which the kernel
// writes after submission: b must be heap memory that outlives the
// completion.
func (r *Ring) prepRead(fd int, b []byte, u UserData) (*SQE, error) {
	s, err := r.GetSQE()
	if err != nil {
		return nil, err
	}
	p := unsafe.Pointer(&b[0])
	r.pins[r.slot(s)] = p
	s.prep(opRead, fd, uint64(uintptr(p)), uint32(len(b)), ^uint64(0), u)
	return s, nil
}
