package server

import (
	"net"
	"net/netip"
	"sync/atomic"

	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/protocol"
	"github.com/valyala/bytebufferpool"
)

// connFlag is loop-owned connection state; only the loop reads or writes it.
type connFlag uint32

const (
	fReady       connFlag = 1 << iota // on the ready list
	fDirty                            // on the dirty (flush) list
	fNeedRead                         // ready list: read again (budget spent, or resumed)
	fNeedFlush                        // ready list: flush again (flush budget spent)
	fOutArmed                         // EPOLLOUT is in the interest set
	fPaused                           // reading paused by backpressure
	fPartial                          // in ends with an incomplete frame
	fEOF                              // read returned end of file
	fRdHup                            // the peer shut down writing: read on to end of file
	fClosed                           // closed: the fd is gone
	fHeld                             // frames held back by MaxFramesPerTurn or the stage's turn time (ready list)
	fRejOnly                          // the out-queue holds only refusals the admission stage may hold back
	fRecvEOF                          // recv mode: the recv reported end of file, seen once held input is used
	fPoolWait                         // ordered pool: a frame is in the pool; the next waits until it is done
	fPoolBacklog                      // ordered pool: input waits in c.in behind the frame in the pool (pool.backlog counts it)
	fDeferred                         // the admission stage defers its reads (its slow list): not read until it says
	fUserPaused                       // Conn.PauseReads: not read until ResumeReads
	fWListed                          // on the loop's writability list (writability.go)
	fUnwritable                       // the handler was last told the connection is not writable
	fHandshake                        // TLS handshake in progress (tls.go): not read; the handler has not seen it
	fRecvMore                         // recv mode: the last recv left bytes in the socket (netpoll.More)
	fRejDue                           // the out-queue holds only refusals and is due: its write is part of what refusing costs
)

// Connection states visible to other goroutines.
const (
	stateOpen    uint32 = iota
	stateClosing        // graceful close requested: no more input, output drains
	stateClosed
)

// Conn is one accepted TCP connection. Its methods are safe to call from
// any goroutine: called from the connection's own loop (inside a Handler
// callback) they act directly; called from elsewhere they go through the
// loop's bounded inbox, tagged with the connection's generation, so a write
// to a connection that has closed meanwhile is dropped and never reaches a
// newer connection on the same fd. Writes from one goroutine arrive in
// order. A Conn is never reused: once closed it stays closed.
type Conn struct {
	loop  *loop
	fd    int32
	flags connFlag
	gen   uint64 // unique per loop; low 32 bits tag epoll events

	state atomic.Uint32 // stateOpen, stateClosing, stateClosed
	full  atomic.Bool   // above the out-queue high watermark, or reading paused for the engine's byte budget: not Writable

	// the out-queue budget shared with other goroutines (fanout.go): what
	// off-loop writes booked and the loop has not queued yet, and the
	// loop's own occupancy, published once shared is set
	shared   atomic.Bool
	resMsgs  atomic.Int64
	resBytes atomic.Int64
	pubMsgs  atomic.Int64
	pubBytes atomic.Int64

	// input: nil unless a partial frame (or held-back frames) must be kept
	in         []byte
	readTurn   uint64 // turn readBytes counts for
	readBytes  int    // bytes read this turn, against ReadBudgetBytes
	turnFrames int    // frames dispatched this turn, against MaxFramesPerTurn

	// output: nil out-queue while nothing is queued
	out       *outQueue
	tailChunk *chunk // the chunk of the tail segment, if it is one of ours
	outBytes  int
	outMsgs   int

	// deadlines, checked lazily against progress stamps (loop clock)
	lastActive int64 // last byte moved either way
	frameStart int64 // when the incomplete frame in `in` began
	progressAt int64 // last output progress, or when output was first queued
	tm         timer

	nextReady *Conn
	nextDirty *Conn
	closing   error // cause of a requested close; loop-owned
	pending   int32 // frames in the worker pool; loop-owned
	sending   int32 // recv mode: bytes of the send in flight (sendq_linux.go)

	remote netip.AddrPort
	ctx    atomic.Pointer[any]
	tls    *connTLS // nil on a plaintext engine (tls.go)
}

// RemoteAddr returns the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return net.TCPAddrFromAddrPort(c.remote) }

// RemoteAddrPort returns the peer's address without allocating.
func (c *Conn) RemoteAddrPort() netip.AddrPort { return c.remote }

// SetContext stores v in the connection's user slot.
func (c *Conn) SetContext(v any) { c.ctx.Store(&v) }

// Context returns what SetContext stored, or nil.
func (c *Conn) Context() any {
	if p := c.ctx.Load(); p != nil {
		return *p
	}
	return nil
}

