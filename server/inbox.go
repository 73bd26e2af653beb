package server

import (
	"sync"
	"sync/atomic"

	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/ringq"
)

// taskKind says what an inbox task asks of the loop.
type taskKind uint8

const (
	taskWrite   taskKind = iota + 1 // queue seg on the connection (one message, booked: reserve)
	taskClose                       // close the connection gracefully with cause
	taskDone                        // a worker finished one of the connection's frames
	taskPause                       // Conn.PauseReads
	taskResume                      // Conn.ResumeReads
	taskAbort                       // Conn.Abort
	taskRun                         // Conn.Run: fn with the connection
	taskLoopRun                     // Engine.Run: fn0, no connection
	taskFanout                      // Fanout.Send: fan's frame to its connections on this loop
)

// task is work handed to a loop by another goroutine. It names its
// connection by fd and generation, never by pointer: a connection closed
// meanwhile, or an fd reused by a newer connection, fails the generation
// check and the task is dropped (its segment released), so a reused fd never
// receives a stale write.
type task struct {
	kind  taskKind
	fd    int32
	gen   uint64
	seg   ioflush.Segment
	cause error
	fn    func(*Conn)
	fn0   func()
	fan   *fanTask
}

// release frees what the task owns; used when a task is dropped (its
// connection is gone, or the loop stopped). A dropped write's booking
// stays on its connection, which is closed and never reused.
func (t *task) release() {
	t.seg.Release()
	if ft := t.fan; ft != nil {
		fb := ft.buf
		putFanTask(ft)
		fb.release()
	}
}

// inbox is a loop's bounded multi-producer, single-consumer queue. Producers
// take a mutex for a few nanoseconds per push (off-loop calls are the slow
// path; the loop's own calls never come here) and the loop drains a batch
// under one lock per turn. pending is readable without the lock so the loop
// can skip an empty inbox with one atomic load.
type inbox struct {
	mu      sync.Mutex
	q       ringq.Ring[task]
	closed  bool
	pending atomic.Int32
	batch   []task // the loop's scratch for one turn's tasks (MaxInboxTasksPerTurn)
}

func (ib *inbox) init(capacity int) { ib.q.Init(capacity) }

// push queues t, reporting ErrInboxFull or ErrEngineClosed instead of
// blocking. On success wake runs under the lock, so it cannot race with
// close (the loop closes its wake-up fd only after close returns).
func (ib *inbox) push(t task, w waker) error {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	if ib.closed {
		return ErrEngineClosed
	}
	if !ib.q.Push(t) {
		return ErrInboxFull
	}
	ib.pending.Add(1)
	w.wakeup()
	return nil
}

// signal runs wake under the lock unless the inbox is closed; the engine
// uses it to wake a loop for a state change without a task.
func (ib *inbox) signal(w waker) {
	ib.mu.Lock()
	if !ib.closed {
		w.wakeup()
	}
	ib.mu.Unlock()
}

// take moves up to len(dst) tasks into dst and returns how many.
func (ib *inbox) take(dst []task) int {
	if ib.pending.Load() == 0 {
		return 0
	}
	ib.mu.Lock()
	n := 0
	for n < len(dst) {
		t, ok := ib.q.Pop()
		if !ok {
			break
		}
		dst[n] = t
		n++
	}
	ib.pending.Add(int32(-n))
	ib.mu.Unlock()
	return n
}

// close refuses further pushes and releases every queued task.
func (ib *inbox) close() {
	ib.mu.Lock()
	ib.closed = true
	for {
		t, ok := ib.q.Pop()
		if !ok {
			break
		}
		t.release()
	}
	ib.pending.Store(0)
	ib.mu.Unlock()
}

// waker is what the inbox calls, under its lock, to wake its loop.
type waker interface{ wakeup() }

// inboxPhase runs tasks from other goroutines, at most
// MaxInboxTasksPerTurn; the rest wait for the next turn (the loop does not
// sleep while the inbox is not empty).
func (l *loop) inboxPhase() {
	n := l.inbox.take(l.inbox.batch)
	for i := 0; i < n; i++ {
		t := &l.inbox.batch[i]
		l.st[cInboxTasks]++
		switch t.kind {
		case taskDone: // counts even for a connection that has gone
			l.poolDone(t)
			*t = task{}
			continue
		case taskLoopRun:
			if t.fn0 != nil {
				l.runLoopTask(t.fn0)
			}
			*t = task{}
			continue
		case taskFanout:
			l.fanout(t.fan)
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
			if err := c.queueAsync(t.seg); err != nil {
				t.release()
			}
		case taskClose:
			l.requestClose(c, t.cause)
		case taskPause, taskResume, taskAbort:
			l.connTask(c, t.kind)
		case taskRun:
			if t.fn != nil {
				l.runTask(c, t.fn)
			}
		}
		*t = task{}
	}
}
