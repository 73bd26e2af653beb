// Package ioflush writes a queue of output segments to a nonblocking file
// descriptor with budgeted, vectored writes.
//
// ioflush owns the mechanics of one flush: gathering up to MaxIovecs iovecs
// from the head of a ringq.Ring[Segment], calling writev, retrying EINTR,
// advancing a partially written head, releasing fully written segments exactly
// once, and reporting what happened as a Result: Flushed (queue empty: disarm
// EPOLLOUT), WouldBlock (socket buffer full: arm EPOLLOUT) or BudgetSpent
// (budget used up, socket still writable: come back next turn).
//
// ioflush refuses to own policy and the event loop: it never decides how big
// a budget is, never polls, never arms or disarms EPOLLOUT, never closes the
// fd and never counts bytes against connection or global budgets. The caller
// (the server's loop) does all of that with the Result and byte count it is
// given.
//
// Usage, on the loop goroutine that owns the connection:
//
//	var fl ioflush.Flusher // one per loop; zero value ready
//	q := ringq.New[ioflush.Segment](64)
//	q.Push(ioflush.Segment{Buf: reply})
//	n, res, err := fl.Flush(fd, q, 64<<10)
//	switch {
//	case err != nil:
//		ioflush.Drop(q) // release everything, then close the connection
//	case res == ioflush.WouldBlock:
//		// arm EPOLLOUT
//	case res == ioflush.BudgetSpent:
//		// put the connection on the ready list
//	default: // ioflush.Flushed
//		// disarm EPOLLOUT
//	}
//	_ = n // bytes written: charge them back to the byte budgets
//
// Flush needs Linux; on other systems it returns ErrUnsupported.
package ioflush
