package server

// A loop's connections by fd, and the two intrusive lists the turn serves
// them from: the ready list (budgets spent last turn) and the dirty list
// (output to flush this turn).

// connQueue is an intrusive FIFO of connections, linked through one of
// their next pointers (nextReady or nextDirty).
type connQueue struct {
	head, tail *Conn
	n          int
}

// conn returns the connection on fd, or nil.
func (l *loop) conn(fd int) *Conn {
	if fd < 0 || fd >= len(l.conns) {
		return nil
	}
	return l.conns[fd]
}

func (l *loop) setConn(fd int, c *Conn) {
	if fd >= len(l.conns) {
		n := max(64, 2*len(l.conns), fd+1)
		grown := make([]*Conn, n)
		copy(grown, l.conns)
		l.conns = grown
	}
	l.conns[fd] = c
}

// ready puts c on the ready list for the next turn with flag f.
func (l *loop) ready(c *Conn, f connFlag) {
	c.flags |= f
	if c.flags&fReady != 0 {
		return
	}
	c.flags |= fReady
	q := &l.readyq
	q.n++
	if q.tail == nil {
		q.head = c
	} else {
		q.tail.nextReady = c
	}
	q.tail = c
}

// markDirty puts c on this turn's flush list.
func (l *loop) markDirty(c *Conn) {
	if c.flags&fDirty != 0 {
		return
	}
	c.flags |= fDirty
	q := &l.dirtyq
	if q.tail == nil {
		q.head = c
	} else {
		q.tail.nextDirty = c
	}
	q.tail = c
}
