package server

import "fmt"

// Action is what a handler asks the engine to do after a callback.
type Action uint8

const (
	// None keeps the connection open.
	None Action = iota
	// Close closes the connection after its queued output is flushed
	// (bounded by WriteStallTimeout); the cause is ErrLocalClose.
	Close
	// Shutdown starts a graceful shutdown of the whole engine, bounded by
	// Config.DrainTimeout.
	Shutdown
)

// String returns "none", "close" or "shutdown".
func (a Action) String() string {
	switch a {
	case None:
		return "none"
	case Close:
		return "close"
	case Shutdown:
		return "shutdown"
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// Handler receives a connection's events. Its methods run on the
// connection's loop goroutine, one at a time per loop, and must not block:
// a blocked handler stalls every connection of its loop. Hand slow work to
// other goroutines and reply with Conn.Write from there. A method that
// panics closes only its connection, with a *PanicError as the cause
// (docs/ARCHITECTURE.md#handler-panics).
type Handler interface {
	// OnOpen is called once, after the connection is accepted and
	// registered, before any OnFrame.
	OnOpen(c *Conn) Action

	// OnFrame is called for every frame the codec decodes, in order. frame
	// aliases the loop's read buffer and is valid only during the call:
	// copy what must outlive it (Write copies).
	OnFrame(c *Conn, frame []byte) Action

	// OnClose is called exactly once for every connection that saw OnOpen,
	// after its fd is closed. cause says why: errors.Is it against
	// ErrPeerClosed, ErrIdleTimeout, ErrFrameTooLarge, ... or a wrapped
	// syscall error such as ECONNRESET.
	OnClose(c *Conn, cause error)
}

// WritabilityHandler is what a Handler may also implement to hear when a
// connection's writability (Conn.Writable) changes: false once its
// out-queue passes its high watermark (OutQueueHighBytes, or half of
// OutQueueMsgs) or the engine holds its reads for MaxQueuedBytes, true
// again at the low watermark. A publisher stops writing to c, or pauses
// its own sources (Conn.PauseReads), on false and goes on at true
// (docs/FANOUT.md). It runs on c's loop after the turn's writes, at most
// once per connection per turn, and only for a change since the last
// call; a connection starts writable.
type WritabilityHandler interface {
	OnWritable(c *Conn, writable bool)
}

// HandlerFuncs adapts functions to Handler (and WritabilityHandler); a nil
// field does nothing and returns None.
type HandlerFuncs struct {
	Open     func(c *Conn) Action
	Frame    func(c *Conn, frame []byte) Action
	Close    func(c *Conn, cause error)
	Writable func(c *Conn, writable bool)
}

// OnOpen calls h.Open if set.
func (h HandlerFuncs) OnOpen(c *Conn) Action {
	if h.Open == nil {
		return None
	}
	return h.Open(c)
}

// OnFrame calls h.Frame if set.
func (h HandlerFuncs) OnFrame(c *Conn, frame []byte) Action {
	if h.Frame == nil {
		return None
	}
	return h.Frame(c, frame)
}

// OnClose calls h.Close if set.
func (h HandlerFuncs) OnClose(c *Conn, cause error) {
	if h.Close != nil {
		h.Close(c, cause)
	}
}

// OnWritable calls h.Writable if set.
func (h HandlerFuncs) OnWritable(c *Conn, writable bool) {
	if h.Writable != nil {
		h.Writable(c, writable)
	}
}
