package ioflush

import (
	"os"
	"unsafe"

	"github.com/sluicenet/sluice/ringq"
	"golang.org/x/sys/unix"
)

// scratch is the iovec array handed to writev; len MaxIovecs once allocated.
type scratch struct {
	iov []unix.Iovec
}

// writev is the syscall seam; tests replace it to script short writes,
// EAGAIN, EINTR and EPIPE. It returns the byte count or a non-zero errno.
var writev = rawWritev

// rawWritev calls writev(2) through RawSyscall. The fd is nonblocking, so the
// call cannot block, and skipping the scheduler's entersyscall/exitsyscall
// saves measurable time per call on the target machines (see
// shared/PERF-NOTES.md: a trivial syscall costs about 1.3 µs there). The
// amount copied per call is bounded by the socket's send buffer.
//
// One iovec goes out with write(2) instead: the kernel then skips importing
// an iovec array and copies from a single user buffer, about 150 ns less
// per call on these machines (BenchmarkWritev/1x1024).
func rawWritev(fd int, iov []unix.Iovec) (int, unix.Errno) {
	if len(iov) == 0 {
		return 0, 0
	}
	trap, arg1, arg2 := uintptr(unix.SYS_WRITEV), uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov))
	if len(iov) == 1 {
		trap, arg1, arg2 = unix.SYS_WRITE, uintptr(unsafe.Pointer(iov[0].Base)), uintptr(iov[0].Len)
	}
	r, _, errno := unix.RawSyscall(trap, uintptr(fd), arg1, arg2)
	if errno != 0 {
		return 0, errno
	}
	return int(r), 0
}

// writevRetry calls writev until it is not interrupted by a signal. This is
// the one place EINTR is handled.
func writevRetry(fd int, iov []unix.Iovec) (int, unix.Errno) {
	for {
		n, errno := writev(fd, iov)
		if errno != unix.EINTR {
			return n, errno
		}
	}
}

// Flush writes from the head of q with writev, at most budgetBytes bytes
// (budgetBytes <= 0 means no limit), releasing and popping fully written
// segments and advancing a partially written head. It returns the bytes
// written by this call and what the caller should do next. A nil q is an
// empty queue.
//
// Each writev is given up to MaxIovecs iovecs and at most the remaining
// budget; a segment larger than the budget is written in budget-sized pieces
// across calls. Flush issues one writev, and another only when the previous
// one took everything it was given while data and budget remain (more than
// MaxIovecs segments queued).
//
// A short write (fewer bytes accepted than offered) is reported as WouldBlock
// without a second writev: on a stream socket the kernel stops short only
// when the send buffer is full, so the second call would just return EAGAIN
// and cost a syscall. Arming EPOLLOUT is correct either way: the buffer
// drains, and the kernel raises a new EPOLLOUT edge when it does.
//
// EINTR is retried. EAGAIN is WouldBlock, not an error. Any other errno
// (EPIPE, ECONNRESET, EBADF, ...) is returned wrapped by
// os.NewSyscallError("writev", errno), so errors.Is(err, unix.EPIPE) holds;
// bytes counted in n before the error were written, and the caller should
// Drop q and close the connection. When err is non-nil res is Flushed and
// means nothing.
//
// Release (Pooled buffers, Free) runs on the caller's goroutine inside Flush;
// a Free function must not touch q.
func (f *Flusher) Flush(fd int, q *ringq.Ring[Segment], budgetBytes int) (n int, res Result, err error) {
	if q == nil {
		return 0, Flushed, nil
	}
	for {
		if q.Empty() {
			return n, Flushed, nil
		}
		limit := maxRWBytes
		if budgetBytes > 0 {
			if budgetBytes-n <= 0 {
				return n, BudgetSpent, nil
			}
			limit = min(limit, budgetBytes-n)
		}
		iov, offered := f.gather(q, limit)
		if offered == 0 { // only empty segments: nothing to write, just release them
			Consume(q, 0)
			continue
		}
		w, errno := writevRetry(fd, iov)
		clear(iov) // drop the references so written buffers can be collected
		switch {
		case errno == unix.EAGAIN:
			return n, WouldBlock, nil
		case errno != 0:
			return n, Flushed, os.NewSyscallError("writev", errno)
		case w < 0 || w > offered:
			return n, Flushed, ErrInvalidWrite
		}
		Consume(q, w)
		n += w
		if w < offered { // send buffer full; see the doc comment
			return n, WouldBlock, nil
		}
	}
}

// gather fills the scratch with iovecs for the head of q, at most MaxIovecs
// and at most limit bytes in total, and returns them with their byte count.
// Empty segments take no iovec.
func (f *Flusher) gather(q *ringq.Ring[Segment], limit int) ([]unix.Iovec, int) {
	if f.scratch.iov == nil {
		f.scratch.iov = make([]unix.Iovec, MaxIovecs) // once per Flusher
	}
	return Gather(q, limit, f.scratch.iov)
}

// Gather fills iov with iovecs for the head of q, at most len(iov) of them
// and at most limit bytes in total (the last one cut to fit), and returns
// them with their byte count; empty segments take no iovec. It is the
// gathering half of Flush, for a caller that writes another way (an
// io_uring sendmsg) and then calls Consume with what was written.
func Gather(q *ringq.Ring[Segment], limit int, iov []unix.Iovec) ([]unix.Iovec, int) {
	cnt, total := 0, 0
	for i := 0; cnt < len(iov) && total < limit; i++ {
		s := q.At(i)
		if s == nil {
			break
		}
		b := s.Buf
		if len(b) == 0 {
			continue
		}
		if len(b) > limit-total {
			b = b[:limit-total]
		}
		iov[cnt].Base = &b[0]
		iov[cnt].SetLen(len(b))
		cnt++
		total += len(b)
	}
	return iov[:cnt], total
}
