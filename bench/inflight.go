package bench

// request is one outstanding request of a connection: the time it was meant to
// be sent (monotonic nanoseconds since the run's base; latency is measured from
// it) and its payload size.
type request struct {
	intendedNanos int64
	size          int32
}

// inflight is a fixed-capacity FIFO of a connection's outstanding requests,
// oldest first: those owed but not yet written, and those written and not yet
// answered. It never grows and never allocates after newInflight; it is not
// safe for concurrent use (the loop that owns the connection serialises it).
type inflight struct {
	buf        []request
	head, size int
	mask       int
}

// newInflight returns a FIFO holding at least capacity requests (rounded up to
// a power of two, minimum 1).
func newInflight(capacity int) inflight {
	n := 1
	for n < capacity {
		n <<= 1
	}
	return inflight{buf: make([]request, n), mask: n - 1}
}

func (q *inflight) len() int   { return q.size }
func (q *inflight) full() bool { return q.size == len(q.buf) }

// push appends r and reports false when the FIFO is full.
func (q *inflight) push(r request) bool {
	if q.size == len(q.buf) {
		return false
	}
	q.buf[(q.head+q.size)&q.mask] = r
	q.size++
	return true
}

// pop removes and returns the oldest request; ok is false when empty.
func (q *inflight) pop() (r request, ok bool) {
	if q.size == 0 {
		return request{}, false
	}
	r = q.buf[q.head]
	q.head = (q.head + 1) & q.mask
	q.size--
	return r, true
}

// at returns the i-th oldest request (0 = oldest); i must be below len.
func (q *inflight) at(i int) *request { return &q.buf[(q.head+i)&q.mask] }

// reset empties the FIFO.
func (q *inflight) reset() { q.head, q.size = 0, 0 }
