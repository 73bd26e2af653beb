package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice/protocol/envelope"
	"github.com/sluicenet/sluice/resilience"
)

// Request is one logical call.
type Request struct {
	// Method names the operation (at most 64 bytes).
	Method string
	// Payload is the request body; the client does not keep it after the
	// call returns.
	Payload []byte
	// Tenant overrides Config.Tenant when set.
	Tenant string
	// Priority is the request's class for the server's shedding.
	Priority envelope.Priority
	// Idempotent declares the call safe to repeat: it may be retried after
	// any retryable failure and hedged. Reads usually are.
	Idempotent bool
	// IdempotencyKey, if set, is sent on every attempt of this call; if
	// empty and the call is not idempotent, the client generates one per
	// call (unless Config.NoAutoIdempotencyKey), so that a retry the
	// server already ran is answered from its idempotency store.
	IdempotencyKey string
}

// Response is a successful call's answer.
type Response struct {
	// Payload is the response body, a copy the caller owns.
	Payload []byte
	// Replayed reports that the server answered from its idempotency store
	// without running the handler again.
	Replayed bool
	// Attempts is how many attempts the call started, hedges included.
	Attempts int
}

// Client calls one sluice envelope server. It keeps a small pool of
// pipelined connections (responses are matched by request id and may
// arrive in any order), gives each call one absolute deadline across all
// its attempts, and applies the resilience policies of its Config: retries
// within a budget, adaptive client-side throttling, a breaker, hedging for
// idempotent calls, a cap on attempts in flight. A Client is safe for
// concurrent use.
type Client struct {
	cfg      Config
	pool     *pool
	retrier  resilience.Retrier
	hedger   *resilience.Hedger
	bulkhead *resilience.Bulkhead
	throttle *resilience.Throttle // nil with Config.NoThrottle
	clock    resilience.Clock
	ids      atomic.Uint64
	closed   atomic.Bool
}

// New validates cfg and returns a Client. Connections are dialed on first
// use.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	budget := cfg.Budget
	if budget == nil {
		var err error
		if budget, err = resilience.NewBudget(resilience.BudgetConfig{}); err != nil {
			return nil, err
		}
	}
	bulkhead, err := resilience.NewBulkhead(resilience.BulkheadConfig{MaxConcurrent: cfg.maxInFlight(), MaxWaiting: cfg.MaxWaiting})
	if err != nil {
		return nil, err
	}
	dial := cfg.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext // dialer.dialContext bounds it
	}
	dl := &dialer{dial: dial, timeout: cfg.dialTimeout(), tls: cfg.tlsConfig()}
	if cfg.Retry.Latency == nil {
		cfg.Retry.Latency = resilience.NewLatencyTracker(0)
	}
	c := &Client{
		cfg:      cfg,
		pool:     newPool(cfg.Addr, cfg.conns(), cfg.maxFrameBytes(), dl.dialContext),
		retrier:  resilience.Retrier{Policy: cfg.Retry, Budget: budget, Breaker: cfg.Breaker, Clock: cfg.Clock},
		bulkhead: bulkhead,
		clock:    cfg.Clock,
	}
	if c.clock == nil {
		c.clock = resilience.SystemClock
	}
	c.cfg.Budget = budget
	if !cfg.NoThrottle {
		if c.throttle = cfg.Throttle; c.throttle == nil {
			if c.throttle, err = resilience.NewThrottle(resilience.ThrottleConfig{}); err != nil {
				return nil, err
			}
		}
	}
	if cfg.Hedge != nil {
		hc := *cfg.Hedge
		hc.Budget, hc.Clock = budget, cfg.Clock
		if c.hedger, err = resilience.NewHedger(hc); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Budget returns the retry budget the client draws on.
func (c *Client) Budget() *resilience.Budget { return c.cfg.Budget }

// Call is Do for a plain call: it returns the response payload.
func (c *Client) Call(ctx context.Context, method string, payload []byte) ([]byte, error) {
	resp, err := c.Do(ctx, &Request{Method: method, Payload: payload})
	if err != nil {
		return nil, err
	}
	return resp.Payload, nil
}

// Do runs one logical call. Its deadline is ctx's, or Config.Timeout from
// now when ctx has none, and holds across every attempt; each attempt tells
// the server the time left. Idempotent calls are hedged when Config.Hedge is
// set, and retried otherwise. A failure is a *resilience.RetryError whose
// Err is the last attempt's error (a *StatusError when the server answered);
// a deadline that passes matches os.ErrDeadlineExceeded; an attempt the
// client's throttle refused matches ErrThrottled.
func (c *Client) Do(ctx context.Context, req *Request) (*Response, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if req == nil {
		return nil, fmt.Errorf("%w: nil", ErrInvalidRequest)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.timeout())
		defer cancel()
	}
	lc := logicalCall{req: req, payload: req.Payload, tenant: req.Tenant, key: req.IdempotencyKey}
	if lc.tenant == "" {
		lc.tenant = c.cfg.Tenant
	}
	if lc.key == "" && !req.Idempotent && !c.cfg.NoAutoIdempotencyKey {
		lc.key = newKey()
	}
	lc.safe = req.Idempotent || lc.key != ""
	if err := c.check(&lc); err != nil {
		return nil, err
	}
	var attempts atomic.Int32
	if req.Idempotent && c.hedger != nil {
		// A losing hedge may still be encoding when Do returns: give the
		// attempts a payload the caller cannot change under them.
		lc.payload = bytes.Clone(req.Payload)
		resp, err := resilience.Hedge(ctx, c.hedger, func(ctx context.Context, _ int) (*Response, error) {
			attempts.Add(1)
			return c.gatedAttempt(ctx, &lc)
		})
		if resp != nil {
			resp.Attempts = int(attempts.Load())
		}
		return resp, err
	}
	var resp *Response
	err := c.retrier.Do(ctx, func(ctx context.Context) error {
		attempts.Add(1)
		r, err := c.attempt(ctx, &lc)
		resp = r
		return err
	})
	if err != nil {
		return nil, err
	}
	resp.Attempts = int(attempts.Load())
	return resp, nil
}

