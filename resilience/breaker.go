package resilience

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// State is a circuit breaker's state.
type State uint8

// The breaker states. The zero value is StateClosed.
const (
	// StateClosed: calls flow; outcomes fill the sliding window.
	StateClosed State = iota
	// StateOpen: calls are refused with ErrBreakerOpen until the open
	// timeout passes.
	StateOpen
	// StateHalfOpen: a limited number of probe calls flow; their success
	// ratio decides between closed and open.
	StateHalfOpen
)

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	switch s {
	case StateClosed:
		return "closed"
	case StateOpen:
		return "open"
	case StateHalfOpen:
		return "half-open"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Default breaker parameters, used where a BreakerConfig field is zero.
const (
	DefaultBreakerWindow      = 10 * time.Second
	DefaultBreakerBuckets     = 10
	DefaultBreakerMinCalls    = 20
	DefaultMaxFailureRatio    = 0.5
	DefaultMaxSlowRatio       = 1.0
	DefaultOpenTimeout        = 5 * time.Second
	DefaultMaxOpenTimeout     = 60 * time.Second
	DefaultOpenBackoff        = 2.0
	DefaultOpenJitter         = 0.2
	DefaultHalfOpenProbes     = 5
	DefaultMinProbeSuccessful = 0.8
	maxBreakerBuckets         = 1024
)

// BreakerConfig configures a Breaker. The zero value is a 10 s window of ten
// 1 s buckets that trips at 50% failures once it has seen 20 calls, stays
// open 5 s (doubling on repeated trips up to 60 s, minus up to 20% jitter),
// and closes again when at least 4 of 5 probes succeed.
type BreakerConfig struct {
	// Window is the span of the sliding window; 0 means 10 s.
	Window time.Duration
	// Buckets is how many time buckets the window is cut into (the window
	// slides one bucket at a time); 0 means 10, at most 1024.
	Buckets int
	// MinCalls is how many calls the window must hold before the breaker
	// may trip; 0 means 20.
	MinCalls int
	// MaxFailureRatio trips the breaker when failures/calls reaches it;
	// in (0, 1]; 0 means 0.5.
	MaxFailureRatio float64
	// SlowCallLatency marks a call slow when its latency is at least this;
	// 0 disables slow-call tracking. Slow probes count as failed probes.
	SlowCallLatency time.Duration
	// MaxSlowRatio trips the breaker when slow calls/calls reaches it; in
	// (0, 1]; 0 means 1 (trip when every call is slow).
	MaxSlowRatio float64
	// OpenTimeout is how long the breaker stays open after its first trip;
	// 0 means 5 s.
	OpenTimeout time.Duration
	// MaxOpenTimeout caps the open timeout as it backs off on repeated
	// trips (trips without a close in between); 0 means 60 s.
	MaxOpenTimeout time.Duration
	// OpenBackoff multiplies the open timeout on each repeated trip; ≥ 1;
	// 0 means 2.
	OpenBackoff float64
	// OpenJitter shortens each open timeout by a random share in
	// [0, OpenJitter), so a fleet's breakers do not probe in lock step;
	// in [0, 1); 0 means 0.2, negative means no jitter.
	OpenJitter float64
	// HalfOpenProbes is how many probe calls half-open admits; 0 means 5.
	HalfOpenProbes int
	// MinProbeSuccessRatio closes the breaker once successful probes reach
	// this share of HalfOpenProbes (and reopens it once that is out of
	// reach); in (0, 1]; 0 means 0.8.
	MinProbeSuccessRatio float64
	// HalfOpenTimeout is how long half-open waits for probe outcomes before
	// it gives up on the missing ones and reopens (a probe that never
	// reports must not wedge the breaker); 0 means Window.
	HalfOpenTimeout time.Duration
	// OnStateChange, if set, is called after every transition, outside the
	// breaker's lock, on the goroutine that caused it. Transitions are
	// numbered by StateChange.Generation: hooks on different goroutines may
	// run out of order.
	OnStateChange func(StateChange)
	// Rand is the jitter source; nil means math/rand/v2's global source. It
	// is called with the breaker's lock held.
	Rand rand.Source
}

// Validate reports out-of-range values.
func (c BreakerConfig) Validate() error {
	ratio := func(v float64) bool { return v == 0 || (v > 0 && v <= 1) }
	switch {
	case c.Window < 0 || c.SlowCallLatency < 0 || c.OpenTimeout < 0 || c.MaxOpenTimeout < 0 || c.HalfOpenTimeout < 0:
		return fmt.Errorf("%w: BreakerConfig durations must not be negative", ErrInvalidConfig)
	case c.Buckets < 0 || c.Buckets > maxBreakerBuckets:
		return fmt.Errorf("%w: BreakerConfig.Buckets %d not in [0, %d]", ErrInvalidConfig, c.Buckets, maxBreakerBuckets)
	case c.MinCalls < 0 || c.HalfOpenProbes < 0:
		return fmt.Errorf("%w: BreakerConfig.MinCalls and HalfOpenProbes must not be negative", ErrInvalidConfig)
	case !ratio(c.MaxFailureRatio) || !ratio(c.MaxSlowRatio) || !ratio(c.MinProbeSuccessRatio):
		return fmt.Errorf("%w: BreakerConfig ratios must be in (0, 1]", ErrInvalidConfig)
	case c.OpenBackoff != 0 && !(c.OpenBackoff >= 1 && c.OpenBackoff < 1e6):
		return fmt.Errorf("%w: BreakerConfig.OpenBackoff %v not in [1, 1e6)", ErrInvalidConfig, c.OpenBackoff)
	case c.OpenJitter >= 1 || math.IsNaN(c.OpenJitter):
		return fmt.Errorf("%w: BreakerConfig.OpenJitter %v not below 1", ErrInvalidConfig, c.OpenJitter)
	}
	r := c.withDefaults()
	if r.MaxOpenTimeout < r.OpenTimeout {
		return fmt.Errorf("%w: BreakerConfig.MaxOpenTimeout %v below OpenTimeout %v", ErrInvalidConfig, r.MaxOpenTimeout, r.OpenTimeout)
	}
	if r.Window/time.Duration(r.Buckets) <= 0 {
		return fmt.Errorf("%w: BreakerConfig.Window %v too short for %d buckets", ErrInvalidConfig, r.Window, r.Buckets)
	}
	return nil
}

func (c BreakerConfig) withDefaults() BreakerConfig {
	def := func(p *float64, v float64) {
		if *p == 0 {
			*p = v
		}
	}
	if c.Window == 0 {
		c.Window = DefaultBreakerWindow
	}
	if c.Buckets == 0 {
		c.Buckets = DefaultBreakerBuckets
	}
	if c.MinCalls == 0 {
		c.MinCalls = DefaultBreakerMinCalls
	}
	def(&c.MaxFailureRatio, DefaultMaxFailureRatio)
	def(&c.MaxSlowRatio, DefaultMaxSlowRatio)
	if c.OpenTimeout == 0 {
		c.OpenTimeout = DefaultOpenTimeout
	}
	if c.MaxOpenTimeout == 0 {
		c.MaxOpenTimeout = max(DefaultMaxOpenTimeout, c.OpenTimeout)
	}
	def(&c.OpenBackoff, DefaultOpenBackoff)
	if c.OpenJitter == 0 {
		c.OpenJitter = DefaultOpenJitter
	} else if c.OpenJitter < 0 {
		c.OpenJitter = 0
	}
	if c.HalfOpenProbes == 0 {
		c.HalfOpenProbes = DefaultHalfOpenProbes
	}
	def(&c.MinProbeSuccessRatio, DefaultMinProbeSuccessful)
	if c.HalfOpenTimeout == 0 {
		c.HalfOpenTimeout = c.Window
	}
	return c
}

// StateChange describes one breaker transition, for logs and metrics.
type StateChange struct {
	From, To   State
	Generation uint64    // generation entered by this transition
	At         time.Time // the now that caused it
	Trips      int       // consecutive trips so far (0 once closed)
	OpenUntil  time.Time // when To is StateOpen: the earliest half-open time
}

// Ticket is Allow's permission for one call; hand it back to Record. It
// carries the breaker generation, so outcomes that arrive after the state
// has moved on are ignored. The zero Ticket is never admitted and Record
// ignores it.
type Ticket struct {
	gen   uint64
	probe bool
	ok    bool
}

// Probe reports whether the ticket is a half-open probe.
func (t Ticket) Probe() bool { return t.probe }

// Generation returns the breaker generation the ticket was issued in.
func (t Ticket) Generation() uint64 { return t.gen }

type breakerBucket struct{ calls, failures, slow int64 }

// Breaker is a circuit breaker over a sliding window of time buckets.
//
// Closed, it admits every call and records outcomes; when the window holds
// at least MinCalls calls and the failure ratio reaches MaxFailureRatio (or
// the slow ratio reaches MaxSlowRatio) it trips open. Open, it refuses calls
// until the open timeout passes (the timeout backs off with jitter on
// repeated trips); the next Allow moves it to half-open. Half-open, it admits
// HalfOpenProbes probes and closes once enough succeed, or reopens once
// enough fail (or after HalfOpenTimeout without a verdict). Each transition
// starts a new generation; outcomes from tickets of an older generation are
// ignored.
//
// Time is passed in: every method takes now, so tests are tables over
// t0..tN. A Breaker is safe for concurrent use; Allow and Record take one
// mutex and do not allocate.
type Breaker struct {
	cfg   BreakerConfig
	width time.Duration

	mu         sync.Mutex
	state      State
	gen        uint64
	trips      int
	openUntil  time.Time
	halfOpenAt time.Time

	// The window: ring[idx % len] is the bucket of time index idx; lastIdx is
	// the newest index; sums are the totals over the ring.
	started             bool
	origin              time.Time
	lastIdx             int64
	ring                []breakerBucket
	calls, fails, slows int64

	probes, probesOK, probesBad int
}

// NewBreaker returns a closed breaker in generation 0.
func NewBreaker(cfg BreakerConfig) (*Breaker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Breaker{
		cfg:   cfg,
		width: cfg.Window / time.Duration(cfg.Buckets),
		ring:  make([]breakerBucket, cfg.Buckets),
	}, nil
}

// Allow asks whether a call may start at now. It returns a ticket for
// Record, or ErrBreakerOpen. An open breaker whose timeout has passed moves
// to half-open here.
func (b *Breaker) Allow(now time.Time) (Ticket, error) {
	var ch StateChange
	changed := false
	b.mu.Lock()
	switch b.state {
	case StateClosed:
		t := Ticket{gen: b.gen, ok: true}
		b.mu.Unlock()
		return t, nil
	case StateOpen:
		if now.Before(b.openUntil) {
			b.mu.Unlock()
			return Ticket{}, ErrBreakerOpen
		}
		ch, changed = b.toLocked(StateHalfOpen, now), true
	case StateHalfOpen:
		if now.Sub(b.halfOpenAt) >= b.cfg.HalfOpenTimeout {
			ch, changed = b.toLocked(StateOpen, now), true
			b.mu.Unlock()
			b.notify(ch, changed)
			return Ticket{}, ErrBreakerOpen
		}
	}
	if b.probes >= b.cfg.HalfOpenProbes {
		b.mu.Unlock()
		b.notify(ch, changed)
		return Ticket{}, ErrBreakerOpen
	}
	b.probes++
	t := Ticket{gen: b.gen, probe: true, ok: true}
	b.mu.Unlock()
	b.notify(ch, changed)
	return t, nil
}

// Record reports the outcome of the call Allow admitted with t, finished at
// now after latency. Tickets from an older generation are ignored. In
// half-open, OutcomeIgnored frees the probe slot for another probe.
func (b *Breaker) Record(now time.Time, t Ticket, latency time.Duration, o Outcome) {
	if !t.ok {
		return
	}
	var ch StateChange
	changed := false
	slow := b.cfg.SlowCallLatency > 0 && latency >= b.cfg.SlowCallLatency
	b.mu.Lock()
	if t.gen != b.gen {
		b.mu.Unlock()
		return
	}
	switch b.state {
	case StateClosed:
		if o == OutcomeIgnored {
			break
		}
		bk := b.bucketLocked(now)
		bk.calls++
		b.calls++
		if o == OutcomeFailure {
			bk.failures++
			b.fails++
		}
		if slow {
			bk.slow++
			b.slows++
		}
		if b.shouldTripLocked() {
			ch, changed = b.toLocked(StateOpen, now), true
		}
	case StateHalfOpen:
		switch {
		case o == OutcomeIgnored:
			b.probes--
		case o == OutcomeSuccess && !slow:
			b.probesOK++
		default:
			b.probesBad++
		}
		need := int(math.Ceil(b.cfg.MinProbeSuccessRatio*float64(b.cfg.HalfOpenProbes) - 1e-9))
		switch {
		case b.probesOK >= need:
			ch, changed = b.toLocked(StateClosed, now), true
		case b.probesBad > b.cfg.HalfOpenProbes-need:
			ch, changed = b.toLocked(StateOpen, now), true
		}
	}
	b.mu.Unlock()
	b.notify(ch, changed)
}

func (b *Breaker) shouldTripLocked() bool {
	if b.calls < int64(b.cfg.MinCalls) || b.calls == 0 {
		return false
	}
	n := float64(b.calls)
	if float64(b.fails) >= b.cfg.MaxFailureRatio*n {
		return true
	}
	return b.cfg.SlowCallLatency > 0 && float64(b.slows) >= b.cfg.MaxSlowRatio*n
}

// bucketLocked slides the window to now and returns now's bucket. Time that
// runs backwards lands in the newest bucket.
func (b *Breaker) bucketLocked(now time.Time) *breakerBucket {
	n := int64(len(b.ring))
	if !b.started {
		b.started, b.origin, b.lastIdx = true, now, 0
		return &b.ring[0]
	}
	idx := int64(now.Sub(b.origin) / b.width)
	if idx > b.lastIdx {
		if idx-b.lastIdx >= n {
			b.clearWindowLocked()
		} else {
			for i := b.lastIdx + 1; i <= idx; i++ {
				bk := &b.ring[i%n]
				b.calls -= bk.calls
				b.fails -= bk.failures
				b.slows -= bk.slow
				*bk = breakerBucket{}
			}
		}
		b.lastIdx = idx
	}
	return &b.ring[b.lastIdx%n]
}

func (b *Breaker) clearWindowLocked() {
	clear(b.ring)
	b.calls, b.fails, b.slows = 0, 0, 0
}

// toLocked moves to state s at now, starting a new generation.
func (b *Breaker) toLocked(s State, now time.Time) StateChange {
	from := b.state
	b.state = s
	b.gen++
	switch s {
	case StateOpen:
		b.trips++
		b.openUntil = now.Add(b.openTimeoutLocked())
	case StateHalfOpen:
		b.halfOpenAt = now
		b.probes, b.probesOK, b.probesBad = 0, 0, 0
	case StateClosed:
		b.trips = 0
		b.clearWindowLocked()
		b.started = false
	}
	ch := StateChange{From: from, To: s, Generation: b.gen, At: now, Trips: b.trips}
	if s == StateOpen {
		ch.OpenUntil = b.openUntil
	}
	return ch
}

// openTimeoutLocked is OpenTimeout·OpenBackoff^(trips−1), capped at
// MaxOpenTimeout, shortened by a random share below OpenJitter.
func (b *Breaker) openTimeoutLocked() time.Duration {
	d := math.Min(float64(b.cfg.OpenTimeout)*math.Pow(b.cfg.OpenBackoff, float64(b.trips-1)), float64(b.cfg.MaxOpenTimeout))
	if b.cfg.OpenJitter > 0 {
		d *= 1 - b.cfg.OpenJitter*unit(b.cfg.Rand)
	}
	return time.Duration(d)
}

func (b *Breaker) notify(ch StateChange, changed bool) {
	if changed && b.cfg.OnStateChange != nil {
		b.cfg.OnStateChange(ch)
	}
}

// BreakerSnapshot is a consistent view of a breaker, for metrics and tests.
type BreakerSnapshot struct {
	State      State
	Generation uint64
	Trips      int       // consecutive trips (0 while closed)
	OpenUntil  time.Time // meaningful in StateOpen
	Calls      int64     // calls in the window (closed only)
	Failures   int64     // failed calls in the window
	SlowCalls  int64     // slow calls in the window
	Probes     int       // probes admitted in half-open
}

// Snapshot returns the breaker's state at now (sliding the window to now;
// it never changes the state).
func (b *Breaker) Snapshot(now time.Time) BreakerSnapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == StateClosed && b.started {
		b.bucketLocked(now)
	}
	return BreakerSnapshot{
		State: b.state, Generation: b.gen, Trips: b.trips, OpenUntil: b.openUntil,
		Calls: b.calls, Failures: b.fails, SlowCalls: b.slows, Probes: b.probes,
	}
}

// State returns the current state without moving time: an open breaker
// whose timeout has passed still reports StateOpen until the next Allow.
func (b *Breaker) State() State {
	b.mu.Lock()
	s := b.state
	b.mu.Unlock()
	return s
}
