package server

import (
	"sync"
	"sync/atomic"

	"github.com/sluicenet/sluice/ioflush"
)

// Writes between connections (docs/FANOUT.md): the out-queue budget that
// writes from any goroutine share, writability, paused reads, functions
// run on a connection's loop, closing at once, and Fanout, which delivers
// one encoded frame to many connections with one inbox task per loop.

// reserve books one message of n bytes against c's out-queue budgets for
// a write from another goroutine: what the loop last published as queued,
// plus what other writers booked, plus this one must fit, or ErrQueueFull.
// The loop releases the booking when it queues the message (queueAsync)
// or drops it (a closed connection).
func (c *Conn) reserve(n int) error {
	if c.state.Load() != stateOpen {
		return ErrClosed
	}
	if !c.shared.Load() {
		c.shared.Store(true) // the loop publishes its occupancy from now on
	}
	cfg := c.loop.cfg
	m, b := c.resMsgs.Add(1), c.resBytes.Add(int64(n))
	if m+c.pubMsgs.Load() > int64(cfg.OutQueueMsgs) || b+c.pubBytes.Load() > int64(cfg.OutQueueBytes) {
		c.unreserve(n)
		c.loop.e.queueFullOff.Add(1)
		return ErrQueueFull
	}
	return nil
}

// unreserve releases a booking of one message of n bytes.
func (c *Conn) unreserve(n int) {
	c.resMsgs.Add(-1)
	c.resBytes.Add(-int64(n))
}

// publishOut publishes c's out-queue occupancy for off-loop writers, once
// one has written to c (reserve). The loop calls it where the occupancy
// changes: a message queued, a flush, a close.
func (c *Conn) publishOut() {
	if c.shared.Load() {
		c.pubMsgs.Store(int64(c.outMsgs))
		c.pubBytes.Store(int64(c.outBytes))
	}
}

// asyncCopyBytes: a message from another goroutine up to this size is
// copied into the out-queue's chunks, where many share one segment, and
// its buffer goes back at once; a larger one keeps its own segment.
const asyncCopyBytes = 2 << 10

// queueAsync queues on the loop a message another goroutine booked: the
// booking is released and the message queued whatever the budgets say
// now, because its writer was told it was taken; a graceful close that
// began after the booking (a shutdown's drain) flushes it with the rest.
// It returns ErrClosed (the caller releases seg) if c is closed.
//
// The booking is released only after the occupancy that now holds the
// message is published: released first, a writer in between would see
// neither and could book past the budget.
func (c *Conn) queueAsync(seg ioflush.Segment) error {
	n := len(seg.Buf)
	if c.flags&fClosed != 0 {
		c.unreserve(n)
		return ErrClosed
	}
	if n <= asyncCopyBytes || c.segRoom() == 0 {
		c.appendCopy(seg.Buf)
		seg.Release()
	} else {
		c.pushSeg(seg)
		c.tailChunk = nil
		c.queued(n)
	}
	c.unreserve(n)
	return nil
}

// Writable reports whether c's out-queue is below its high watermark (and
// the engine is not holding c's reads for its byte budget): a publisher
// should stop writing to c when it is not, and go on when the handler's
// OnWritable says so. Safe from any goroutine.
func (c *Conn) Writable() bool { return c.state.Load() == stateOpen && !c.full.Load() }

// PauseReads stops reading c until ResumeReads: its bytes wait in the
// kernel, and TCP flow control slows its peer. Frames already read are
// still dispatched. Safe from any goroutine; off the loop it goes through
// the inbox (ErrInboxFull, ErrClosed).
func (c *Conn) PauseReads() error { return c.loopTask(taskPause) }

// ResumeReads undoes PauseReads; reading resumes with the bytes that
// waited. Safe from any goroutine, like PauseReads.
func (c *Conn) ResumeReads() error { return c.loopTask(taskResume) }

// Abort closes c at once: queued output is dropped and the peer gets a
// reset (SO_LINGER 0), not the rest of the stream. OnClose sees ErrAborted.
// Safe from any goroutine; a second close returns ErrClosed.
func (c *Conn) Abort() error { return c.loopTask(taskAbort) }

// Run runs fn on c's loop with c, as a handler would: at once when called
// there, else through the loop's inbox (ErrInboxFull when it is full,
// ErrClosed when c is closed or its engine stopping). fn does not run if c
// closes before the loop reaches it. fn must not block.
func (c *Conn) Run(fn func(c *Conn)) error {
	l := c.loop
	if l.onLoop() {
		if c.flags&fClosed != 0 {
			return ErrClosed
		}
		fn(c)
		return nil
	}
	if c.state.Load() == stateClosed {
		return ErrClosed
	}
	return closedInbox(l.submit(task{kind: taskRun, fd: c.fd, gen: c.gen, fn: fn}))
}

// loopTask carries out a pause, resume or abort on the loop, or hands it
// to the loop's inbox.
func (c *Conn) loopTask(k taskKind) error {
	l := c.loop
	if l.onLoop() {
		if c.flags&fClosed != 0 {
			return ErrClosed
		}
		l.connTask(c, k)
		return nil
	}
	if c.state.Load() == stateClosed {
		return ErrClosed
	}
	return closedInbox(l.submit(task{kind: k, fd: c.fd, gen: c.gen}))
}

// closedInbox maps a stopping engine's inbox error to ErrClosed for
// calls about one connection.
func closedInbox(err error) error {
	if err == ErrEngineClosed {
		return ErrClosed
	}
	return err
}

// connTask carries out a pause, resume or abort of c on its loop.
func (l *loop) connTask(c *Conn, k taskKind) {
	switch k {
	case taskPause:
		c.flags |= fUserPaused
	case taskResume:
		if c.flags&fUserPaused != 0 {
			c.flags &^= fUserPaused
			if c.readable() {
				l.ready(c, fNeedRead) // bytes may wait with no new edge to come
			}
		}
	case taskAbort:
		l.abort(c)
	}
}