// logicalCall is what stays fixed across a call's attempts.
type logicalCall struct {
	req     *Request
	payload []byte
	tenant  string
	key     string
	safe    bool // idempotent or keyed: may be repeated whatever happened
}

// check validates the request once, before any attempt.
func (c *Client) check(lc *logicalCall) error {
	m := c.message(lc, 1, time.Second)
	if err := m.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return nil
}

func (c *Client) message(lc *logicalCall, id uint64, left time.Duration) envelope.Message {
	m := envelope.Message{
		Type:           envelope.TypeRequest,
		RequestID:      id,
		Priority:       lc.req.Priority,
		Method:         []byte(lc.req.Method),
		Tenant:         []byte(lc.tenant),
		IdempotencyKey: []byte(lc.key),
		Payload:        lc.payload,
	}
	if lc.req.Idempotent {
		m.Flags |= envelope.FlagIdempotent
	}
	m.SetTimeout(left)
	return m
}

// gatedAttempt is attempt behind the breaker, for hedged calls (the
// Retrier gates retried calls itself).
func (c *Client) gatedAttempt(ctx context.Context, lc *logicalCall) (*Response, error) {
	br := c.cfg.Breaker
	if br == nil {
		return c.attempt(ctx, lc)
	}
	start := c.clock.Now()
	t, err := br.Allow(start)
	if err != nil {
		return nil, err
	}
	resp, err := c.attempt(ctx, lc)
	end := c.clock.Now()
	o := resilience.Classify(err).Outcome()
	if errors.Is(err, resilience.ErrThrottled) {
		o = resilience.OutcomeIgnored // as Retrier.Do: nothing reached the server
	}
	br.Record(end, t, end.Sub(start), o)
	return resp, err
}

// send sends the request once, on a pooled connection, and turns the
// answer into a Response or an error that classifies itself.
func (c *Client) send(ctx context.Context, lc *logicalCall) (*Response, error) {
	if err := c.bulkhead.Acquire(ctx); err != nil {
		return nil, err
	}
	defer c.bulkhead.Release()
	if c.cfg.AttemptTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.AttemptTimeout)
		defer cancel()
	}
	cn, err := c.pool.get(ctx)
	if err != nil {
		return nil, err // nothing was sent
	}
	left := time.Duration(0)
	if d, ok := ctx.Deadline(); ok {
		left = time.Until(d)
	}
	m := c.message(lc, c.ids.Add(1), left)
	res, sent, err := cn.roundTrip(ctx, &m)
	if err != nil {
		if sent && !lc.safe && !errors.Is(err, context.Canceled) && !errors.Is(err, ErrClosed) {
			// The server may have run it: not safe to repeat.
			err = resilience.WithClass(err, resilience.ClassFailed, 0)
		}
		return nil, err
	}
	if res.typ == envelope.TypeResponse && res.status == envelope.StatusOK {
		return &Response{Payload: res.payload, Replayed: res.flags&envelope.FlagReplayed != 0}, nil
	}
	rejected := res.typ == envelope.TypeReject
	se := &StatusError{
		Status:         res.status,
		Rejected:       rejected,
		NoRetry:        res.flags&envelope.FlagNoRetry != 0,
		RetryAfterHint: res.retryAfter,
		Payload:        boundedCopy(res.payload, maxErrorPayloadBytes),
		class:          statusClass(res.status, res.flags, rejected, lc.safe),
	}
	return nil, se
}

// Close closes every connection; calls in flight fail with ErrClosed.
// Close waits for the connections' reader goroutines to exit.
func (c *Client) Close() error {
	c.closed.Store(true)
	c.pool.close()
	return nil
}

// dialer dials one connection for the pool: the transport's dial and, with
// TLS, the handshake, both within timeout and the caller's context. Either
// failing is a *DialError.
type dialer struct {
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	timeout time.Duration
	tls     *tls.Config // nil: plaintext
}

func (d *dialer) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	// One bound for the connect and the handshake: a server that accepts
	// and never answers the ClientHello costs one dial timeout, as one
	// that never accepts does.
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	nc, err := d.dial(ctx, network, addr)
	if err != nil {
		return nil, &DialError{Addr: addr, Err: err}
	}
	if d.tls == nil {
		return nc, nil
	}
	tc := tls.Client(nc, d.tls)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = nc.Close()
		return nil, &DialError{Addr: addr, Handshake: true, Err: err}
	}
	return tc, nil
}

// boundedCopy copies at most n bytes of b (nil when b is empty).
func boundedCopy(b []byte, n int) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b[:min(len(b), n)]...)
}

// newKey returns a random 128-bit idempotency key in hex.
func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b[:])
}

// ctxErr is ctx's error, with an expired deadline reported as ErrTimeout.
func ctxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ErrTimeout
	}
	return ctx.Err()
}
