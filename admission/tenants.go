package admission

import (
	"context"
	"fmt"
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// TenantQuota charges a cost to a tenant's quota. The in-memory
// TenantLimiter is the default; redisstore.Limiter shares one quota across a
// fleet through Redis. key is the tenant key (see TenantKeyFunc); the callee
// does not retain it. cost is in the quota's units (requests or bytes).
//
// Implementations return ErrCostExceedsBurst for a cost that can never be
// admitted and ErrBadCost for a negative one; a backend failure (Redis
// unreachable) is returned as an error and the caller decides whether to
// fail open or closed.
type TenantQuota interface {
	AllowN(ctx context.Context, now time.Time, key []byte, cost int64) (Decision, error)
}

// FullPolicy says what a TenantLimiter does with a new tenant when its table
// is at the hard cap and no tracked tenant can be dropped without losing
// state.
type FullPolicy uint8

// Policies for a full tenant table.
const (
	// EvictLeastDebt drops, among a small random sample of the shard, the
	// tenant whose theoretical arrival time is earliest: the one closest to
	// a fresh bucket, so the least rate-limiting state is forgotten. A
	// tenant with no debt at all (TAT <= now) is identical to a new one and
	// is always preferred: dropping it loses nothing. This keeps new
	// tenants served during churn at the price that, in an adversarial
	// churn of many keys, an evicted indebted tenant gets its burst back
	// early. It is the default.
	EvictLeastDebt FullPolicy = iota
	// RejectNew refuses a new tenant (ReasonTenant, ErrTenantTableFull)
	// when only indebted tenants could be dropped. It never forgets a debt,
	// at the price that legitimate new tenants are refused during churn.
	RejectNew
)

// TenantConfig configures a TenantLimiter.
type TenantConfig struct {
	// Quota is every tenant's rate and burst.
	Quota Quota
	// MaxTenants is the hard cap on tracked tenants; memory is bounded by
	// MaxTenants × (key length + about 80 bytes). Zero: 100,000.
	MaxTenants int
	// IdleTTL is how long a tenant with a full bucket stays tracked; Sweep
	// drops tenants idle for longer. A tenant with a full bucket carries no
	// state, so dropping it never changes a decision. Zero: one minute.
	IdleTTL time.Duration
	// Shards is the number of independently locked shards, rounded up to a
	// power of two. Zero: 64.
	Shards int
	// WhenFull is the eviction policy at the hard cap.
	WhenFull FullPolicy
}

func (c TenantConfig) withDefaults() TenantConfig {
	if c.MaxTenants == 0 {
		c.MaxTenants = 100_000
	}
	if c.IdleTTL == 0 {
		c.IdleTTL = time.Minute
	}
	if c.Shards == 0 {
		c.Shards = 64
	}
	return c
}

// Validate checks the configuration after defaults are applied.
func (c TenantConfig) Validate() error {
	c = c.withDefaults()
	if err := c.Quota.Validate(); err != nil {
		return err
	}
	if c.MaxTenants < 0 || c.IdleTTL < 0 || c.Shards < 0 || c.WhenFull > RejectNew {
		return fmt.Errorf("%w: tenant MaxTenants %d, IdleTTL %v, Shards %d, WhenFull %d",
			ErrBadConfig, c.MaxTenants, c.IdleTTL, c.Shards, c.WhenFull)
	}
	return nil
}

// evictSample is how many entries a full shard inspects to pick a victim.
const evictSample = 8

// TenantStats counts a TenantLimiter's table activity.
type TenantStats struct {
	// Tenants is the number of tracked tenants.
	Tenants int
	// Evicted counts tenants dropped to make room; LossyEvicted counts the
	// subset that still had debt. Swept counts idle tenants dropped by
	// Sweep. RejectedNew counts new tenants refused by RejectNew.
	Evicted, LossyEvicted, Swept, RejectedNew uint64
}

// TenantLimiter is an in-memory GCRA limiter keyed by tenant: one
// theoretical-arrival-time timestamp per tenant in a sharded map with an idle
// TTL and a hard cap. It is safe for concurrent use; a call locks one shard
// chosen by the key's hash, so tenants on different shards do not contend.
// AllowN for an existing tenant does not allocate.
type TenantLimiter struct {
	q        Quota
	cfg      TenantConfig
	seed     maphash.Seed
	mask     uint64
	shards   []tenantShard
	sweepPos atomic.Uint64

	evicted, lossy, swept, rejectedNew atomic.Uint64
}

type tenantShard struct {
	mu  sync.Mutex
	m   map[string]*tenantEntry
	cap int
	_   [40]byte // one shard per cache line pair, so shard locks do not false-share
}

type tenantEntry struct{ tat int64 }

// NewTenantLimiter returns an empty limiter.
func NewTenantLimiter(cfg TenantConfig) (*TenantLimiter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	n := 1 << bits.Len(uint(cfg.Shards-1))
	if n > cfg.MaxTenants {
		n = 1 << (bits.Len(uint(cfg.MaxTenants)) - 1)
	}
	l := &TenantLimiter{q: cfg.Quota, cfg: cfg, seed: maphash.MakeSeed(), mask: uint64(n - 1), shards: make([]tenantShard, n)}
	for i := range l.shards {
		s := &l.shards[i]
		s.cap = cfg.MaxTenants / n
		if i < cfg.MaxTenants%n {
			s.cap++
		}
		s.m = make(map[string]*tenantEntry)
	}
	return l, nil
}

// Quota returns the limiter's quota.
func (l *TenantLimiter) Quota() Quota { return l.q }

// Allow is AllowN with a cost of one unit.
func (l *TenantLimiter) Allow(now time.Time, key []byte) Decision {
	d, _ := l.AllowN(context.Background(), now, key, 1)
	return d
}

// AllowN charges cost units to the tenant key at now and reports whether it
// was admitted, with the exact retry-after when not. A cost of zero admits
// without charging and reports the tenant's headroom. ctx is unused (the
// call never blocks); it is there to satisfy TenantQuota.
func (l *TenantLimiter) AllowN(_ context.Context, now time.Time, key []byte, cost int64) (Decision, error) {
	switch {
	case cost < 0:
		return Decision{}, ErrBadCost
	case cost > l.q.Burst:
		return Decision{}, ErrCostExceedsBurst
	}
	t := nanos(now)
	s := &l.shards[maphash.Bytes(l.seed, key)&l.mask]
	s.mu.Lock()
	e := s.m[string(key)]
	if e == nil {
		var d Decision
		if e, d = l.insertLocked(s, key, t); e == nil {
			s.mu.Unlock()
			return d, ErrTenantTableFull
		}
	}
	tat, d := l.q.gcra(e.tat, t, cost)
	e.tat = tat
	s.mu.Unlock()
	return d, nil
}

// insertLocked adds a tenant with no debt, making room at the cap by the
// configured policy. It returns nil and a refusal when RejectNew forbids it.
func (l *TenantLimiter) insertLocked(s *tenantShard, key []byte, t int64) (*tenantEntry, Decision) {
	if len(s.m) >= s.cap {
		var victim string
		victimTat := int64(0)
		seen := 0
		for k, e := range s.m {
			if seen == 0 || e.tat < victimTat {
				victim, victimTat = k, e.tat
			}
			if seen++; seen == evictSample || victimTat <= t {
				break
			}
		}
		lossy := victimTat > t
		if lossy && l.cfg.WhenFull == RejectNew {
			l.rejectedNew.Add(1)
			return nil, Decision{RetryAfter: time.Duration(victimTat - t)}
		}
		delete(s.m, victim)
		l.evicted.Add(1)
		if lossy {
			l.lossy.Add(1)
		}
	}
	e := &tenantEntry{tat: t}
	s.m[string(key)] = e
	return e, Decision{}
}

// Sweep drops tenants whose bucket has been full for at least IdleTTL,
// visiting at most maxShards shards (round robin across calls; <= 0 visits
// all). It returns how many it dropped. Call it from a timer, for example
// every second with a few shards, so that no call holds a lock for long.
func (l *TenantLimiter) Sweep(now time.Time, maxShards int) int {
	t := nanos(now)
	n := len(l.shards)
	if maxShards <= 0 || maxShards > n {
		maxShards = n
	}
	dropped := 0
	for range maxShards {
		s := &l.shards[l.sweepPos.Add(1)&l.mask]
		s.mu.Lock()
		for k, e := range s.m {
			if satAdd(e.tat, int64(l.cfg.IdleTTL)) <= t {
				delete(s.m, k)
				dropped++
			}
		}
		s.mu.Unlock()
	}
	l.swept.Add(uint64(dropped))
	return dropped
}

// Len returns the number of tracked tenants.
func (l *TenantLimiter) Len() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// Stats returns the table counters.
func (l *TenantLimiter) Stats() TenantStats {
	return TenantStats{
		Tenants:      l.Len(),
		Evicted:      l.evicted.Load(),
		LossyEvicted: l.lossy.Load(),
		Swept:        l.swept.Load(),
		RejectedNew:  l.rejectedNew.Load(),
	}
}
