package server

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/sluicenet/sluice/admission"
)

// BlockingHandler handles frames that may block (a database call, another
// service). Its ServeFrame runs on a worker goroutine of the engine's pool,
// never on a loop; many run at once for different connections. By default
// one frame per connection is in the pool at a time, so a connection's
// replies leave in the order its requests came in (what HTTP/1.1, RESP and
// line protocols need); with PoolConfig.Unordered many frames of one
// connection run at once and their replies may leave in any order (for
// protocols whose replies carry the request's id, such as the envelope).
type BlockingHandler interface {
	// ServeFrame handles one admitted frame. ctx carries the request's
	// absolute deadline, derived once at ingress (PoolConfig.RequestTimeout,
	// or PoolConfig.Deadline) and is cancelled when the engine stops; frame
	// is the pool's copy and is valid until ServeFrame returns. Replies go
	// through c.Write or c.WriteFrame (the loop's inbox). Close closes the
	// connection gracefully; Shutdown shuts the engine down.
	//
	// Like frame, ctx belongs to the call: the worker reuses it for its
	// next frame, so that a frame costs no allocation, and it must not be
	// used after ServeFrame returns. A context derived from it, or its Done
	// channel, taken during the call is safe to keep: asking for Done gives
	// this call a context of its own, cancelled when ServeFrame returns.
	// Work that outlives the call needs its own context.
	ServeFrame(ctx context.Context, c *Conn, frame []byte) Action
}

// Defaults of PoolConfig when Handler is set.
const (
	DefaultPoolQueueLen       = 1024
	DefaultPoolQueueTimeout   = time.Second
	DefaultPoolRequestTimeout = 5 * time.Second
)

// PoolConfig configures the worker pool for a BlockingHandler. With
// Handler set, every admitted frame goes to the pool instead of
// Handler.OnFrame (OnOpen and OnClose still run on the loop). The zero
// value (no Handler) runs no pool.
//
// The pool is a bounded queue in front of Workers goroutines. A loop never
// waits for it: a frame that finds the queue full is refused at once with
// reason "queue". A frame that waited in the queue past QueueTimeout (the
// enqueue deadline), or past its own deadline, is refused with reason
// "queue" when a worker picks it up; with CoDel, a frame that waited more
// than twice the target while the queue is overloaded is refused with
// reason "codel", and the workers serve the newest frames first, so fresh
// requests meet their deadlines while a standing queue drains. Refusals go
// to the client through the codec's Rejecter, off the loop.
type PoolConfig struct {
	// Handler runs the frames; nil: no pool.
	Handler BlockingHandler

	// Workers is the number of worker goroutines. Default
	// 4 × runtime.GOMAXPROCS(0): workers that block mostly wait.
	Workers int

	// Unordered lets the pool run several frames of one connection at once,
	// so their replies may leave in any order: for protocols whose replies
	// name their request (the envelope's id). The default (false) hands a
	// connection's next frame to the pool only when its previous one is
	// done, and stops reading the connection meanwhile (its frames wait in
	// its input buffer and the kernel, as under backpressure), so replies
	// keep the requests' order; concurrency is then across connections.
	// Measured: without it the pool's newest-first service under overload
	// answered pipelined requests out of order, and a client matching
	// replies in order dropped every connection (docs/OVERLOAD.md).
	Unordered bool

	// QueueLen bounds the frames waiting for a worker, all loops together.
	// Default 1024.
	QueueLen int

	// QueueTimeout is the enqueue deadline: a frame not picked up by a
	// worker within it is refused with reason "queue". Default 1 s;
	// negative: none.
	QueueTimeout time.Duration

	// RequestTimeout is each request's deadline from ingress (the loop turn
	// that decoded it); ServeFrame's ctx carries it. Default 5 s; negative:
	// none (ctx still ends at shutdown).
	RequestTimeout time.Duration

	// Deadline, when set, returns a frame's absolute deadline (an envelope's
	// deadline field, for example) given the ingress time; a zero Time
	// falls back to RequestTimeout. It runs on the loop and must not block
	// or retain frame.
	Deadline func(frame []byte, ingress time.Time) time.Time

	// CoDel, when set, sheds on queueing delay and serves newest first
	// while the queue is overloaded (see admission.CoDel). A zero Target
	// is derived from the workers' measured service time S per frame:
	// target = C/2 with C = 2·S in [0.5 ms, 1 s], so a frame that waited more
	// than C in a standing queue is shed (AdmissionStats.QueueDelayCap
	// shows C); a positive Target is used as it is. With a derived target
	// the frame's priority (AdmissionPolicy.Classify) counts as on the
	// loops: workers take the most urgent class queued first, and a
	// critical frame is refused only past the long cap (8·C), a
	// best-effort one past C/2. And with an AdmissionPolicy without a
	// tenant quota or the loops' own shares (an Admitter without CoDel),
	// the pool shares the frames it serves between tenants as the loops
	// do (reason "fair"; see docs/OVERLOAD.md).
	CoDel *admission.CoDelConfig

	// RetryAfter is the retry-after hint sent with "queue" refusals.
	// Default 10 ms.
	RetryAfter time.Duration
}

func (p PoolConfig) withDefaults() PoolConfig {
	if p.Handler == nil {
		return p
	}
	setDefault(&p.Workers, 4*runtime.GOMAXPROCS(0))
	setDefault(&p.QueueLen, DefaultPoolQueueLen)
	setDefault(&p.QueueTimeout, DefaultPoolQueueTimeout)
	setDefault(&p.RequestTimeout, DefaultPoolRequestTimeout)
	setDefault(&p.RetryAfter, 10*time.Millisecond)
	return p
}

// validate checks a PoolConfig with defaults applied.
func (p PoolConfig) validate() error {
	if p.Handler == nil {
		if p.Workers != 0 || p.QueueLen != 0 || p.CoDel != nil || p.Deadline != nil {
			return fmt.Errorf("%w: Pool: options set without a Handler", ErrInvalidConfig)
		}
		return nil
	}
	switch {
	case p.Workers <= 0:
		return fmt.Errorf("%w: Pool.Workers = %d: must be positive", ErrInvalidConfig, p.Workers)
	case p.QueueLen <= 0:
		return fmt.Errorf("%w: Pool.QueueLen = %d: must be positive", ErrInvalidConfig, p.QueueLen)
	case p.RetryAfter < 0:
		return fmt.Errorf("%w: Pool.RetryAfter = %v: must not be negative", ErrInvalidConfig, p.RetryAfter)
	}
	if p.CoDel != nil {
		if err := p.CoDel.Validate(); err != nil {
			return fmt.Errorf("%w: Pool.CoDel: %w", ErrInvalidConfig, err)
		}
	}
	return nil
}
