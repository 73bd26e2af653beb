//go:build linux

package bench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The generator's event loop. Each worker owns a set of connections, one epoll
// set, one events array, one read buffer and one latency histogram, and runs
// on its own locked OS thread; nothing it touches per message is shared, so
// the send and receive path takes no lock and makes no allocation.
//
// A turn: read the clock; issue the open-loop sends that are due; wait for
// events (a non-blocking epoll_wait first, a blocking one with a nanosecond
// timeout only when nothing is ready); per event, read (errors and end of
// stream surface there), then write if the socket became writable with output
// pending. Sockets are registered once with EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET.
//
// Reads: one read into the loop's buffer, after the connection's unparsed tail.
// A read that fills less than the space it was given drained the socket at
// that moment; data arriving later raises a new edge, so the loop does not
// spend a second read to see EAGAIN.

const (
	// readBufferBytes is the loop's read buffer (plus one frame of tail).
	readBufferBytes = 256 << 10
	// maxOutBatchBytes caps the bytes encoded for one write on one connection.
	maxOutBatchBytes = 64 << 10
	// maxEventsPerWait is the events array of a loop.
	maxEventsPerWait = 512
	// housekeepingNanos is how often a loop checks response timeouts and
	// publishes its progress counters.
	housekeepingNanos = int64(100 * time.Millisecond)
	// spinNanos: when the next open-loop send is due sooner than this, the
	// loop polls again without blocking rather than sleep, since a sleep and a
	// wake-up take longer than that. It is kept small so that the generator's
	// CPU time stays a measure of its work, not of spinning: above that, sends
	// that come due while the loop sleeps are issued together when it wakes,
	// late by the wake-up latency, which the send lag reports and the latency
	// includes.
	spinNanos = int64(10 * time.Microsecond)
)

// conn is one generator connection, owned by one worker.
type conn struct {
	fd int
	// q holds the outstanding requests, oldest first: written and awaiting a
	// response, then encoded but not fully written, then the newest owed ones
	// (wanted but not yet encoded).
	q    inflight
	owed int
	// out[outOff:] is encoded and not yet written.
	out    []byte
	outOff int
	// tail is the unparsed start of the next response (framed codecs).
	tail    []byte
	raw     rawAccount
	seqSent uint64
	seqRecv uint64
	dead    bool
	dirty   bool
	idx     int32 // its place in the worker's conns, its epoll data
	// redialAt is when a connection closed by a final refusal is dialled
	// again (LoadConfig.Reconnect); 0: never
	redialAt int64
}

func (c *conn) written() int { return c.q.len() - c.owed }

// worker is one generator event loop.
type worker struct {
	id     int
	codec  Codec
	size   SizeSpec
	closed bool // closed loop
	// inFlight is the closed loop's requests per connection.
	inFlight int

	epfd   int
	events []unix.EpollEvent
	conns  []*conn
	rbuf   []byte
	filler []byte
	dirty  []*conn
	rng    uint64

	base                          time.Time
	startNanos, warmEnd, endNanos int64
	sched                         OpenSchedule
	rr                            int
	lateTolNanos, respTimeout     int64

	// tally is what the loop counts and times.
	tally

	// Published for the progress line (whole run, warm-up included).
	progMsgs, progErrs, progP99 atomic.Int64
	progressP99                 bool

	// redial dials connections closed by a final refusal again
	// (LoadConfig.Reconnect); nil: never. nextRedial is the earliest
	// redialAt of its connections (0: none).
	redial     *redialer
	nextRedial int64

	// stop, when set, ends the run early.
	stop *atomic.Bool
	// windowStart and windowEnd are called by worker 0 as its clock crosses
	// the start and end of the measured window.
	windowStart, windowEnd func()
	noPwait2               bool
}

// now returns monotonic nanoseconds since the run's base.
func (w *worker) now() int64 { return int64(time.Since(w.base)) }

// nextSize returns the payload size of the next request.
func (w *worker) nextSize() int32 { return w.size.draw(&w.rng) }

