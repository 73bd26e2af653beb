package kv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/protocol/envelope"
	"github.com/sluicenet/sluice/resilience"
	"github.com/sluicenet/sluice/server"
)

// Defaults for zero EnvelopeConfig fields.
const (
	// DefaultWorkers is the size of the worker pool: enough to overlap a
	// few slow dependency calls on a small machine.
	DefaultWorkers = 8
	// DefaultQueueLen bounds the tasks waiting for a worker.
	DefaultQueueLen = 256
	// DefaultMaxQueueWait sheds a task that waited this long for a worker:
	// it would mostly spend its caller's deadline in our queue.
	DefaultMaxQueueWait = 250 * time.Millisecond
	// DefaultBusyRetryAfter is the retry hint sent with a shed request.
	DefaultBusyRetryAfter = 50 * time.Millisecond
	// DefaultOpTimeout bounds a worker request that carries no deadline.
	DefaultOpTimeout = 2 * time.Second
	// DefaultStoreTimeout bounds recording an outcome in the idempotency
	// store (Finish, Abandon), which happens after the request's effect and
	// so is not cut short by the request's deadline.
	DefaultStoreTimeout = time.Second
	// DefaultStoreRetryAfter is the retry hint when the idempotency store
	// cannot be reached.
	DefaultStoreRetryAfter = time.Second
)

// Methods of the kv envelope protocol.
const (
	MethodGet    = "GET"
	MethodPut    = "PUT"
	MethodDelete = "DELETE"
	MethodIncr   = "INCR"
	MethodPing   = "PING"
)

// method ids.
type method uint8

const (
	mUnknown method = iota
	mGet
	mPut
	mDelete
	mIncr
	mPing
)

func methodOf(b []byte) method {
	switch string(b) {
	case MethodGet:
		return mGet
	case MethodPut:
		return mPut
	case MethodDelete:
		return mDelete
	case MethodIncr:
		return mIncr
	case MethodPing:
		return mPing
	}
	return mUnknown
}

func (m method) mutating() bool { return m == mPut || m == mDelete || m == mIncr }

// Reply payloads and reasons.
const (
	reasonNoSuchKey     = "sluice: kv: no such key"
	reasonUnknownMethod = "sluice: kv: unknown method"
	reasonNotRequest    = "sluice: kv: not a request"
	reasonExpired       = "sluice: kv: deadline expired before work started"
	reasonQueueFull     = "sluice: kv: worker queue full"
	reasonQueueWait     = "sluice: kv: waited too long for a worker"
	reasonShutdown      = "sluice: kv: shutting down"
	reasonInProgress    = "sluice: kv: a request with this idempotency key is in progress"
	reasonMismatch      = "sluice: kv: idempotency key reused with a different payload"
	reasonDepTimeout    = "sluice: kv: deadline passed calling the dependency"
	reasonDepOpen       = "sluice: kv: dependency circuit breaker open"
	reasonDepBudget     = "sluice: kv: dependency retry budget exhausted"
	reasonDepFailed     = "sluice: kv: dependency failed"
)

// Constant reply payloads (read-only; the envelope encoders copy them).
var (
	payloadNoSuchKey     = []byte(reasonNoSuchKey)
	payloadUnknownMethod = []byte(reasonUnknownMethod)
	payloadPong          = []byte("PONG")
	payloadOne           = []byte("1")
	payloadZero          = []byte("0")
)

