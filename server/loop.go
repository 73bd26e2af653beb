package server

import (
	"math"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/protocol"
)

// loop is one event loop: a goroutine locked to its OS thread that owns an
// epoll set, a timerfd, an eventfd, a fixed event array, one read buffer, one
// iovec scratch area (the Flusher) and every connection it accepted. Nothing
// here is touched by other goroutines except the atomics (m, awake, pub) and
// the inbox.
type loop struct {
	e        *Engine
	id       int
	cfg      *Config
	h        Handler
	codec    protocol.Codec
	admit    FrameAdmitter
	rejecter Rejecter

	m     atomic.Uintptr // getm() of the loop goroutine while it runs, else 0
	awake atomic.Bool    // true: the loop will look at its inbox without an eventfd write

	p       poller
	flusher ioflush.Flusher
	buf     []byte // the loop's read buffer
	encBuf  []byte // WriteFrame scratch for a frame split across chunks (at most a chunk)

	lfd           int   // listening fd, -1 once released
	lfdShared     bool  // lfd is shared by all loops (AcceptExclusive)
	listening     bool  // lfd is in the epoll set
	listenReady   bool  // lfd was reported readable by this turn's wait
	fdPausedUntil int64 // EMFILE pause: keep the listener out until then (0: none)

	conns  []*Conn // by fd
	nconns int
	gen    uint64

	timers  timerHeap
	timerAt int64 // when the timerfd fires next (0: not armed)

	readyHead, readyTail *Conn
	nReady               int
	dirtyHead, dirtyTail *Conn
	lazyHead             *Conn // reject-only out-queues waiting for RejectFlushDelay
	slowHead             *Conn // connections whose unread bytes are all too old to admit (deferSlow)
	lazyDue, slowDue     int64 // earliest due time on each list (0: empty); the timerfd wakes the loop for them
	slowNow              bool  // this turn reads every slow connection: the loop had nothing else to do

	outqs   outQueuePool
	maxSegs int // segments one out-queue may hold
	chunks  chunkPool
	ins     inPool

	inbox inbox
	tasks []task // MaxInboxTasksPerTurn scratch

	lastEvents int  // events the last wait returned
	prevFull   bool // the wait before this turn's filled the events array

	yieldAt         int64 // loop clock of the last yield
	sleptSinceYield bool  // a wait slept since then
	now             int64 // loop clock for this turn: monotonic ns since the engine started
	turn            uint64

	draining bool
	exiting  bool

	msgsHigh, msgsLow int // backpressure watermarks on queued messages
	outBytes          int // bytes queued, all connections of the loop
	inBytes           int // bytes held in connection input buffers

	st  counters
	pub published

	pol          loopPolicy // admission wiring and refusal counters (policyloop.go)
	poolInflight int        // frames this loop handed to the worker pool, not yet done

	hists      [numHists]hist    // loop-owned histograms (hist.go)
	hpub       [numHists]histPub // their published copy
	slept      bool              // this turn's wait slept in epoll_wait
	framesSeen uint64            // st[cFrames] when the last turn ended
	nPaused    int               // connections whose reading backpressure paused
}

func newLoop(e *Engine, id int) *loop {
	cfg := &e.cfg
	l := &loop{
		e:        e,
		id:       id,
		cfg:      cfg,
		h:        e.h,
		codec:    cfg.Codec,
		admit:    cfg.Admission,
		lfd:      -1,
		maxSegs:  min(maxOutSegments, cfg.OutQueueMsgs),
		msgsHigh: max(1, cfg.OutQueueMsgs/2),
		msgsLow:  cfg.OutQueueMsgs / 4,
	}
	l.rejecter = RejecterFor(cfg.Codec)
	l.chunks.max = max(maxFreeChunks, cfg.MaxQueuedBytes/max(1, cfg.Loops)/outChunkBytes)
	l.initPolicy()
	l.inbox.init(cfg.InboxTasks)
	l.awake.Store(true)
	return l
}

// onLoop reports whether the caller is this loop's goroutine.
func (l *loop) onLoop() bool { return getm() == l.m.Load() }