// run is the loop; it returns when the window has ended or stop is set.
func (w *worker) run() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Timer slack defaults to 50 µs; open-loop sends would be late by that much.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)

	now := w.now()
	if w.closed {
		for _, c := range w.conns {
			for i := 0; i < w.inFlight; i++ {
				c.q.push(request{intendedNanos: now, size: w.nextSize()})
				c.owed++
			}
			w.flush(c)
		}
	}
	inWindow := false
	nextHouse := now + housekeepingNanos
	nextP99 := now + int64(time.Second)
	for !w.stop.Load() {
		now = w.now()
		if !inWindow && now >= w.warmEnd {
			inWindow = true
			if w.windowStart != nil {
				w.windowStart()
			}
		}
		if now >= w.endNanos {
			if !w.closed {
				// Sends intended before the end that came due while the loop
				// waited: issue them (late) rather than call them missed.
				w.issueDue(now)
				w.flushDirty()
			}
			break
		}
		if !w.closed {
			w.issueDue(now)
			w.flushDirty()
		}
		if w.nextRedial != 0 && now >= w.nextRedial {
			w.redialDue(now)
		}
		deadline := min(w.endNanos, nextHouse)
		if w.nextRedial != 0 {
			deadline = min(deadline, w.nextRedial)
		}
		if !inWindow {
			deadline = min(deadline, w.warmEnd)
		}
		if !w.closed {
			deadline = min(deadline, w.sched.Next())
		}
		n := w.wait(deadline - w.now())
		for i := 0; i < n; i++ {
			ev := &w.events[i]
			c := w.conns[ev.Fd]
			if c.dead {
				continue
			}
			if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				w.readConn(c)
			}
			if !c.dead && ev.Events&unix.EPOLLOUT != 0 && (c.outOff < len(c.out) || c.owed > 0) {
				w.flush(c)
			}
		}
		if now = w.now(); now >= nextHouse {
			nextHouse = now + housekeepingNanos
			w.housekeeping(now)
			if w.progressP99 && now >= nextP99 {
				nextP99 = now + int64(time.Second)
				w.progP99.Store(w.hist.ValueAtQuantile(99))
			}
		}
	}
	if w.windowEnd != nil {
		w.windowEnd()
	}
	if !w.closed {
		w.untakenMissed(&w.sched, w.now(), w.warmEnd, w.endNanos)
	}
	w.housekeeping(w.now())
}

// closeConns closes every connection and the epoll set, and returns the
// requests that were written and not answered.
func (w *worker) closeConns() (unfinished int64) {
	for _, c := range w.conns {
		if c.dead {
			continue
		}
		unfinished += int64(c.written())
		_ = unix.Close(c.fd)
		c.dead = true
	}
	_ = unix.Close(w.epfd)
	return unfinished
}

// issueDue takes the open-loop sends due at now and hands them round-robin to
// the connections: a send goes into its connection's queue with its intended
// time, or, when the connection is dead or at its in-flight cap, counts as
// missed. Sends issued more than the tolerance after their intended time
// count as late; their latency still runs from the intended time.
func (w *worker) issueDue(now int64) {
	first, n := w.sched.Take(now)
	for k := first; k < first+n; k++ {
		t := w.sched.Intended(k)
		c := w.conns[w.rr]
		w.rr++
		if w.rr == len(w.conns) {
			w.rr = 0
		}
		counted := w.sendIssued(t, now, w.warmEnd, w.endNanos, w.lateTolNanos)
		if c.dead || c.q.full() {
			if counted {
				w.missed++
			}
			continue
		}
		c.q.push(request{intendedNanos: t, size: w.nextSize()})
		c.owed++
		if !c.dirty {
			c.dirty = true
			w.dirty = append(w.dirty, c)
		}
	}
}

// flushDirty writes every connection issueDue gave work to.
func (w *worker) flushDirty() {
	for i, c := range w.dirty {
		c.dirty = false
		if !c.dead {
			w.flush(c)
		}
		w.dirty[i] = nil
	}
	w.dirty = w.dirty[:0]
}

// flush writes the pending output of c, encoding owed requests as the
// previous batch completes, until everything is written or the socket would
// block (the EPOLLOUT edge brings the loop back).
func (w *worker) flush(c *conn) {
	for {
		for c.outOff < len(c.out) {
			n, errno := rawWrite(c.fd, c.out[c.outOff:])
			switch {
			case errno == unix.EINTR:
				continue
			case errno == unix.EAGAIN:
				return
			case errno != 0:
				w.fail(c, os.NewSyscallError("write", errno))
				return
			}
			c.outOff += n
		}
		c.out, c.outOff = c.out[:0], 0
		if c.owed == 0 {
			return
		}
		for i := c.q.len() - c.owed; i < c.q.len(); i++ {
			r := c.q.at(i)
			wire := w.codec.WireBytes(int(r.size))
			if len(c.out) > 0 && len(c.out)+wire > cap(c.out) {
				break
			}
			c.out = appendRequest(c.out, w.codec, c.seqSent, int(r.size), w.filler)
			c.seqSent++
			c.owed--
		}
	}
}