// EnvelopeConfig configures an EnvelopeHandler. Store is required; every
// other zero field takes the default documented on it.
type EnvelopeConfig struct {
	// Store holds the data.
	Store *Store
	// Idempotency, if set, records the outcome of every mutation (PUT,
	// DELETE, INCR) that carries an idempotency key, so a retry is
	// answered from it (FlagReplayed) instead of running again. Nil:
	// keys are ignored.
	Idempotency admission.Store
	// IdempotencyBlocks says Idempotency may block on the network (the
	// Redis store): keyed mutations then run in the worker pool. The
	// in-memory store does not block and is consulted on the loop.
	IdempotencyBlocks bool
	// Dependency, if enabled, is called through Retrier by every mutation
	// before its effect, in the worker pool.
	Dependency *Dependency
	// Retrier wraps dependency calls (its Breaker and Budget, if set,
	// guard the dependency). Nil: a Retrier with the default policy and no
	// budget or breaker.
	Retrier *resilience.Retrier
	// Workers is the worker pool size. Default 8.
	Workers int
	// QueueLen bounds the requests waiting for a worker; a request that
	// finds it full is rejected with StatusUnavailable and BusyRetryAfter.
	// Default 256.
	QueueLen int
	// MaxQueueWait sheds a request that waited longer for a worker
	// (StatusUnavailable, BusyRetryAfter). Default 250ms.
	MaxQueueWait time.Duration
	// BusyRetryAfter is the retry hint of a shed request. Default 50ms.
	BusyRetryAfter time.Duration
	// OpTimeout bounds a worker request without a deadline. Default 2s.
	OpTimeout time.Duration
	// StoreTimeout bounds Finish and Abandon on the idempotency store.
	// Default 1s.
	StoreTimeout time.Duration
	// Clock is the wall clock (deadlines, expiry, the idempotency store).
	// Nil: time.Now.
	Clock func() time.Time
}

func (c EnvelopeConfig) withDefaults() EnvelopeConfig {
	setDefault(&c.Workers, DefaultWorkers)
	setDefault(&c.QueueLen, DefaultQueueLen)
	setDefault(&c.MaxQueueWait, DefaultMaxQueueWait)
	setDefault(&c.BusyRetryAfter, DefaultBusyRetryAfter)
	setDefault(&c.OpTimeout, DefaultOpTimeout)
	setDefault(&c.StoreTimeout, DefaultStoreTimeout)
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Retrier == nil {
		c.Retrier = &resilience.Retrier{}
	}
	return c
}

func setDefault[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}

// Validate reports a missing Store or out-of-range fields.
func (c EnvelopeConfig) Validate() error {
	d := c.withDefaults()
	switch {
	case c.Store == nil:
		return fmt.Errorf("%w: EnvelopeConfig.Store is required", ErrInvalidConfig)
	case d.Workers < 1 || d.QueueLen < 1:
		return fmt.Errorf("%w: Workers %d and QueueLen %d must be positive", ErrInvalidConfig, d.Workers, d.QueueLen)
	case d.MaxQueueWait < 0 || d.BusyRetryAfter < 0 || d.OpTimeout < 0 || d.StoreTimeout < 0:
		return fmt.Errorf("%w: durations must not be negative", ErrInvalidConfig)
	case c.Dependency != nil && (c.Dependency.ErrorRate < 0 || c.Dependency.ErrorRate > 1 || c.Dependency.Latency < 0):
		return fmt.Errorf("%w: Dependency ErrorRate %v not in [0, 1] or negative Latency", ErrInvalidConfig, c.Dependency.ErrorRate)
	}
	return d.Retrier.Validate()
}

// EnvelopeStats counts what an EnvelopeHandler did.
type EnvelopeStats struct {
	Requests    uint64 // request frames
	BadRequests uint64 // frames that did not parse or named no method
	Queued      uint64 // requests run in the worker pool
	QueueFull   uint64 // rejected: worker queue full
	Shed        uint64 // rejected: waited longer than MaxQueueWait
	Expired     uint64 // rejected: deadline passed before work started
	Effects     uint64 // mutations applied to the store
	Replays     uint64 // answered from the idempotency store
	Conflicts   uint64 // idempotency key in progress or reused with another payload
	DepFailures uint64 // mutations refused because the dependency failed
	WriteErrors uint64 // replies that could not be queued (connection closed)
	QueueLen    int    // tasks waiting now
}

type envCounters struct {
	requests, badRequests, queued, queueFull, shed, expired atomic.Uint64
	effects, replays, conflicts, depFailures, writeErrors   atomic.Uint64
}

