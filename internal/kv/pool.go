package kv

import (
	"sync"
	"time"

	"github.com/sluicenet/sluice/protocol/envelope"
	"github.com/sluicenet/sluice/server"
)

// task is one envelope request handed to the worker pool: a copy of its
// frame (the loop's read buffer is reused as soon as OnFrame returns), the
// message parsed from that copy, and the times the deadline checks need.
type task struct {
	c        *server.Conn
	frame    []byte           // owned copy of the request frame
	msg      envelope.Message // aliases frame
	arrived  time.Time        // when the loop read it
	deadline time.Time        // absolute request deadline; zero: none
	out      []byte           // reply scratch
	scratch  []byte           // payload scratch
}

// maxPooledTaskBytes bounds the buffers a recycled task keeps.
const maxPooledTaskBytes = 64 << 10

var taskPool = sync.Pool{New: func() any { return new(task) }}

// newTask copies frame into a recycled task and parses the copy.
func newTask(c *server.Conn, frame []byte, arrived, deadline time.Time) (*task, error) {
	t := taskPool.Get().(*task)
	t.c, t.arrived, t.deadline = c, arrived, deadline
	t.frame = append(t.frame[:0], frame...)
	if err := envelope.Parse(t.frame, &t.msg); err != nil { // parsed once on the loop already
		t.free()
		return nil, err
	}
	return t, nil
}

// free recycles t; t must not be used afterwards.
func (t *task) free() {
	t.c = nil
	t.msg.Reset()
	if cap(t.frame) > maxPooledTaskBytes || cap(t.out) > maxPooledTaskBytes || cap(t.scratch) > maxPooledTaskBytes {
		return // let an oversized task go to the collector
	}
	t.frame, t.out, t.scratch = t.frame[:0], t.out[:0], t.scratch[:0]
	taskPool.Put(t)
}

// pool runs requests that may block (dependency calls, a Redis idempotency
// store) off the event loops: a fixed set of workers fed by a bounded
// queue. submit never blocks: a full queue is the caller's to answer.
type pool struct {
	mu     sync.RWMutex // submit holds it shared, close exclusively
	closed bool
	queue  chan *task
	done   chan struct{}
	wg     sync.WaitGroup
	run    func(*task) // runs and answers a task, then frees it
	drop   func(*task) // answers a task that will not run (shutdown), then frees it
}

// submitResult says what became of a submitted task.
type submitResult uint8

const (
	submitted submitResult = iota
	submitFull
	submitClosed
)

func newPool(workers, queueLen int, run, drop func(*task)) *pool {
	p := &pool{queue: make(chan *task, queueLen), done: make(chan struct{}), run: run, drop: drop}
	p.wg.Add(workers)
	for range workers {
		go p.worker()
	}
	return p
}

// submit queues t without blocking. On anything but submitted the caller
// keeps t.
func (p *pool) submit(t *task) submitResult {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return submitClosed
	}
	select {
	case p.queue <- t:
		return submitted
	default:
		return submitFull
	}
}

// queued returns the number of tasks waiting.
func (p *pool) queued() int { return len(p.queue) }

func (p *pool) worker() {
	defer p.wg.Done()
	for {
		select {
		case t := <-p.queue:
			p.run(t)
		case <-p.done:
			for {
				select {
				case t := <-p.queue:
					p.drop(t)
				default:
					return
				}
			}
		}
	}
}

// close stops accepting tasks, lets the running ones finish, answers the
// queued ones with drop, and returns when every worker has exited. Once
// close holds the lock no submit is in progress, so nothing is queued
// after the workers' final drain.
func (p *pool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return
	}
	p.closed = true
	close(p.done)
	p.mu.Unlock()
	p.wg.Wait()
}