// readConn reads what c has and completes the requests it answers.
func (w *worker) readConn(c *conn) {
	for {
		off := copy(w.rbuf, c.tail)
		space := w.rbuf[off:]
		n, errno := rawRead(c.fd, space)
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN:
			return
		case errno != 0:
			w.fail(c, os.NewSyscallError("read", errno))
			return
		case n == 0:
			w.fail(c, errPeerClosed)
			return
		}
		now := w.now()
		if w.codec == CodecRaw {
			w.consumeRaw(c, n, now)
		} else {
			w.consumeFramed(c, w.rbuf[:off+n], now)
		}
		if c.dead {
			return
		}
		if c.owed > 0 {
			w.flush(c)
			if c.dead {
				return
			}
		}
		if n < len(space) {
			return
		}
	}
}

// consumeRaw checks and accounts n echoed bytes (raw requests are all filler).
func (w *worker) consumeRaw(c *conn, n int, now int64) {
	for data := w.rbuf[:n]; len(data) > 0; {
		k := min(len(data), len(w.filler))
		if !bytes.Equal(data[:k], w.filler[:k]) {
			w.fail(c, fmt.Errorf("%w: echoed bytes differ from the request's", ErrMismatch))
			return
		}
		data = data[k:]
	}
	k, err := c.raw.take(n, &c.q)
	if err == nil && k > c.written() {
		err = fmt.Errorf("%w: echo of requests not yet sent", ErrMismatch)
	}
	if err != nil {
		w.fail(c, err)
		return
	}
	for i := 0; i < k; i++ {
		r, _ := c.q.pop()
		w.complete(c, r, now)
	}
}

// consumeFramed matches every complete response in data to its request and
// keeps the incomplete rest as the connection's tail.
func (w *worker) consumeFramed(c *conn, data []byte, now int64) {
	p := 0
	for {
		payload, n, err := nextResponse(w.codec, data[p:])
		if err != nil {
			w.fail(c, err)
			return
		}
		if n == 0 {
			break
		}
		k, err := responseReject(w.codec, payload)
		if err != nil {
			w.fail(c, err)
			return
		}
		if k == goAwayKind { // answers what c still holds, sent or not
			w.goAway(c, now, rejectRetryAfter(payload))
			return
		}
		if c.written() == 0 {
			w.fail(c, fmt.Errorf("%w: response without a request", ErrMismatch))
			return
		}
		r, _ := c.q.pop()
		if k >= 0 { // the server refused the request: not goodput
			c.seqRecv++
			w.rejected(c, r, k, now)
			p += n
			continue
		}
		if err := checkResponse(w.codec, payload, c.seqRecv, int(r.size), w.filler); err != nil {
			w.fail(c, err)
			return
		}
		c.seqRecv++
		w.complete(c, r, now)
		p += n
	}
	rest := data[p:]
	if len(rest) > cap(c.tail) {
		w.fail(c, fmt.Errorf("%w: %d bytes without a complete response", ErrMismatch, len(rest)))
		return
	}
	c.tail = append(c.tail[:0], rest...)
}

// complete records a response read at now to request r and, in a closed loop,
// queues the next request.
func (w *worker) complete(c *conn, r request, now int64) {
	w.completed(r, now, w.warmEnd, w.endNanos)
	if w.closed && now < w.endNanos {
		c.q.push(request{intendedNanos: now, size: w.nextSize()})
		c.owed++
	}
}

// rejected records a reject frame read at now for request r: counted by
// reason and timed, not counted as a message; in a closed loop the next
// request is queued as after a response.
func (w *worker) rejected(c *conn, r request, k int, now int64) {
	w.rejectedAt(r, k, now, w.warmEnd, w.endNanos)
	if w.closed && now < w.endNanos {
		c.q.push(request{intendedNanos: now, size: w.nextSize()})
		c.owed++
	}
}

// goAway handles a final refusal read at now: the server closes the
// connection after it, so it answers every request c still holds, written
// or not (each counted as refused "goaway", none as lost), and c is closed
// without an error. A closed loop goes on with its other connections, and
// with Reconnect dials this one again after retry (ns; 0: 1 s).
func (w *worker) goAway(c *conn, now, retry int64) {
	for c.q.len() > 0 {
		r, _ := c.q.pop()
		w.rejectedAt(r, goAwayKind, now, w.warmEnd, w.endNanos)
	}
	c.owed = 0
	c.dead = true
	w.goAways++
	_ = unix.Close(c.fd)
	c.fd = -1
	if w.redial != nil {
		if retry <= 0 {
			retry = int64(time.Second)
		}
		c.redialAt = now + retry
		if w.nextRedial == 0 || c.redialAt < w.nextRedial {
			w.nextRedial = c.redialAt
		}
	}
}