// Write queues a copy of p as one message. It fails with ErrQueueFull if
// the message would pass OutQueueMsgs or OutQueueBytes (counting what
// writes from any goroutine queued or booked), and with ErrClosed after
// Close; it never closes the connection itself (docs/FANOUT.md). On the
// loop p from AvailableBuffer is queued in place. Off the loop the message
// is booked against the budgets at once, so the error is synchronous, and
// handed to the loop's inbox (ErrInboxFull when that is full). The bytes
// leave at the end of the loop turn (one writev per connection per turn).
func (c *Conn) Write(p []byte) error {
	l := c.loop
	if l.onLoop() {
		return c.writeCopy(p)
	}
	if len(p) == 0 {
		return nil
	}
	return c.writeAsync(p, nil)
}

// LoopCodec returns the codec c's loop decodes with, when called on the
// loop (in a handler): for a protocol.LoopCodec the Codec its ForLoop
// returned for this loop, which a handler may use only there and then;
// otherwise Config.Codec. Off the loop it returns nil.
func (c *Conn) LoopCodec() protocol.Codec {
	l := c.loop
	if !l.onLoop() {
		return nil
	}
	return l.codec
}

// AvailableBuffer returns an empty buffer whose capacity is free space in
// the out-queue, like bufio.Writer.AvailableBuffer: append a reply to it and
// pass the result to an immediately succeeding Write, which then queues it
// without copying. A reply that outgrows the capacity is copied as usual (its
// append allocated). The buffer is valid only until the next write to any
// connection of the loop. On the loop (in a handler) it has at least
// 2 KiB of room, usually the rest of an 8 KiB chunk; off the loop
// it is nil.
func (c *Conn) AvailableBuffer() []byte {
	l := c.loop
	if !l.onLoop() {
		return nil
	}
	return c.availableBuffer()
}

// WriteFrame encodes frame with the engine's codec and queues it as one
// message. On the loop the codec appends straight into the out-queue, so an
// echo costs one copy. Errors are those of Write.
func (c *Conn) WriteFrame(frame []byte) error {
	l := c.loop
	if l.onLoop() {
		return c.writeFrame(frame)
	}
	return c.writeAsync(frame, l.cfg.Codec) // the shared codec: the loop's own is the loop's alone
}

// WriteOwned queues b as one message without copying: the engine owns b
// until it calls release, exactly once, after b is written or dropped
// (connection closed). release may be nil. On error nothing was queued and
// the caller keeps b. release runs on the loop goroutine and must not block.
func (c *Conn) WriteOwned(b []byte, release func()) error {
	l := c.loop
	seg := ioflush.Segment{Buf: b, Free: release}
	if l.onLoop() {
		return c.writeSegment(seg)
	}
	if err := c.reserve(len(b)); err != nil {
		return err
	}
	if err := l.submit(task{kind: taskWrite, fd: c.fd, gen: c.gen, seg: seg}); err != nil {
		c.unreserve(len(b))
		return err
	}
	return nil
}

// Close closes the connection after its queued output is written (bounded
// by WriteStallTimeout); OnClose then sees ErrLocalClose. A second Close
// returns ErrClosed.
func (c *Conn) Close() error { return c.CloseWithError(ErrLocalClose) }

// CloseWithError is Close with the cause OnClose and the counters see; a
// nil cause means ErrLocalClose.
func (c *Conn) CloseWithError(cause error) error {
	if cause == nil {
		cause = ErrLocalClose
	}
	l := c.loop
	if l.onLoop() {
		if c.closing != nil || c.flags&fClosed != 0 {
			return ErrClosed
		}
		l.requestClose(c, cause)
		return nil
	}
	if c.state.Load() != stateOpen {
		return ErrClosed
	}
	return l.submit(task{kind: taskClose, fd: c.fd, gen: c.gen, cause: cause})
}

// writeAsync copies (or encodes, with codec) p into a pooled buffer and
// hands it to the loop's inbox.
func (c *Conn) writeAsync(p []byte, codec protocol.Codec) error {
	if c.state.Load() != stateOpen {
		return ErrClosed
	}
	bb := bytebufferpool.Get()
	if codec != nil {
		bb.B = codec.AppendEncode(bb.B[:0], p)
	} else {
		bb.B = append(bb.B[:0], p...)
	}
	n := len(bb.B)
	if err := c.reserve(n); err != nil {
		bytebufferpool.Put(bb)
		return err
	}
	err := c.loop.submit(task{kind: taskWrite, fd: c.fd, gen: c.gen,
		seg: ioflush.Segment{Buf: bb.B, Pooled: bb}})
	if err != nil {
		c.unreserve(n)
		bytebufferpool.Put(bb)
	}
	return err
}

// readable reports whether the loop should read from c now.
func (c *Conn) readable() bool {
	return c.flags&(fClosed|fPaused|fEOF|fPoolWait|fUserPaused|fHandshake) == 0 && c.closing == nil
}
