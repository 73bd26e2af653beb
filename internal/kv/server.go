package kv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/admission/redisstore"
	"github.com/sluicenet/sluice/protocol/envelope"
	"github.com/sluicenet/sluice/protocol/resp"
	"github.com/sluicenet/sluice/resilience"
	"github.com/sluicenet/sluice/server"
)

// Protocols and idempotency stores by name, as the command line takes them.
const (
	ProtoRESP     = "resp"
	ProtoEnvelope = "envelope"

	IdempotencyMemory = "memory"
	IdempotencyRedis  = "redis"
	IdempotencyNone   = "none"
)

// Default listening addresses per protocol.
const (
	DefaultRESPAddr     = "127.0.0.1:6380"
	DefaultEnvelopeAddr = "127.0.0.1:7380"
)

// Limits the kv codecs frame with, inside the engine's default
// MaxInBufferBytes (1 MiB + 64 KiB): a value of DefaultMaxValueBytes plus
// its key and headers fits one frame.
const (
	respMaxBulkBytes    = 1 << 20
	respMaxCommandBytes = 1 << 20
	envelopeMaxFrame    = 1 << 20
	sweepInterval       = time.Second
	sweepPerShard       = 32 // entries sampled per store shard per sweep
	redisPingTimeout    = 2 * time.Second
	redisKeyPrefix      = "sluice:kv:idem:"
)

// Options configure a kv server: protocol, engine, store, admission and,
// for the envelope, idempotency, the simulated dependency and the worker
// pool. The zero value is a RESP server on DefaultRESPAddr.
type Options struct {
	// Proto is ProtoRESP (default) or ProtoEnvelope.
	Proto string
	// Engine configures the engine; its Codec and Admission are set by
	// Start. An empty Addr means the protocol's default address.
	Engine server.Config
	// Store bounds the key-value store.
	Store Config
	// TenantQuota, if set, charges every frame to its tenant (envelope
	// tenant field, else peer IP) and refuses frames over quota.
	TenantQuota *admission.Quota

	// Idempotency is IdempotencyMemory (default), IdempotencyRedis or
	// IdempotencyNone (envelope only).
	Idempotency string
	// RedisAddr is the Redis of IdempotencyRedis. Default 127.0.0.1:6379.
	RedisAddr string
	// IdempotencyTTL is how long outcomes are kept. Default: the
	// admission store's (24h).
	IdempotencyTTL time.Duration
	// DepLatency and DepErrorRate configure the simulated dependency
	// every envelope mutation calls (Dependency); zero disables it.
	DepLatency   time.Duration
	DepErrorRate float64
	// Retry is the policy for dependency calls; the zero value is three
	// attempts with full jitter, inside a default retry budget, behind a
	// default circuit breaker.
	Retry resilience.RetryPolicy
	// Breaker configures the dependency's circuit breaker.
	Breaker resilience.BreakerConfig
	// Workers, QueueLen and MaxQueueWait size the envelope worker pool
	// (EnvelopeConfig).
	Workers      int
	QueueLen     int
	MaxQueueWait time.Duration

	// Logger receives state changes (breaker transitions, engine gate);
	// nil logs nothing.
	Logger *slog.Logger
}

// Server is a running kv server: the engine and what it serves.
type Server struct {
	Engine   *server.Engine
	Store    *Store
	RESP     *RESPHandler     // set for ProtoRESP
	Envelope *EnvelopeHandler // set for ProtoEnvelope
	Breaker  *resilience.Breaker

	rdb  *redis.Client
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
	err  error
}

// Start builds the server described by opts and starts accepting. The
// caller must call Shutdown.
func Start(opts Options) (*Server, error) {
	store, err := NewStore(opts.Store)
	if err != nil {
		return nil, err
	}
	s := &Server{Store: store, stop: make(chan struct{})}
	cfg := opts.Engine
	cfg.Logger = opts.Logger
	var h server.Handler
	switch opts.Proto {
	case "", ProtoRESP:
		setDefault(&cfg.Addr, DefaultRESPAddr)
		codec := resp.Codec{MaxBulkBytes: respMaxBulkBytes, MaxCommandBytes: respMaxCommandBytes}
		cfg.Codec = resp.ServerCodec{Codec: codec}
		s.RESP = NewRESPHandler(store, codec, nil)
		h = s.RESP
	case ProtoEnvelope:
		setDefault(&cfg.Addr, DefaultEnvelopeAddr)
		cfg.Codec = envelope.Codec{MaxFrameBytes: envelopeMaxFrame}
		if s.Envelope, err = s.newEnvelope(opts, store); err != nil {
			s.closeDeps()
			return nil, err
		}
		h = s.Envelope
	default:
		return nil, fmt.Errorf("%w: protocol %q: want %s or %s", ErrInvalidConfig, opts.Proto, ProtoRESP, ProtoEnvelope)
	}
	if opts.TenantQuota != nil {
		lim, err := admission.NewTenantLimiter(admission.TenantConfig{Quota: *opts.TenantQuota})
		if err != nil {
			s.closeDeps()
			return nil, err
		}
		pol, err := TenantPolicy(lim, opts.Proto == ProtoEnvelope)
		if err != nil {
			s.closeDeps()
			return nil, err
		}
		cfg.Admission = pol
	}
	e, err := server.New(cfg, h)
	if err != nil {
		s.closeDeps()
		return nil, err
	}
	s.Engine = e
	if s.RESP != nil {
		s.RESP.SetEngine(e)
	}
	if err := e.Start(); err != nil {
		s.closeDeps()
		return nil, err
	}
	s.wg.Add(1)
	go s.sweep()
	return s, nil
}