// EnvelopeHandler serves the kv methods over the sluice envelope: GET,
// PUT, DELETE, INCR and PING (payloads in payload.go). It implements
// server.Handler.
//
// Requests that cannot block run inline on the loop: reads always, and
// mutations when no dependency is configured and the idempotency store is
// in memory. Others are copied into a bounded worker pool (Config.Workers,
// QueueLen, MaxQueueWait) and answered from the worker with Conn.Write. A
// deadline is honoured twice: a request whose deadline passed before work
// started is rejected with StatusTimeout, on the loop and again when a
// worker picks it up; the dependency call runs within it.
//
// Mutations with an idempotency key claim it first: a key already done is
// answered with the stored outcome and FlagReplayed; a key in progress
// gets a StatusConflict reject with retry-after; a key reused with a
// different payload gets a StatusConflict reject without one. Outcomes the
// request determines (OK, bad request) are recorded; a failure with no
// effect (dependency down, store full) abandons the key so a retry runs.
//
// Call Close after the engine has stopped, to stop the workers.
type EnvelopeHandler struct {
	cfg   EnvelopeConfig
	pool  *pool
	stats envCounters
}

// NewEnvelopeHandler validates cfg and starts the worker pool.
func NewEnvelopeHandler(cfg EnvelopeConfig) (*EnvelopeHandler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h := &EnvelopeHandler{cfg: cfg.withDefaults()}
	h.pool = newPool(h.cfg.Workers, h.cfg.QueueLen, h.runTask, h.dropTask)
	return h, nil
}

// Close stops the worker pool: running requests finish, queued ones are
// answered with StatusUnavailable, and Close returns when every worker has
// exited. Requests arriving afterwards that need a worker get the same
// answer.
func (h *EnvelopeHandler) Close() { h.pool.close() }

// Stats returns a snapshot of the handler's counters.
func (h *EnvelopeHandler) Stats() EnvelopeStats {
	s := &h.stats
	return EnvelopeStats{
		Requests: s.requests.Load(), BadRequests: s.badRequests.Load(), Queued: s.queued.Load(),
		QueueFull: s.queueFull.Load(), Shed: s.shed.Load(), Expired: s.expired.Load(),
		Effects: s.effects.Load(), Replays: s.replays.Load(), Conflicts: s.conflicts.Load(),
		DepFailures: s.depFailures.Load(), WriteErrors: s.writeErrors.Load(), QueueLen: h.pool.queued(),
	}
}

// envConn is a connection's reply scratch space.
type envConn struct {
	out, scratch []byte
}

// OnOpen gives the connection its scratch space.
func (h *EnvelopeHandler) OnOpen(c *server.Conn) server.Action {
	c.SetContext(&envConn{out: make([]byte, 0, initOutBytes)})
	return server.None
}

// OnClose does nothing: replies from workers to a closed connection are
// dropped by the engine.
func (h *EnvelopeHandler) OnClose(*server.Conn, error) {}

// OnFrame answers one request inline or hands it to the worker pool.
func (h *EnvelopeHandler) OnFrame(c *server.Conn, frame []byte) server.Action {
	st, _ := c.Context().(*envConn)
	if st == nil {
		st = &envConn{}
		c.SetContext(st)
	}
	now := h.cfg.Clock()
	out, t := h.handle(st.out[:0], &st.scratch, c, frame, now)
	if t != nil {
		switch h.pool.submit(t) {
		case submitted:
			h.stats.queued.Add(1)
		case submitFull:
			h.stats.queueFull.Add(1)
			out = envelope.AppendReject(out, t.msg.RequestID, envelope.StatusUnavailable, h.cfg.BusyRetryAfter, reasonQueueFull)
			t.free()
		case submitClosed:
			out = envelope.AppendReject(out, t.msg.RequestID, envelope.StatusUnavailable, h.cfg.BusyRetryAfter, reasonShutdown)
			t.free()
		}
	}
	if len(out) > 0 {
		if err := c.Write(out); err != nil {
			h.stats.writeErrors.Add(1)
			_ = c.CloseWithError(err)
		}
	}
	if cap(out) <= keepOutBytes {
		st.out = out[:0]
	} else {
		st.out = make([]byte, 0, initOutBytes)
	}
	return server.None
}