// wakeup makes a sleeping loop return from epoll_wait. The CAS means a
// burst of wake-ups while the loop sleeps costs one eventfd write, and none
// while it is awake (it checks the inbox before it sleeps again).
func (l *loop) wakeup() {
	if l.awake.CompareAndSwap(false, true) {
		l.p.wake()
	}
}

// submit hands t to the loop from another goroutine.
func (l *loop) submit(t task) error {
	err := l.inbox.push(t, l)
	if err == ErrInboxFull {
		l.e.inboxFull.Add(1)
	}
	return err
}

// run is the loop goroutine. A turn is a sequence of named phases:
//
//	wait    epoll_wait: under load (the last wait returned more than one
//	        event, or work is pending) a raw non-blocking poll first, and a
//	        blocking one only if it found nothing and no work is pending; a
//	        loop that is not under load blocks at once (measured: the extra
//	        zero-timeout poll doubled epoll_pwait calls per message in
//	        ping-pong and saved nothing)
//	accept  accept4 up to MaxAcceptPerTurn if the listener was reported
//	ready   connections left over by a budget last turn (read or flush)
//	io      this wait's events, per connection in the order: write
//	        (EPOLLOUT), then read (EPOLLIN, EPOLLRDHUP, EPOLLHUP, EPOLLERR)
//	inbox   up to MaxInboxTasksPerTurn off-loop writes and closes
//	timers  connection deadlines due, the EMFILE retry
//	drain   shutdown: close the listener, ask every connection to close
//	flush   one budgeted writev per dirty connection; finish graceful closes
//	control read the clock once more (turn duration, request latency
//	        histograms), listener in or out of epoll (gate), arm the
//	        timerfd, publish counters and histograms
//
// Accept comes first so a new connection's first bytes are read in the
// turn they are reported. Per connection, queued output leaves before more
// input is taken in: writing first frees out-queue budget (and may lift
// backpressure) before new requests produce replies. Hang-up and error are
// handled through read(2), which returns the bytes that arrived before the
// FIN or RST and then end of file or the precise errno; a connection that
// is not reading (paused, closing) is closed on EPOLLHUP/EPOLLERR directly.
// A connection's replies are flushed right after its input is handled
// (flushEarly), and what else became dirty (inbox writes, closes) at the
// end of the turn, so a burst of pipelined requests costs one read and one
// writev, and its peer has the replies before the loop moves on.
func (l *loop) run() {
	runtime.LockOSThread() // never unlocked: the thread exits with the loop
	l.m.Store(getm())
	defer l.exit()
	l.now = l.e.clock()
	for !l.exiting {
		n, err := l.wait()
		prev := l.now
		l.now = l.e.clock()
		l.turn++
		l.st[cTurns]++
		if err != nil {
			l.e.fail(err)
		}
		l.observeWait(n, prev)
		l.policyTurn(prev)
		l.acceptPhase()
		l.readyPhase()
		l.ioPhase(n)
		l.inboxPhase()
		l.timerPhase()
		l.drainPhase()
		l.flushPhase()
		l.controlPhase()
	}
}

// idle reports whether nothing is pending, so the loop may sleep.
func (l *loop) idle() bool {
	return l.readyHead == nil && l.dirtyHead == nil && l.inbox.pending.Load() == 0 && !l.signalled()
}

// signalled reports an engine state change this loop has not acted on.
func (l *loop) signalled() bool {
	e := l.e
	if e.draining.Load() && (!l.draining || e.force.Load() && l.nconns > 0) {
		return true
	}
	return l.wantListen() != l.listening
}

