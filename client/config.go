package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/protocol/envelope"
	"github.com/sluicenet/sluice/resilience"
)

// Defaults used where a Config field is zero.
const (
	DefaultConns          = 2
	DefaultMaxInFlight    = 1024
	DefaultTimeout        = 5 * time.Second
	DefaultDialTimeout    = time.Second
	maxConns              = 1024
	readBufferBytes       = 64 << 10
	keepWriteBufferBytes  = 64 << 10
	responseChannelBuffer = 1
	// minWriteWindow is the least time a write gets before its deadline
	// (see conn.write).
	minWriteWindow = 50 * time.Millisecond
)

// Config configures a Client. The zero value (with Addr set) keeps two
// pipelined connections, allows 1024 calls in flight, gives each call 5 s
// unless its context says otherwise, retries up to 3 attempts within a
// default retry budget, throttles itself adaptively (K = 2 over two
// minutes), generates an idempotency key for every call not marked
// idempotent, and has no breaker and no hedging.
type Config struct {
	// Addr is the server's "host:port". Required.
	Addr string
	// Conns is how many connections the pool keeps; calls are pipelined on
	// them. 0 means 2.
	Conns int
	// MaxInFlight caps the attempts in flight across the pool (a bulkhead
	// for this dependency); 0 means 1024.
	MaxInFlight int
	// MaxWaiting is how many attempts may wait for an in-flight slot; 0
	// means none: an attempt over the cap fails at once with
	// resilience.ErrBulkheadFull.
	MaxWaiting int
	// Timeout is the call deadline when the context has none; 0 means 5 s.
	// A call has one absolute deadline across all its attempts.
	Timeout time.Duration
	// AttemptTimeout, if set, also bounds each attempt, so a response that
	// never comes costs one attempt, not the whole deadline.
	AttemptTimeout time.Duration
	// DialTimeout bounds each dial, the TLS handshake included (and the
	// call deadline bounds it too); 0 means 1 s.
	DialTimeout time.Duration
	// Dial replaces net.Dialer.DialContext, for tests and custom transports;
	// with TLS set the handshake runs on the connection it returns.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLS, when set, makes every connection a TLS client connection with
	// this configuration (crypto/tls), its handshake completed within the
	// dial's time, so that a failed handshake is a failed dial (a
	// *DialError). The Client uses a clone: when ServerName is empty the
	// clone's is Addr's host. Share a ClientSessionCache in it to resume
	// sessions on reconnection.
	TLS *tls.Config
	// MaxFrameBytes bounds a response frame; 0 means 1 MiB.
	MaxFrameBytes int
	// Tenant is sent on every request that does not name its own.
	Tenant string
	// NoAutoIdempotencyKey stops the client from generating an
	// idempotency key for calls not marked idempotent. Without a key such
	// calls are retried only when the server provably did not run them
	// (a reject, or a request that was never written).
	NoAutoIdempotencyKey bool
	// Retry is the retry policy; the zero value is 3 attempts with full
	// jitter from 10 ms. MaxAttempts 1 disables retries. When its Latency
	// is nil the client tracks attempt latency itself, so no retry starts
	// with less time left than the median attempt takes.
	Retry resilience.RetryPolicy
	// Budget is the retry budget for this destination, shared by retries
	// and hedges; nil means a budget with the default settings. Share one
	// Budget between Clients to the same destination.
	Budget *resilience.Budget
	// Throttle is the adaptive client-side throttle for this destination:
	// every attempt asks it first and is refused locally with ErrThrottled
	// with probability max(0, (requests − K·accepts)/(requests + 1)), at
	// most MaxProbability, over its window
	// (docs/CLIENT.md#client-side-throttling). nil means one with the
	// default settings (K = 2, a 30 s window, no refusal before 20
	// requests, never more than 90% of attempts). Share one Throttle
	// between Clients to the same destination.
	Throttle *resilience.Throttle
	// NoThrottle switches client-side throttling off: every attempt is
	// sent, and Throttle is ignored. A ThrottleConfig with a negative K
	// instead keeps the counts (ThrottleStats) without ever refusing.
	NoThrottle bool
	// Breaker, if set, gates every attempt.
	Breaker *resilience.Breaker
	// Hedge, if set, hedges calls marked idempotent (and only those); its
	// Budget and Clock are replaced by the Client's.
	Hedge *resilience.HedgeConfig
	// Clock times retry waits and hedges and dates the throttle's counts;
	// nil means resilience.SystemClock.
	Clock resilience.Clock
}

// Validate reports a missing address or out-of-range values.
func (c *Config) Validate() error {
	switch {
	case c.Addr == "":
		return fmt.Errorf("%w: Addr is required", ErrInvalidConfig)
	case c.Conns < 0 || c.Conns > maxConns:
		return fmt.Errorf("%w: Conns %d not in [0, %d]", ErrInvalidConfig, c.Conns, maxConns)
	case c.MaxInFlight < 0 || c.MaxWaiting < 0:
		return fmt.Errorf("%w: MaxInFlight and MaxWaiting must not be negative", ErrInvalidConfig)
	case c.Timeout < 0 || c.AttemptTimeout < 0 || c.DialTimeout < 0:
		return fmt.Errorf("%w: timeouts must not be negative", ErrInvalidConfig)
	case len(c.Tenant) > envelope.MaxTenantBytes:
		return fmt.Errorf("%w: Tenant longer than %d bytes", ErrInvalidConfig, envelope.MaxTenantBytes)
	}
	if c.TLS != nil && c.TLS.ServerName == "" {
		if _, _, err := net.SplitHostPort(c.Addr); err != nil {
			return fmt.Errorf("%w: TLS without a ServerName needs a HOST:PORT Addr: %w", ErrInvalidConfig, err)
		}
	}
	if err := (envelope.Codec{MaxFrameBytes: c.MaxFrameBytes}).Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := (resilience.BulkheadConfig{MaxConcurrent: c.MaxInFlight, MaxWaiting: c.MaxWaiting}).Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := c.Retry.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if c.Hedge != nil {
		if err := c.Hedge.Validate(); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	return nil
}

func (c *Config) conns() int {
	if c.Conns == 0 {
		return DefaultConns
	}
	return c.Conns
}

func (c *Config) maxInFlight() int {
	if c.MaxInFlight == 0 {
		return DefaultMaxInFlight
	}
	return c.MaxInFlight
}

func (c *Config) timeout() time.Duration {
	if c.Timeout == 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

func (c *Config) dialTimeout() time.Duration {
	if c.DialTimeout == 0 {
		return DefaultDialTimeout
	}
	return c.DialTimeout
}

// tlsConfig returns the clone of TLS the connections use (nil without
// TLS), its ServerName defaulted to Addr's host. Validate has checked that
// Addr splits.
func (c *Config) tlsConfig() *tls.Config {
	if c.TLS == nil {
		return nil
	}
	t := c.TLS.Clone()
	if t.ServerName == "" {
		t.ServerName, _, _ = net.SplitHostPort(c.Addr)
	}
	return t
}

func (c *Config) maxFrameBytes() int {
	if c.MaxFrameBytes == 0 {
		return protocol.DefaultMaxFrameBytes
	}
	return c.MaxFrameBytes
}