// Handle answers one request frame read at now, transport-free: it
// appends the reply to dst, or, when the request must run in the worker
// pool, returns dst unchanged and needsWorker true. It is OnFrame without
// the pool, for tests.
func (h *EnvelopeHandler) Handle(dst, frame []byte, now time.Time) (out []byte, needsWorker bool) {
	var scratch []byte
	out, t := h.handle(dst, &scratch, nil, frame, now)
	if t != nil {
		t.free()
		return dst, true
	}
	return out, false
}

// handle is OnFrame's core: a reply appended to dst, or a task to queue.
func (h *EnvelopeHandler) handle(dst []byte, scratch *[]byte, c *server.Conn, frame []byte, now time.Time) ([]byte, *task) {
	h.stats.requests.Add(1)
	var m envelope.Message
	if err := envelope.Parse(frame, &m); err != nil {
		h.stats.badRequests.Add(1)
		id, _ := envelope.PeekRequestID(frame)
		return envelope.AppendReject(dst, id, envelope.StatusBadRequest, 0, err.Error()), nil
	}
	if m.Type != envelope.TypeRequest {
		h.stats.badRequests.Add(1)
		return envelope.AppendReject(dst, m.RequestID, envelope.StatusBadRequest, 0, reasonNotRequest), nil
	}
	deadline, _ := m.Deadline(now)
	if !deadline.IsZero() && !now.Before(deadline) {
		h.stats.expired.Add(1)
		return envelope.AppendReject(dst, m.RequestID, envelope.StatusTimeout, 0, reasonExpired), nil
	}
	op := methodOf(m.Method)
	if op == mUnknown {
		h.stats.badRequests.Add(1)
		return envelope.AppendReject(dst, m.RequestID, envelope.StatusBadRequest, 0, reasonUnknownMethod), nil
	}
	keyed := op.mutating() && len(m.IdempotencyKey) > 0 && h.cfg.Idempotency != nil
	if op.mutating() && (h.cfg.Dependency.Enabled() || (keyed && h.cfg.IdempotencyBlocks)) {
		t, err := newTask(c, frame, now, deadline)
		if err != nil { // cannot happen: the frame parsed above
			return envelope.AppendReject(dst, m.RequestID, envelope.StatusInternal, 0, err.Error()), nil
		}
		return dst, t
	}
	return h.serve(context.Background(), dst, scratch, &m, op, now), nil
}

// runTask runs a queued request on a worker and writes its reply.
func (h *EnvelopeHandler) runTask(t *task) {
	t.out = h.answerTask(t, h.cfg.Clock())
	h.write(t.c, t.out)
	t.free()
}