// wait is the wait phase.
func (l *loop) wait() (int, error) {
	l.listenReady, l.slept = false, false
	l.prevFull = l.lastEvents >= l.cfg.MaxEventsPerWait // the events array's size
	var n int
	var err error
	// Polling first is skipped after a quiet turn to save a syscall, but
	// then a blocking wait may return events that were ready long before:
	// with a policy, which reads "slept" as "woken by fresh events" (queue
	// delay, loop lag), the loop always polls before it sleeps.
	if l.lastEvents > 1 || l.pol.on || l.slowHead != nil || !l.idle() {
		n, err = l.p.wait(false)
	}
	if err == nil && n == 0 && l.slowHead != nil && l.idle() {
		l.slowNow = true // nothing fresh to do: read the slow connections rather than sleep
		l.lastEvents = 0
		return 0, nil
	}
	if err == nil && n == 0 && l.idle() {
		l.awake.Store(false)
		if l.idle() { // an inbox push that saw awake==true is visible now
			l.publish()
			l.st[cBlockingWaits]++
			l.slept, l.sleptSinceYield = true, true
			n, err = l.p.wait(true)
		}
		l.awake.Store(true)
	}
	if err != nil {
		return 0, err
	}
	l.lastEvents = n
	l.st[cEvents] += uint64(n)
	for i := 0; i < n; i++ {
		if fd, tag, _ := l.p.event(i); tag == 0 && fd == l.lfd {
			l.listenReady = true
		}
	}
	return n, nil
}

// readyPhase serves the connections a budget stopped last turn; ones that
// spend their budget again go on the next turn's list.
func (l *loop) readyPhase() {
	if l.slowHead != nil {
		l.slowPhase()
	}
	c := l.readyHead
	l.readyHead, l.readyTail, l.nReady = nil, nil, 0
	for c != nil {
		next := c.nextReady
		c.nextReady = nil
		f := c.flags
		c.flags &^= fReady | fNeedRead | fNeedFlush
		if f&fClosed == 0 {
			if f&fNeedFlush != 0 {
				l.markDirty(c)
			}
			if f&fNeedRead != 0 && c.readable() {
				l.readConn(c)
				l.flushEarly(c)
			}
		}
		c = next
	}
}

// ioPhase dispatches this turn's events (see run for the order).
func (l *loop) ioPhase(n int) {
	l.pol.evSince = l.pol.evBound // reset at the end: only this phase's reads come from events
	for i := 0; i < n; i++ {
		fd, tag, ev := l.p.event(i)
		if tag == 0 {
			continue // listener, timerfd, eventfd: handled by their phases
		}
		c := l.conn(fd)
		if c == nil || uint32(c.gen) != tag {
			l.st[cStaleEvents]++
			continue
		}
		if ev&evOut != 0 && c.flags&fOutArmed != 0 {
			l.flushConn(c)
			if c.flags&fClosed != 0 {
				continue
			}
		}
		if ev&(evIn|evRdHup|evHup|evErr) != 0 {
			if ev&(evRdHup|evHup|evErr) != 0 {
				c.flags |= fRdHup
			}
			switch {
			case c.readable():
				if l.pol.slowReads && l.deferSlow(c) {
					continue
				}
				l.readConn(c)
				l.flushEarly(c)
			case ev&(evHup|evErr) != 0 && c.flags&fClosed == 0:
				l.closeNow(c, l.hangupCause(c))
			default:
				c.flags &^= fFresh // this edge goes unread: its bytes will be older than the next one's
			}
		}
	}
	l.pol.evSince = 0
}

// inboxPhase runs tasks from other goroutines, at most
// MaxInboxTasksPerTurn; the rest wait for the next turn (the loop does not
// sleep while the inbox is not empty).
func (l *loop) inboxPhase() {
	n := l.inbox.take(l.tasks)
	for i := 0; i < n; i++ {
		t := &l.tasks[i]
		l.st[cInboxTasks]++
		if t.kind == taskDone { // counts even for a connection that has gone
			l.poolDone(t)
			*t = task{}
			continue
		}
		c := l.conn(int(t.fd))
		if c == nil || c.gen != t.gen || c.flags&fClosed != 0 {
			l.st[cStaleTasks]++
			t.release()
			*t = task{}
			continue
		}
		switch t.kind {
		case taskWrite:
			if err := l.writeSegment(c, t.seg); err != nil {
				t.release()
				if err == ErrQueueFull {
					l.requestClose(c, ErrQueueFull)
				}
			}
		case taskClose:
			l.requestClose(c, t.cause)
		}
		*t = task{}
	}
}