// Run runs fn on loop i (0 ≤ i < Loops) through its inbox: ErrInboxFull
// when that is full, ErrEngineClosed once the engine stops. fn must not
// block; on the loop it may use any Conn of that loop directly.
func (e *Engine) Run(i int, fn func()) error {
	if i < 0 || i >= len(e.loops) {
		return ErrInvalidConfig
	}
	return e.loops[i].submit(task{kind: taskLoopRun, fn0: fn})
}

// A Fanout delivers frames to many connections: each frame is encoded
// once with the engine's codec, each destination loop gets one inbox task
// per frame, and each destination's out-queue budget is booked at once,
// so every failure is known when Send returns (docs/FANOUT.md). Reuse one
// Fanout per goroutine: its steady state allocates nothing. It is not
// safe for concurrent use.
type Fanout struct {
	e      *Engine
	byLoop [][]connRef
	// Failed lists the connections the last Send did not give the frame
	// to, with why: ErrQueueFull (its out-queue budget), ErrClosed,
	// ErrInboxFull (its loop's inbox). The slice is reused by the next Send.
	Failed []FanoutFailure
}

// FanoutFailure is one connection a Fanout.Send did not deliver to.
type FanoutFailure struct {
	Conn *Conn
	Err  error
}

// connRef is one destination of a fan-out task: the connection (a Conn
// is never reused; the loop checks it is still open) and the bytes booked.
type connRef struct {
	c *Conn
	n int
}

// NewFanout returns a Fanout for e's connections.
func (e *Engine) NewFanout() *Fanout {
	return &Fanout{e: e, byLoop: make([][]connRef, len(e.loops))}
}

// Send encodes frame once and queues it on every connection in conns (all
// of f's engine), after whatever each connection had queued; it returns
// how many connections it was given to, and lists the others in f.Failed.
// On a connection's own loop it is written directly. A connection that
// closes before its loop queues the frame does not get it, as with Write.
func (f *Fanout) Send(frame []byte, conns []*Conn) int {
	f.Failed = f.Failed[:0]
	for i := range f.byLoop {
		f.byLoop[i] = f.byLoop[i][:0]
	}
	fb := getFanBuf()
	fb.b = f.e.cfg.Codec.AppendEncode(fb.b[:0], frame)
	n := len(fb.b)
	sent := 0
	for _, c := range conns {
		l := c.loop
		if l.onLoop() {
			if err := c.writeCopy(fb.b); err != nil {
				f.Failed = append(f.Failed, FanoutFailure{c, err})
			} else {
				sent++
			}
			continue
		}
		if err := c.reserve(n); err != nil {
			f.Failed = append(f.Failed, FanoutFailure{c, err})
			continue
		}
		f.byLoop[l.id] = append(f.byLoop[l.id], connRef{c: c, n: n})
	}
	for i, dst := range f.byLoop {
		if len(dst) == 0 {
			continue
		}
		ft := getFanTask()
		ft.buf = fb
		ft.dst = append(ft.dst[:0], dst...)
		fb.refs.Add(1)
		if err := f.e.loops[i].submit(task{kind: taskFanout, fan: ft}); err != nil {
			fb.refs.Add(-1)
			putFanTask(ft)
			err = closedInbox(err)
			for _, r := range dst {
				r.c.unreserve(r.n)
				f.Failed = append(f.Failed, FanoutFailure{r.c, err})
			}
			continue
		}
		sent += len(dst)
	}
	fb.release() // Send's own reference
	return sent
}

// fanout queues a fan-out task's frame on each of its connections (the
// inbox phase): a small frame is copied into each out-queue, a large one
// shared, each queue holding a reference until it is written.
func (l *loop) fanout(ft *fanTask) {
	fb := ft.buf
	for _, r := range ft.dst {
		c := r.c
		if c.flags&fClosed != 0 {
			c.unreserve(r.n)
			l.st[cStaleTasks]++
			continue
		}
		fb.refs.Add(1)
		seg := ioflush.Segment{Buf: fb.b, Free: fb.free}
		if c.queueAsync(seg) != nil {
			seg.Release()
		}
	}
	putFanTask(ft)
	fb.release()
}

// fanBuf is one encoded frame shared by a fan-out's destinations; the last
// reference returns it to its pool.
type fanBuf struct {
	b    []byte
	refs atomic.Int32
	free func() // release, bound once: a Segment's Free
}

// maxPooledFanBytes: a larger buffer is left to the garbage collector
// rather than pooled.
const maxPooledFanBytes = 64 << 10

var fanBufs sync.Pool // of *fanBuf

func getFanBuf() *fanBuf {
	fb, _ := fanBufs.Get().(*fanBuf)
	if fb == nil {
		fb = &fanBuf{}
		fb.free = fb.release
	}
	fb.refs.Store(1)
	return fb
}

func (fb *fanBuf) release() {
	if fb.refs.Add(-1) != 0 {
		return
	}
	if cap(fb.b) > maxPooledFanBytes {
		fb.b = nil
	}
	fanBufs.Put(fb)
}

// fanTask is one loop's part of a Send: the frame and its connections.
type fanTask struct {
	buf *fanBuf
	dst []connRef
}

var fanTasks = sync.Pool{New: func() any { return &fanTask{} }}

func getFanTask() *fanTask { return fanTasks.Get().(*fanTask) }

func putFanTask(ft *fanTask) {
	ft.buf = nil
	clear(ft.dst)
	ft.dst = ft.dst[:0]
	fanTasks.Put(ft)
}