// redialer dials one connection again (LoadConfig.Reconnect).
type redialer struct {
	sa, local unix.Sockaddr
	family    int
	timeout   time.Duration
}

// redialDue dials again the connections whose redialAt has come, before
// the window's end, and sets nextRedial to the earliest still to come. A
// dial that fails counts as a failure of the connection, which stays
// closed.
func (w *worker) redialDue(now int64) {
	w.nextRedial = 0
	for _, c := range w.conns {
		if c.redialAt == 0 {
			continue
		}
		if now < c.redialAt {
			if w.nextRedial == 0 || c.redialAt < w.nextRedial {
				w.nextRedial = c.redialAt
			}
			continue
		}
		c.redialAt = 0
		if now >= w.endNanos {
			continue
		}
		w.redialConn(c, now)
	}
}

// redialConn connects c again (a blocking dial of at most the connect
// timeout: it is rare) and puts InFlight requests on it.
func (w *worker) redialConn(c *conn, now int64) {
	r := w.redial
	fds, fail, err := dialAll(context.Background(), r.sa, r.local, r.family, 1, r.timeout)
	if err == nil && len(fds) == 0 {
		err = fail.firstErr
	}
	if err == nil {
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: c.idx}
		if e := unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, fds[0], &ev); e != nil {
			closeAll(fds)
			err = os.NewSyscallError("epoll_ctl", e)
		}
	}
	if err != nil {
		w.failed(err, 0)
		return
	}
	w.reconnects++
	c.fd, c.dead = fds[0], false
	c.out, c.outOff, c.tail = c.out[:0], 0, c.tail[:0]
	c.raw, c.seqSent, c.seqRecv = rawAccount{}, 0, 0
	for i := 0; i < w.inFlight; i++ {
		c.q.push(request{intendedNanos: now, size: w.nextSize()})
		c.owed++
	}
	w.flush(c)
}

// fail closes c and counts the failure.
func (w *worker) fail(c *conn, err error) {
	if c.dead {
		return
	}
	c.dead = true
	w.failed(err, int64(c.written()))
	_ = unix.Close(c.fd)
	c.fd = -1
}

// housekeeping publishes progress and fails connections whose oldest request
// has waited longer than the response timeout.
func (w *worker) housekeeping(now int64) {
	for _, c := range w.conns {
		if !c.dead && c.written() > 0 && now-c.q.at(0).intendedNanos > w.respTimeout {
			w.fail(c, ErrResponseTimeout)
		}
	}
	w.progMsgs.Store(w.allMsgs)
	w.progErrs.Store(w.errs.total())
}

// wait polls for events: non-blocking first (a raw system call that never
// parks the thread), then, if nothing is ready and timeoutNanos is positive,
// blocking for at most timeoutNanos.
func (w *worker) wait(timeoutNanos int64) int {
	ev := unsafe.Pointer(&w.events[0])
	r, _, errno := syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(w.epfd), uintptr(ev), uintptr(len(w.events)), 0, 0, 0)
	if errno == 0 && r > 0 {
		return int(r)
	}
	if timeoutNanos <= 0 || (!w.closed && timeoutNanos < spinNanos) {
		return 0
	}
	if !w.noPwait2 {
		ts := unix.NsecToTimespec(timeoutNanos)
		r, _, errno = syscall.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(w.epfd), uintptr(ev), uintptr(len(w.events)), uintptr(unsafe.Pointer(&ts)), 0, 0)
		if errno != unix.ENOSYS {
			if errno != 0 {
				return 0
			}
			return int(r)
		}
		w.noPwait2 = true
	}
	ms := int((timeoutNanos + int64(time.Millisecond) - 1) / int64(time.Millisecond))
	n, err := unix.EpollWait(w.epfd, w.events, min(ms, math.MaxInt32))
	if err != nil {
		return 0
	}
	return n
}

// rawRead and rawWrite are read(2) and write(2) on non-blocking sockets,
// which never block, so they bypass the scheduler's syscall bookkeeping.
func rawRead(fd int, p []byte) (int, syscall.Errno) {
	r, _, errno := syscall.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(r), errno
}

func rawWrite(fd int, p []byte) (int, syscall.Errno) {
	r, _, errno := syscall.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(r), errno
}