// timerPhase closes connections whose deadline passed and re-arms the rest.
func (l *loop) timerPhase() {
	for t := l.timers.popDue(l.now); t != nil; t = l.timers.popDue(l.now) {
		c := t.c
		l.st[cTimerFires]++
		if cause := l.expired(c); cause != nil {
			l.closeNow(c, cause)
			continue
		}
		l.armConn(c)
	}
	if l.fdPausedUntil != 0 && l.now >= l.fdPausedUntil {
		l.fdPausedUntil = 0 // controlPhase puts the listener back
	}
}

// expired returns the deadline c has passed, if any.
func (l *loop) expired(c *Conn) error {
	cfg := l.cfg
	switch {
	case enabled(cfg.IdleTimeout) && l.now-c.lastActive >= int64(cfg.IdleTimeout):
		return ErrIdleTimeout
	case enabled(cfg.FrameTimeout) && c.flags&fPartial != 0 && l.now-c.frameStart >= int64(cfg.FrameTimeout):
		return ErrFrameTimeout
	case enabled(cfg.WriteStallTimeout) && c.outBytes > 0 && l.now-c.progressAt >= int64(cfg.WriteStallTimeout):
		return ErrWriteStall
	}
	return nil
}

// armConn sets c's one timer to the earliest moment a deadline could pass
// given what is known now. A condition not in force (no partial frame,
// nothing queued) counts as if it began now, so the timer fires at least
// once per shortest timeout and a condition that begins later is caught at
// its exact deadline: the fire that sees it re-arms for it. The data path
// only stamps lastActive, frameStart and progressAt; it never touches the
// heap.
func (l *loop) armConn(c *Conn) {
	cfg := l.cfg
	next := int64(math.MaxInt64)
	if enabled(cfg.IdleTimeout) {
		next = c.lastActive + int64(cfg.IdleTimeout)
	}
	if enabled(cfg.FrameTimeout) {
		from := l.now
		if c.flags&fPartial != 0 {
			from = c.frameStart
		}
		next = min(next, from+int64(cfg.FrameTimeout))
	}
	if enabled(cfg.WriteStallTimeout) {
		from := l.now
		if c.outBytes > 0 {
			from = c.progressAt
		}
		next = min(next, from+int64(cfg.WriteStallTimeout))
	}
	if next == math.MaxInt64 {
		return
	}
	l.timers.set(&c.tm, next)
}

// drainPhase carries out a shutdown: the first time, release the listener
// and ask every connection to close after its output drains; once the drain
// deadline passes (or Shutdown's context ends), close what is left.
func (l *loop) drainPhase() {
	e := l.e
	if !e.draining.Load() {
		return
	}
	if !l.draining {
		l.draining = true
		l.releaseListener()
		for _, c := range l.conns {
			if c != nil && c.flags&fClosed == 0 {
				l.requestClose(c, ErrShutdown)
			}
		}
	}
	if d := e.drainDeadline.Load(); e.force.Load() || d != 0 && l.now >= d {
		for _, c := range l.conns {
			if c != nil && c.flags&fClosed == 0 {
				l.closeNow(c, ErrShutdown)
			}
		}
	}
}

// flushPhase writes each dirty connection once (one budgeted writev) and
// finishes graceful closes whose output is gone.
func (l *loop) flushPhase() {
	if l.lazyHead != nil {
		l.lazyPhase()
	}
	for l.dirtyHead != nil {
		c := l.dirtyHead
		l.dirtyHead = c.nextDirty
		if l.dirtyHead == nil {
			l.dirtyTail = nil
		}
		c.nextDirty = nil
		c.flags &^= fDirty
		if c.flags&fClosed != 0 {
			continue
		}
		if c.flags&fRejOnly != 0 && !l.draining && l.now-c.rejAt < l.pol.rejDelay {
			l.deferRejects(c)
			continue
		}
		// Skip a connection whose flush budget for this turn is spent (it
		// is on the ready list for the next turn).
		if c.out != nil && c.flags&fNeedFlush == 0 {
			l.flushConn(c)
		}
		l.finishClose(c)
	}
}