// answerTask runs a queued request picked up at now and returns its reply
// (in t.out): the deadline and the queue wait are checked before any work.
func (h *EnvelopeHandler) answerTask(t *task, now time.Time) []byte {
	m := &t.msg
	switch {
	case !t.deadline.IsZero() && !now.Before(t.deadline):
		h.stats.expired.Add(1)
		return envelope.AppendReject(t.out[:0], m.RequestID, envelope.StatusTimeout, 0, reasonExpired)
	case h.cfg.MaxQueueWait > 0 && now.Sub(t.arrived) > h.cfg.MaxQueueWait:
		h.stats.shed.Add(1)
		return envelope.AppendReject(t.out[:0], m.RequestID, envelope.StatusUnavailable, h.cfg.BusyRetryAfter, reasonQueueWait)
	}
	deadline := now.Add(h.cfg.OpTimeout)
	if !t.deadline.IsZero() && t.deadline.Before(deadline) {
		deadline = t.deadline
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	return h.serve(ctx, t.out[:0], &t.scratch, m, methodOf(m.Method), now)
}

// dropTask answers a queued request the pool will not run.
func (h *EnvelopeHandler) dropTask(t *task) {
	t.out = envelope.AppendReject(t.out[:0], t.msg.RequestID, envelope.StatusUnavailable, h.cfg.BusyRetryAfter, reasonShutdown)
	h.write(t.c, t.out)
	t.free()
}

// write queues a worker's reply. A reply that cannot be queued closes the
// connection (its client would otherwise wait for its deadline); a closed
// connection just drops it.
func (h *EnvelopeHandler) write(c *server.Conn, out []byte) {
	if c == nil {
		return
	}
	if err := c.Write(out); err != nil {
		h.stats.writeErrors.Add(1)
		if !errors.Is(err, server.ErrClosed) && !errors.Is(err, server.ErrEngineClosed) {
			_ = c.CloseWithError(err)
		}
	}
}

// serve runs a request (inline or on a worker) and appends its reply.
func (h *EnvelopeHandler) serve(ctx context.Context, dst []byte, scratch *[]byte, m *envelope.Message, op method, now time.Time) []byte {
	if !op.mutating() || len(m.IdempotencyKey) == 0 || h.cfg.Idempotency == nil {
		if op.mutating() {
			if r, ok := h.callDependency(ctx, now); !ok {
				return r.append(dst, m.RequestID)
			}
		}
		st, payload := h.apply(op, m.Payload, scratch, now)
		return envelope.AppendResponse(dst, m.RequestID, st, payload)
	}
	return h.serveKeyed(ctx, dst, scratch, m, op, now)
}

// serveKeyed runs a mutation under its idempotency key.
func (h *EnvelopeHandler) serveKeyed(ctx context.Context, dst []byte, scratch *[]byte, m *envelope.Message, op method, now time.Time) []byte {
	idem, key := h.cfg.Idempotency, m.IdempotencyKey
	claim, err := idem.Claim(ctx, now, key, admission.FingerprintOf(m.Method, m.Payload))
	if err != nil {
		return storeErrorReply(err, h.cfg.BusyRetryAfter).append(dst, m.RequestID)
	}
	switch claim.State {
	case admission.ClaimDone:
		h.stats.replays.Add(1)
		reply := envelope.Message{Type: envelope.TypeResponse, Flags: envelope.FlagReplayed, RequestID: m.RequestID,
			Status: envelope.StatusFromHTTP(claim.Status), Payload: claim.Response}
		return envelope.AppendMessage(dst, &reply)
	case admission.ClaimInProgress:
		h.stats.conflicts.Add(1)
		return envelope.AppendReject(dst, m.RequestID, envelope.StatusConflict, max(claim.RetryAfter, time.Millisecond), reasonInProgress)
	case admission.ClaimMismatch:
		h.stats.conflicts.Add(1)
		return envelope.AppendReject(dst, m.RequestID, envelope.StatusConflict, 0, reasonMismatch)
	}
	if r, ok := h.callDependency(ctx, now); !ok {
		h.abandon(key, claim.Token)
		return r.append(dst, m.RequestID)
	}
	st, payload := h.apply(op, m.Payload, scratch, now)
	if st != envelope.StatusOK && st != envelope.StatusBadRequest {
		h.abandon(key, claim.Token) // no effect, and a retry may succeed
		return envelope.AppendResponse(dst, m.RequestID, st, payload)
	}
	sctx, cancel := h.storeContext()
	// A failed Finish leaves the key in progress until its lease ends; the
	// effect happened, so the caller still gets its answer.
	_ = idem.Finish(sctx, h.cfg.Clock(), key, claim.Token, st.HTTPStatus(), payload)
	cancel()
	return envelope.AppendResponse(dst, m.RequestID, st, payload)
}

// abandon releases a claim whose request had no effect.
func (h *EnvelopeHandler) abandon(key []byte, token uint64) {
	ctx, cancel := h.storeContext()
	_ = h.cfg.Idempotency.Abandon(ctx, h.cfg.Clock(), key, token)
	cancel()
}

// storeContext bounds a Finish or Abandon by StoreTimeout, independently
// of the request's deadline. A store that does not block needs no bound
// (and the loop no timer).
func (h *EnvelopeHandler) storeContext() (context.Context, context.CancelFunc) {
	if !h.cfg.IdempotencyBlocks {
		return context.Background(), func() {}
	}
	return context.WithTimeout(context.Background(), h.cfg.StoreTimeout)
}

// apply runs op against the store and returns the response status and
// payload (which may alias *scratch).
func (h *EnvelopeHandler) apply(op method, p []byte, scratch *[]byte, now time.Time) (envelope.Status, []byte) {
	t := now.UnixNano()
	s := h.cfg.Store
	switch op {
	case mGet:
		v, ok := s.Get((*scratch)[:0], p, t, nil)
		*scratch = v
		if !ok {
			return envelope.StatusBadRequest, payloadNoSuchKey
		}
		return envelope.StatusOK, v
	case mPing:
		return envelope.StatusOK, payloadPong
	case mPut:
		key, val, err := DecodePut(p)
		if err != nil {
			return envelope.StatusBadRequest, []byte(err.Error())
		}
		if _, err := s.Set(key, val, t, SetOptions{}); err != nil {
			return storeErrorStatus(err), []byte(err.Error())
		}
		h.stats.effects.Add(1)
		return envelope.StatusOK, nil
	case mDelete:
		h.stats.effects.Add(1)
		if s.Delete(p, t) {
			return envelope.StatusOK, payloadOne
		}
		return envelope.StatusOK, payloadZero
	case mIncr:
		v, err := s.Incr(p, 1, t)
		if err != nil {
			return storeErrorStatus(err), []byte(err.Error())
		}
		h.stats.effects.Add(1)
		*scratch = strconv.AppendInt((*scratch)[:0], v, 10)
		return envelope.StatusOK, *scratch
	}
	return envelope.StatusBadRequest, payloadUnknownMethod
}

// storeErrorStatus is the status of a Store error: the request's fault
// (not an integer, too large) or the server's (full).
func storeErrorStatus(err error) envelope.Status {
	if errors.Is(err, ErrStoreFull) {
		return envelope.StatusUnavailable
	}
	return envelope.StatusBadRequest
}

// rejectReply is a reject to send.
type rejectReply struct {
	status     envelope.Status
	retryAfter time.Duration
	reason     string
}

func (r rejectReply) append(dst []byte, id uint64) []byte {
	return envelope.AppendReject(dst, id, r.status, r.retryAfter, r.reason)
}

// storeErrorReply is the reject for an idempotency store failure: a bad
// key is the caller's fault, anything else (Redis down, store full) is
// ours and worth a retry.
func storeErrorReply(err error, busy time.Duration) rejectReply {
	if errors.Is(err, admission.ErrEmptyKey) || errors.Is(err, admission.ErrKeyTooLong) {
		return rejectReply{envelope.StatusBadRequest, 0, err.Error()}
	}
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return rejectReply{envelope.StatusTimeout, 0, "sluice: kv: idempotency store: " + err.Error()}
	}
	return rejectReply{envelope.StatusUnavailable, max(busy, DefaultStoreRetryAfter), "sluice: kv: idempotency store: " + err.Error()}
}

