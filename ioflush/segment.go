package ioflush

import (
	"strconv"

	"github.com/sluicenet/sluice/ringq"
	"github.com/valyala/bytebufferpool"
)

// MaxIovecs is the most iovecs one writev call is given: IOV_MAX on Linux.
// The kernel refuses more with EINVAL, so a longer queue is written in
// batches of at most this many segments.
const MaxIovecs = 1024

// Segment is one queued chunk of output.
//
// Buf holds the bytes not yet written; Flush advances it past what the kernel
// accepted. Pooled, if non-nil, is the bytebufferpool buffer that Buf is a
// suffix of; it goes back to the pool on Release. Free, if non-nil, is called
// once on Release, for zero-copy ownership of Buf. The zero Segment is empty
// and owns nothing.
//
// The queue's owner may append to the tail segment between flushes when
// Pooled is non-nil, as long as Buf stays a suffix of Pooled.B; Flush reads
// Buf afresh on every call.
type Segment struct {
	Buf    []byte                     // bytes not yet written; Flush advances it
	Pooled *bytebufferpool.ByteBuffer // if non-nil, put back to bytebufferpool on Release
	Free   func()                     // if non-nil, called once on Release (zero-copy ownership)
}

// Release returns Pooled to bytebufferpool, calls Free, and zeroes s. s is
// zeroed first, so a second call does nothing, even one made from Free.
func (s *Segment) Release() {
	pooled, free := s.Pooled, s.Free
	*s = Segment{}
	if pooled != nil {
		bytebufferpool.Put(pooled)
	}
	if free != nil {
		free()
	}
}

// Result says what the caller should do after a Flush that returned no error.
type Result uint8

const (
	// Flushed means the queue is empty: disarm EPOLLOUT.
	Flushed Result = iota
	// WouldBlock means the socket's send buffer is full and data is left:
	// arm EPOLLOUT and wait for it.
	WouldBlock
	// BudgetSpent means the byte budget is used up, data is left and the
	// socket was still writable: flush again on the next turn.
	BudgetSpent
)

// String returns "flushed", "would-block", "budget-spent" or "Result(N)".
func (r Result) String() string {
	switch r {
	case Flushed:
		return "flushed"
	case WouldBlock:
		return "would-block"
	case BudgetSpent:
		return "budget-spent"
	}
	return "Result(" + strconv.Itoa(int(r)) + ")"
}

// Drop releases every segment in q, each exactly once, and empties q. Call it
// when the connection is closed. A nil q is ignored.
func Drop(q *ringq.Ring[Segment]) {
	if q == nil {
		return
	}
	for s := q.At(0); s != nil; s = q.At(0) {
		s.Release()
		q.Pop()
	}
}

// Consume marks written bytes of q as done, as Flush does after a write:
// segments wholly covered by written (and empty segments at the head) are
// released and popped, and the first segment that is only partly covered
// has its Buf advanced. For a caller that wrote the head of q itself.
func Consume(q *ringq.Ring[Segment], written int) {
	for s := q.At(0); s != nil; s = q.At(0) {
		if len(s.Buf) > written {
			s.Buf = s.Buf[written:]
			return
		}
		written -= len(s.Buf)
		s.Release()
		q.Pop()
	}
}