// deferRejects puts c, whose out-queue holds only rejects younger than
// RejectFlushDelay, on the lazy list instead of writing it this turn.
func (l *loop) deferRejects(c *Conn) {
	if c.flags&fLazy != 0 {
		return
	}
	c.flags |= fLazy
	l.st[cLazyFlushes]++
	c.nextLazy = l.lazyHead
	l.lazyHead = c
	if due := c.rejAt + l.pol.rejDelay; l.lazyDue == 0 || due < l.lazyDue {
		l.lazyDue = due
	}
}

// lazyPhase moves the lazy connections whose rejects are due (all of them
// once the engine drains) to the dirty list; the others stay lazy. A
// connection that got a reply meanwhile was flushed with it and is dropped
// from the list.
func (l *loop) lazyPhase() {
	if l.now < l.lazyDue && !l.draining {
		return
	}
	c := l.lazyHead
	l.lazyHead, l.lazyDue = nil, 0
	for c != nil {
		next := c.nextLazy
		c.nextLazy = nil
		c.flags &^= fLazy
		switch {
		case c.flags&(fClosed|fRejOnly) != fRejOnly || c.out == nil:
		case l.draining || l.now-c.rejAt >= l.pol.rejDelay:
			c.flags &^= fRejOnly // due: flushPhase writes it now
			l.markDirty(c)
		default:
			l.deferRejects(c)
		}
		c = next
	}
}

// deferSlow is readConn's check, for a connection this turn's events
// reported, with RejectFlushDelay and MaxQueueDelay set: if the bytes it
// would read cannot be proven younger than MaxQueueDelay, every frame in
// them would be refused, so c goes on the slow list and is read once
// RejectFlushDelay has passed (at once when the engine drains): one read
// and one write for a batch of refusals instead of one of each per turn. Its
// last draining read stays its arrival bound, so the wait cannot make
// those bytes look younger. It reports whether c was deferred.
func (l *loop) deferSlow(c *Conn) bool {
	p := &l.pol
	if c.flags&fSlow != 0 {
		return true
	}
	if l.draining || c.flags&fRdHup != 0 || len(c.in) > 0 && c.flags&fPartial == 0 {
		return false // see end of file and held frames at once
	}
	if l.e.clock()-l.arrivalBound(c, true) <= p.maxDelay {
		return false
	}
	c.flags |= fSlow
	c.flags &^= fFresh
	l.parkSlow(c, l.now+p.rejDelay)
	l.st[cSlowReads]++
	return true
}

// parkSlow puts c (flagged fSlow) on the slow list, to be read at at.
func (l *loop) parkSlow(c *Conn, at int64) {
	c.slowAt = at
	c.nextSlow = l.slowHead
	l.slowHead = c
	if l.slowDue == 0 || at < l.slowDue {
		l.slowDue = at
	}
}

// slowPhase reads the slow connections that are due (all of them when the
// loop found nothing else to do, or once the engine drains); the others
// stay on the list.
func (l *loop) slowPhase() {
	all := l.slowNow || l.draining
	l.slowNow = false
	if l.now < l.slowDue && !all {
		return
	}
	c := l.slowHead
	l.slowHead, l.slowDue = nil, 0
	for c != nil {
		next := c.nextSlow
		c.nextSlow = nil
		switch {
		case c.flags&fClosed != 0:
			c.flags &^= fSlow | fQuota
		case l.now >= c.slowAt || all && c.flags&fQuota == 0 || l.draining:
			c.flags &^= fSlow | fQuota
			if c.readable() {
				l.readConn(c)
				l.flushEarly(c)
			}
		default:
			c.nextSlow = l.slowHead
			l.slowHead = c
			if l.slowDue == 0 || c.slowAt < l.slowDue {
				l.slowDue = c.slowAt
			}
		}
		c = next
	}
}

// flushEarly writes c's replies right after its input was handled rather
// than at the end of the turn, so the peer has them while the loop serves
// the other connections; batching every reply to the end of the turn left
// peers idle while the loop read the rest (measured: 256 conns x 16 in
// flight, server and client each about half busy). It is still one writev
// per connection per turn in the common case: flushPhase skips a
// connection whose budget this flush spent, one whose queue it emptied has
// no out-queue left, and a connection waiting for EPOLLOUT is left to
// flushPhase as before.
func (l *loop) flushEarly(c *Conn) {
	if c.flags&(fDirty|fClosed|fOutArmed|fNeedFlush|fRejOnly) != fDirty || c.out == nil {
		return
	}
	l.flushConn(c)
}

