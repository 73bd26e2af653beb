package server

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice/admission"
)

// ErrHandlerPanic is the cause (errors.Is) of a connection closed because
// code the engine called for it panicked: a Handler or BlockingHandler
// method, the codec's Decode, a Conn.Run function, the policy's Admit or
// Classify, the pool's Deadline (or, closing nothing, OnClose or an
// Engine.Run function). The panic is recovered where that code was
// called, only that connection closes (its queued output still goes out),
// and the loop or worker goes on (docs/ARCHITECTURE.md#handler-panics).
var ErrHandlerPanic = errors.New("sluice: handler panicked")

// PanicError is the OnClose cause of a connection closed by a recovered
// panic; it matches ErrHandlerPanic, and an error passed to panic through
// Unwrap.
type PanicError struct {
	In    string // what panicked: "OnFrame", "Decode", "ServeFrame", ...
	Value any    // the value passed to panic
	Stack []byte // the panicking goroutine's stack (runtime/debug.Stack)
}

// Error returns "sluice: handler panicked in <In>: <Value>".
func (e *PanicError) Error() string {
	return fmt.Sprintf("%v in %s: %v", ErrHandlerPanic, e.In, e.Value)
}

// Is matches ErrHandlerPanic.
func (e *PanicError) Is(target error) bool { return target == ErrHandlerPanic }

// Unwrap returns the panic value when it is an error, else nil.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// panics counts recovered panics and logs them at most once a second.
type panics struct {
	n        atomic.Uint64
	lastLog  atomic.Int64 // engine clock of the last line logged
	unlogged atomic.Uint64
}

// recovered counts and logs a panic recovered from code called for c (nil:
// for no connection) and returns its cause.
func (e *Engine) recovered(c *Conn, in string, v any) *PanicError {
	pe := &PanicError{In: in, Value: v, Stack: debug.Stack()}
	p := &e.panics
	p.n.Add(1)
	if lg := e.cfg.Logger; lg != nil {
		now := e.clock()
		last := p.lastLog.Load()
		if now-last >= int64(time.Second) && p.lastLog.CompareAndSwap(last, now) {
			peer := ""
			if c != nil {
				peer = c.remote.String()
			}
			lg.Error("sluice: handler panicked; its connection closes", "in", in, "peer", peer,
				"panic", fmt.Sprint(v), "suppressed", p.unlogged.Swap(0), "stack", string(pe.Stack))
		} else {
			p.unlogged.Add(1)
		}
	}
	return pe
}

// panicked closes c, on its loop, after a panic recovered from code called
// for it; its queued output still goes out (requestClose).
func (l *loop) panicked(c *Conn, in string, v any) {
	l.requestClose(c, l.e.recovered(c, in, v))
}

// The wrappers below call user code with a deferred recover each: a panic
// closes only the connection it was called for. An open-coded defer costs
// a few nanoseconds when nothing panics.

func (l *loop) onOpen(c *Conn) (a Action) {
	defer func() {
		if v := recover(); v != nil {
			l.panicked(c, "OnOpen", v)
			a = None
		}
	}()
	return l.h.OnOpen(c)
}

func (l *loop) onFrame(c *Conn, frame []byte) (a Action) {
	defer func() {
		if v := recover(); v != nil {
			l.panicked(c, "OnFrame", v)
			a = None
		}
	}()
	return l.h.OnFrame(c, frame)
}

// onClose runs after c is closed: a panic is counted and logged only.
func (l *loop) onClose(c *Conn, cause error) {
	defer func() {
		if v := recover(); v != nil {
			l.e.recovered(c, "OnClose", v)
		}
	}()
	l.h.OnClose(c, cause)
}

func (l *loop) onWritable(c *Conn, writable bool) {
	defer func() {
		if v := recover(); v != nil {
			l.panicked(c, "OnWritable", v)
		}
	}()
	l.wh.OnWritable(c, writable)
}

// runLoopTask runs an Engine.Run function: a panic is counted and logged,
// and the loop goes on.
func (l *loop) runLoopTask(fn func()) {
	defer func() {
		if v := recover(); v != nil {
			l.e.recovered(nil, "Engine.Run", v)
		}
	}()
	fn()
}

func (l *loop) runTask(c *Conn, fn func(*Conn)) {
	defer func() {
		if v := recover(); v != nil {
			l.panicked(c, "Conn.Run", v)
		}
	}()
	fn(c)
}

// decode is the codec's Decode; a panic is returned as the connection's
// error (it closes at once, as a malformed frame does).
func (l *loop) decode(c *Conn, data []byte) (frame []byte, n int, err error) {
	defer func() {
		if v := recover(); v != nil {
			frame, n, err = nil, 0, l.e.recovered(c, "Decode", v)
		}
	}()
	return l.codec.Decode(data)
}

// admit is the policy's AdmitFunc; after a panic it admits, and the
// caller sees c closing.
func (s *stage) admit(c *Conn, frame []byte, now time.Time) (v Verdict) {
	defer func() {
		if r := recover(); r != nil {
			c.loop.panicked(c, "Admit", r)
			v = Verdict{}
		}
	}()
	return s.fn(c, frame, now)
}

// classifyFrame is the policy's Classify; after a panic the caller sees c
// closing.
func (s *stage) classifyFrame(c *Conn, frame []byte, f *admission.Frame) {
	defer func() {
		if r := recover(); r != nil {
			c.loop.panicked(c, "Classify", r)
		}
	}()
	s.classify(c, frame, f)
}

// deadline is the pool's Deadline; after a panic the frame has none and
// c closes.
func (p *pool) deadline(l *loop, c *Conn, frame []byte, at time.Time) (d time.Time) {
	defer func() {
		if r := recover(); r != nil {
			l.panicked(c, "Deadline", r)
			d = time.Time{}
		}
	}()
	return p.cfg.Deadline(frame, at)
}

// serveFrame is the BlockingHandler's ServeFrame on a worker; a panic
// closes c through its inbox (CloseWithError) and the worker goes on.
func (p *pool) serveFrame(ctx context.Context, c *Conn, frame []byte) (a Action) {
	defer func() {
		if r := recover(); r != nil {
			c.CloseWithError(p.e.recovered(c, "ServeFrame", r))
			a = None
		}
	}()
	return p.cfg.Handler.ServeFrame(ctx, c, frame)
}