// newEnvelope builds the envelope handler: idempotency store, dependency,
// breaker, budget, retrier.
func (s *Server) newEnvelope(opts Options, store *Store) (*EnvelopeHandler, error) {
	ec := EnvelopeConfig{Store: store, Workers: opts.Workers, QueueLen: opts.QueueLen, MaxQueueWait: opts.MaxQueueWait}
	sc := admission.StoreConfig{TTL: opts.IdempotencyTTL}
	switch opts.Idempotency {
	case "", IdempotencyMemory:
		ms, err := admission.NewMemoryStore(sc)
		if err != nil {
			return nil, err
		}
		ec.Idempotency = ms
	case IdempotencyRedis:
		addr := opts.RedisAddr
		setDefault(&addr, "127.0.0.1:6379")
		// Maintenance notifications are a Redis Cloud/Enterprise feature;
		// in go-redis's default auto mode they leave a goroutine behind
		// after Close (seen by admission's goleak tests against Redis 7).
		redisstore.RouteClientLogs(opts.Logger) // go-redis's own lines through the rate-limited logger, not stderr
		s.rdb = redis.NewClient(&redis.Options{Addr: addr,
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
		ctx, cancel := context.WithTimeout(context.Background(), redisPingTimeout)
		err := s.rdb.Ping(ctx).Err()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("sluice: kv: redis at %s: %w", addr, err)
		}
		rs, err := redisstore.NewStore(s.rdb, redisKeyPrefix, sc)
		if err != nil {
			return nil, err
		}
		ec.Idempotency, ec.IdempotencyBlocks = rs, true
	case IdempotencyNone:
	default:
		return nil, fmt.Errorf("%w: idempotency store %q: want %s, %s or %s", ErrInvalidConfig,
			opts.Idempotency, IdempotencyMemory, IdempotencyRedis, IdempotencyNone)
	}
	dep := &Dependency{Latency: opts.DepLatency, ErrorRate: opts.DepErrorRate}
	ec.Dependency = dep
	bc := opts.Breaker
	if lg := opts.Logger; lg != nil && bc.OnStateChange == nil {
		bc.OnStateChange = func(ch resilience.StateChange) {
			lg.Info("sluice: kv: dependency breaker", "from", ch.From, "to", ch.To, "trips", ch.Trips, "open_until", ch.OpenUntil)
		}
	}
	br, err := resilience.NewBreaker(bc)
	if err != nil {
		return nil, err
	}
	budget, err := resilience.NewBudget(resilience.BudgetConfig{})
	if err != nil {
		return nil, err
	}
	s.Breaker = br
	ec.Retrier = &resilience.Retrier{Policy: opts.Retry, Budget: budget, Breaker: br}
	return NewEnvelopeHandler(ec)
}

// sweep removes expired keys once a second (the Admitter sweeps idle
// tenants).
func (s *Server) sweep() {
	defer s.wg.Done()
	t := time.NewTicker(sweepInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.Store.Sweep(now.UnixNano(), sweepPerShard)
		}
	}
}

// Addr returns the listening address.
func (s *Server) Addr() net.Addr { return s.Engine.Addr() }

// Shutdown stops the engine (bounded by ctx, see server.Engine.Shutdown),
// then the worker pool, the sweeper and the Redis client. Replies a worker
// finishes after the engine closed its connection are dropped. It returns the
// engine's error; a second call returns the same.
func (s *Server) Shutdown(ctx context.Context) error {
	s.once.Do(func() {
		s.err = s.Engine.Shutdown(ctx)
		s.closeDeps()
	})
	return s.err
}

// Done is closed when the engine has stopped (a handler returned
// server.Shutdown, or Shutdown was called).
func (s *Server) Done() <-chan struct{} { return s.Engine.Done() }

// closeDeps stops what Start started besides the engine.
func (s *Server) closeDeps() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.wg.Wait()
	if s.Envelope != nil {
		s.Envelope.Close()
	}
	if s.rdb != nil {
		if err := s.rdb.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
			s.err = errors.Join(s.err, err)
		}
	}
}
