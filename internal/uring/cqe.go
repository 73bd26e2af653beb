package uring

import "syscall"

// CQE is one completion, laid out as struct io_uring_cqe. PeekBatch copies
// completions into CQE values, so a CQE stays valid after Advance.
type CQE struct {
	// UserData is the tag of the submission this completes.
	UserData UserData
	// Res is the operation's result: a byte count or descriptor, or a
	// negated errno.
	Res int32
	// Flags holds IORING_CQE_F_* bits; read them through the methods.
	Flags uint32
}

// More reports whether the multishot submission that produced c stays armed
// (IORING_CQE_F_MORE). When it is false the operation has terminated (by
// error, -ENOBUFS, cancellation or end of file) and must be re-armed if the
// engine still wants it.
func (c CQE) More() bool { return c.Flags&(1<<1) != 0 }

// HasBuffer reports whether c carries a provided buffer (IORING_CQE_F_BUFFER);
// BufRing.Take returns it.
func (c CQE) HasBuffer() bool { return c.Flags&(1<<0) != 0 }

// BufferID returns the provided buffer's id; meaningful when HasBuffer.
func (c CQE) BufferID() uint16 { return uint16(c.Flags >> 16) }

// SockNonEmpty reports whether a recv left more data in the socket
// (IORING_CQE_F_SOCK_NONEMPTY).
func (c CQE) SockNonEmpty() bool { return c.Flags&(1<<2) != 0 }

// Err returns the errno of a failed operation (Res < 0) as a syscall.Errno,
// or nil. It does not allocate.
func (c CQE) Err() error {
	if c.Res >= 0 {
		return nil
	}
	return syscall.Errno(-c.Res)
}