// yieldEveryNanos spaces the loop's voluntary yields (see yield); under
// the runtime's 10 ms forced-preemption threshold.
const yieldEveryNanos = int64(5 * time.Millisecond)

// yield passes the loop goroutine through the scheduler at the end of a
// turn. The loop is locked to its thread and otherwise never reschedules:
// a goroutine that has not been scheduled for 10 ms counts as running too
// long, so sysmon preempts it and also retakes its P from every blocking
// epoll_wait after one 20 µs tick, which keeps sysmon waking every 20 µs.
// Measured at 55k msg/s open loop with GOMAXPROCS=1: 2.6–3.0k sysmon
// nanosleeps/s and their timer interrupts were ~15% of the server's CPU
// (gnet, whose loop yields before it blocks, had 100/s). Yielding every
// 5 ms when the loop sleeps between turns brings sysmon back to 100/s; a
// loop that never sleeps does not need it (nothing to retake). The yield
// hands the P to another thread and back (the loop's thread is locked), a
// few microseconds 200 times a second, and lets other goroutines run.
func (l *loop) yield(now int64) {
	l.yieldAt, l.sleptSinceYield = now, false
	runtime.Gosched()
}

// controlPhase reconciles the listener with the gate, arms the timerfd for
// the earliest deadline, publishes counters and decides whether to exit.
func (l *loop) controlPhase() {
	end := l.e.clock()
	l.observeTurn(end) // the turn's one clock read besides the wait's
	if l.sleptSinceYield && end-l.yieldAt >= yieldEveryNanos {
		l.yield(end)
	}
	if want := l.wantListen(); want != l.listening {
		l.setListening(want)
	}
	l.armTimerfd()
	l.publish()
	if l.draining && l.nconns == 0 {
		l.exiting = true
	}
}

// armTimerfd points the timerfd at the earliest deadline. A timerfd armed
// earlier than needed is left alone: it fires, finds nothing due and is
// re-armed, which is cheaper than a syscall every time the earliest
// deadline moves later.
func (l *loop) armTimerfd() {
	next := int64(math.MaxInt64)
	if t := l.timers.peek(); t != nil {
		next = t.at
	}
	if l.fdPausedUntil != 0 {
		next = min(next, l.fdPausedUntil)
	}
	if d := l.e.drainDeadline.Load(); l.draining && d != 0 {
		next = min(next, d)
	}
	next = min(next, l.policyWakeAt())
	if l.lazyDue != 0 {
		next = min(next, l.lazyDue)
	}
	if l.slowDue != 0 {
		next = min(next, l.slowDue)
	}
	if next == math.MaxInt64 || l.timerAt > l.now && l.timerAt <= next {
		return
	}
	if err := l.p.armTimer(next - l.now); err != nil {
		l.e.fail(err)
		return
	}
	l.timerAt = next
}

// exit runs when the loop goroutine ends: it closes what is left (only a
// failure gets here with connections), refuses further inbox tasks, and
// closes the loop's fds.
func (l *loop) exit() {
	for _, c := range l.conns {
		if c != nil && c.flags&fClosed == 0 {
			l.closeNow(c, ErrShutdown)
		}
	}
	l.releaseListener()
	l.m.Store(0)
	l.inbox.close() // after this no goroutine touches l.p
	l.p.close()
	l.publish()
	l.e.loopDone()
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
	l.nReady++
	if l.readyTail == nil {
		l.readyHead = c
	} else {
		l.readyTail.nextReady = c
	}
	l.readyTail = c
}

// markDirty puts c on this turn's flush list.
func (l *loop) markDirty(c *Conn) {
	if c.flags&fDirty != 0 {
		return
	}
	c.flags |= fDirty
	if l.dirtyTail == nil {
		l.dirtyHead = c
	} else {
		l.dirtyTail.nextDirty = c
	}
	l.dirtyTail = c
}
