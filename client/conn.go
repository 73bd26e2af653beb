package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice/protocol/envelope"
	"github.com/sluicenet/sluice/resilience"
)

// result is what the reader hands a waiting attempt: a parsed answer whose
// payload has been copied out of the read buffer, or an error.
type result struct {
	typ        envelope.Type
	status     envelope.Status
	flags      envelope.Flags
	retryAfter time.Duration
	payload    []byte
	err        error
}

// conn is one pipelined connection: any number of goroutines write
// requests (one frame per write, under wmu) and wait on their own channel;
// one reader goroutine decodes responses and routes them by request id, in
// whatever order they arrive.
type conn struct {
	nc    net.Conn
	codec envelope.Codec

	wmu  sync.Mutex
	wbuf []byte // guarded by wmu; reused between writes

	mu      sync.Mutex
	pending map[uint64]chan result // guarded by mu
	err     error                  // guarded by mu: why the connection is dead

	inflight atomic.Int32
	dead     atomic.Bool
	done     chan struct{} // closed when the reader has exited
}

func newConn(nc net.Conn, maxFrameBytes int) *conn {
	c := &conn{
		nc:      nc,
		codec:   envelope.Codec{MaxFrameBytes: maxFrameBytes},
		pending: make(map[uint64]chan result),
		done:    make(chan struct{}),
	}
	go c.readLoop()
	return c
}

// usable reports whether new requests may go on c.
func (c *conn) usable() bool { return !c.dead.Load() }

// fail marks c dead with err, closes the socket and fails every pending
// request. The first error wins.
func (c *conn) fail(err error) { c.failAll(err, result{err: err}) }

// failAll is fail with r as the answer of every pending request.
func (c *conn) failAll(err error, r result) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	c.dead.Store(true)
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	_ = c.nc.Close()
	for _, ch := range pending {
		ch <- r
	}
}

// roundTrip sends m (its RequestID already set) and waits for the answer
// until ctx is done. sent reports whether the whole frame was written: when
// false the server cannot have run the request.
func (c *conn) roundTrip(ctx context.Context, m *envelope.Message) (res result, sent bool, err error) {
	ch := make(chan result, responseChannelBuffer)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return result{}, false, err
	}
	c.pending[m.RequestID] = ch
	c.mu.Unlock()
	c.inflight.Add(1)
	defer c.inflight.Add(-1)

	if err := c.write(ctx, m); err != nil {
		c.forget(m.RequestID)
		return result{}, false, err
	}
	select {
	case r := <-ch:
		return r, true, r.err
	case <-ctx.Done():
		c.forget(m.RequestID)
		// The answer may have raced in; prefer it.
		select {
		case r := <-ch:
			return r, true, r.err
		default:
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return result{}, true, ErrTimeout
		}
		return result{}, true, ctx.Err()
	}
}

// forget drops a pending request; a late answer to it is discarded.
func (c *conn) forget(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// write encodes and writes one frame. A failed or short write leaves the
// stream unusable, so it kills the connection; for that reason the write
// deadline is the call's deadline but never less than minWriteWindow from
// now, so a call that starts writing just before its deadline does not
// break the connection its neighbours share. A call whose context is
// already done writes nothing.
func (c *conn) write(ctx context.Context, m *envelope.Message) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if ctx.Err() != nil {
		return ctxErr(ctx)
	}
	buf, err := m.Append(c.wbuf[:0])
	if err != nil {
		return err
	}
	wd := time.Time{}
	if d, ok := ctx.Deadline(); ok {
		wd = d
		if floor := time.Now().Add(minWriteWindow); wd.Before(floor) {
			wd = floor
		}
	}
	_ = c.nc.SetWriteDeadline(wd)
	_, werr := c.nc.Write(buf)
	if cap(buf) <= keepWriteBufferBytes {
		c.wbuf = buf[:0]
	} else {
		c.wbuf = nil
	}
	if werr != nil {
		c.fail(werr)
		return werr
	}
	return nil
}

// readLoop decodes frames until the connection fails. It owns the read
// buffer, which grows up to the codec's frame limit and no further.
func (c *conn) readLoop() {
	defer close(c.done)
	buf := make([]byte, 0, readBufferBytes)
	var m envelope.Message
	for {
		start := 0
		for {
			frame, n, err := c.codec.Decode(buf[start:])
			if err != nil {
				c.fail(fmt.Errorf("%w: %w", ErrProtocol, err))
				return
			}
			if n == 0 {
				break
			}
			if err := c.dispatch(frame, &m); err != nil {
				c.fail(err)
				return
			}
			start += n
		}
		buf = buf[:copy(buf, buf[start:])]
		if len(buf) == cap(buf) {
			// A frame larger than the buffer: grow (Decode has already
			// checked its length against the limit).
			buf = append(buf, make([]byte, cap(buf))...)[:len(buf)]
		}
		n, err := c.nc.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			c.fail(err)
			return
		}
	}
}

// dispatch hands one frame to the attempt waiting for its request id.
func (c *conn) dispatch(frame []byte, m *envelope.Message) error {
	perr := envelope.Parse(frame, m)
	id := m.RequestID
	if perr != nil {
		var ok bool
		if id, ok = envelope.PeekRequestID(frame); !ok {
			return fmt.Errorf("%w: %w", ErrProtocol, perr)
		}
	} else if m.Type == envelope.TypeRequest {
		return fmt.Errorf("%w: the server sent a request", ErrProtocol)
	} else if m.Type == envelope.TypeReject && id == 0 {
		return c.refused(m)
	}
	c.mu.Lock()
	ch, ok := c.pending[id]
	if ok {
		delete(c.pending, id)
	}
	c.mu.Unlock()
	if !ok {
		return nil // an answer nobody waits for any more
	}
	if perr != nil {
		ch <- result{err: fmt.Errorf("%w: %w", ErrProtocol, perr)}
		return nil
	}
	r := result{typ: m.Type, status: m.Status, flags: m.Flags}
	if d, ok := m.RetryAfter(); ok {
		r.retryAfter = d
	}
	if len(m.Payload) > 0 {
		r.payload = append([]byte(nil), m.Payload...)
	}
	ch <- r
	m.Reset()
	return nil
}

// refused handles a reject of no request (ids start at 1): the server
// refused the connection, with its final refusal (reason "goaway", after
// answering every request it read) or at accept, and closes it. It read
// none of the requests still pending, so each is answered with that
// reject (Rejected, with its status and retry-after), and c is dead
// (ErrConnRefused).
func (c *conn) refused(m *envelope.Message) error {
	r := result{typ: m.Type, status: m.Status, flags: m.Flags, payload: append([]byte(nil), m.Payload...)}
	if d, ok := m.RetryAfter(); ok {
		r.retryAfter = d
	}
	err := &classedError{msg: ErrConnRefused.Error() + ": " + string(boundedCopy(m.Payload, maxErrorPayloadBytes)), class: resilience.ClassRetryable, is: ErrConnRefused}
	c.failAll(err, r)
	m.Reset()
	return err
}

// close kills the connection with err and waits for the reader to exit.
func (c *conn) close(err error) {
	c.fail(err)
	<-c.done
}