// callDependency calls the dependency, if enabled, through the Retrier,
// and reports false with the reject to send when it failed.
func (h *EnvelopeHandler) callDependency(ctx context.Context, now time.Time) (rejectReply, bool) {
	d := h.cfg.Dependency
	if !d.Enabled() {
		return rejectReply{}, true
	}
	err := h.cfg.Retrier.Do(ctx, d.Call)
	if err == nil {
		return rejectReply{}, true
	}
	h.stats.depFailures.Add(1)
	switch {
	case errors.Is(err, resilience.ErrBreakerOpen):
		wait := h.cfg.BusyRetryAfter
		if b := h.cfg.Retrier.Breaker; b != nil {
			if until := b.Snapshot(now).OpenUntil; until.After(now) {
				wait = until.Sub(now)
			}
		}
		return rejectReply{envelope.StatusUnavailable, wait, reasonDepOpen}, false
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return rejectReply{envelope.StatusTimeout, 0, reasonDepTimeout}, false
	case errors.Is(err, resilience.ErrBudgetExhausted):
		return rejectReply{envelope.StatusUnavailable, h.cfg.BusyRetryAfter, reasonDepBudget}, false
	}
	return rejectReply{envelope.StatusUnavailable, h.cfg.BusyRetryAfter, reasonDepFailed}, false
}
