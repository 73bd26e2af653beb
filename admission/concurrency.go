package admission

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// Priority orders classes of work for shedding: under pressure best-effort
// work is refused first, critical work last.
type Priority uint8

// Priorities, most important first.
const (
	PriorityCritical Priority = iota
	PriorityNormal
	PriorityBestEffort
	// NumPriorities is the number of priorities.
	NumPriorities
)

var priorityNames = [NumPriorities]string{"critical", "normal", "best_effort"}

// String returns the priority's name.
func (p Priority) String() string {
	if p < NumPriorities {
		return priorityNames[p]
	}
	return fmt.Sprintf("priority(%d)", uint8(p))
}

// LimitConfig is one concurrency limit: Adaptive when set (Vegas behind
// its MaxLimit ceiling), else Fixed when positive, else unlimited.
type LimitConfig struct {
	Fixed    int
	Adaptive *VegasConfig
}

// ClassConfig is one class of work (a priority or a route the handler names)
// with its own bulkhead.
type ClassConfig struct {
	// Name identifies the class for lookup and metrics.
	Name string
	// Priority decides which share of the shared total limit the class may
	// fill.
	Priority Priority
	// Limit is the class's own cap; its zero value leaves the class bounded
	// only by the shared total.
	Limit LimitConfig
}

// ConcurrencyConfig configures a Concurrency limiter.
type ConcurrencyConfig struct {
	// Total is the limit shared by every class.
	Total LimitConfig
	// Classes are the classes of work; a ClassID is an index into it.
	Classes []ClassConfig
	// Shares is, per priority, the fraction of the total limit that work of
	// that priority may fill: best-effort work is refused once in-flight
	// reaches Shares[PriorityBestEffort] × limit, while critical work may
	// use it all. All zero: {1, 0.9, 0.5}. Each must be in (0, 1].
	Shares [NumPriorities]float64
	// RetryAfter is the hint sent with a concurrency refusal. Zero: 20ms.
	RetryAfter time.Duration
}

func (c ConcurrencyConfig) withDefaults() ConcurrencyConfig {
	if c.Shares == ([NumPriorities]float64{}) {
		c.Shares = [NumPriorities]float64{1, 0.9, 0.5}
	}
	if c.RetryAfter == 0 {
		c.RetryAfter = 20 * time.Millisecond
	}
	return c
}

// Validate checks the configuration after defaults are applied.
func (c ConcurrencyConfig) Validate() error {
	c = c.withDefaults()
	check := func(l LimitConfig, what string) error {
		if l.Fixed < 0 {
			return fmt.Errorf("%w: %s: negative Fixed", ErrBadConfig, what)
		}
		if l.Adaptive != nil {
			if err := l.Adaptive.Validate(); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
		}
		return nil
	}
	if err := check(c.Total, "total"); err != nil {
		return err
	}
	if len(c.Classes) == 0 || len(c.Classes) > math.MaxUint16 {
		return fmt.Errorf("%w: need 1..65535 classes, got %d", ErrBadConfig, len(c.Classes))
	}
	for i, cl := range c.Classes {
		if cl.Priority >= NumPriorities {
			return fmt.Errorf("%w: class %d (%q): priority %d", ErrBadConfig, i, cl.Name, cl.Priority)
		}
		if err := check(cl.Limit, "class "+cl.Name); err != nil {
			return err
		}
	}
	for p, s := range c.Shares {
		if !(s > 0 && s <= 1) {
			return fmt.Errorf("%w: share %v for %v", ErrBadConfig, s, Priority(p))
		}
	}
	if c.RetryAfter < 0 {
		return fmt.Errorf("%w: negative RetryAfter", ErrBadConfig)
	}
	return nil
}

// cell is one limit and its in-flight count.
type cell struct {
	inflight atomic.Int64
	limit    atomic.Int64
	ad       *adaptive // nil for a fixed or unlimited cell
	refused  atomic.Uint64
	_        [32]byte
}

func (c *cell) init(l LimitConfig) {
	switch {
	case l.Adaptive != nil:
		cfg := l.Adaptive.withDefaults()
		c.ad = newAdaptive(cfg)
		c.limit.Store(int64(cfg.InitialLimit))
	case l.Fixed > 0:
		c.limit.Store(int64(l.Fixed))
	default:
		c.limit.Store(math.MaxInt64)
	}
}

// tryAcquire takes a slot if in-flight is below threshold(limit).
func (c *cell) tryAcquire(share float64) bool {
	lim := c.limit.Load()
	thr := lim
	if share < 1 && lim != math.MaxInt64 {
		thr = max(1, int64(float64(lim)*share))
	}
	for {
		cur := c.inflight.Load()
		if cur >= thr {
			c.refused.Add(1)
			return false
		}
		if c.inflight.CompareAndSwap(cur, cur+1) {
			if c.ad != nil {
				c.ad.noteInflight(cur + 1)
			}
			return true
		}
	}
}

func (c *cell) release(t, rtt int64) {
	n := c.inflight.Add(-1)
	if c.ad != nil {
		c.ad.sample(t, rtt, n, &c.limit)
	}
}

// Concurrency is a set of bulkheads: each class of work has its own cap
// (fixed or adaptive) and all classes share a total limit in which lower
// priorities may fill only a share, so best-effort work is shed first. It is
// safe for concurrent use and lock-free on Acquire and Release (an adaptive
// limit takes a TryLock once per window). Build it with NewConcurrency.
type Concurrency struct {
	cfg     ConcurrencyConfig
	total   cell
	classes []cell
	prio    []Priority
	names   map[string]ClassID
}

// ClassID identifies a class: its index in ConcurrencyConfig.Classes.
type ClassID uint16

// Permit is a held concurrency slot. Release it exactly once; the zero
// Permit holds nothing and releasing it is a no-op.
type Permit struct {
	class ClassID
	held  bool
}

// Held reports whether the permit holds a slot.
func (p Permit) Held() bool { return p.held }

// NewConcurrency returns a limiter with nothing in flight.
func NewConcurrency(cfg ConcurrencyConfig) (*Concurrency, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	c := &Concurrency{cfg: cfg, classes: make([]cell, len(cfg.Classes)),
		prio: make([]Priority, len(cfg.Classes)), names: make(map[string]ClassID, len(cfg.Classes))}
	c.total.init(cfg.Total)
	for i, cl := range cfg.Classes {
		c.classes[i].init(cl.Limit)
		c.prio[i] = cl.Priority
		c.names[cl.Name] = ClassID(i)
	}
	return c, nil
}

// Class returns the ID of the class named name.
func (c *Concurrency) Class(name string) (ClassID, bool) {
	id, ok := c.names[name]
	return id, ok
}

// Acquire takes a slot for class id at now: first in the class's bulkhead,
// then in the shared total under the class priority's share. It returns the
// permit and an admitting Verdict, or a zero Permit and a refusal with
// ReasonConcurrency.
func (c *Concurrency) Acquire(now time.Time, id ClassID) (Permit, Verdict) {
	_ = now // the window clock advances on Release, where RTTs are known
	if int(id) >= len(c.classes) {
		return Permit{}, Reject(ReasonConcurrency, c.cfg.RetryAfter)
	}
	cl := &c.classes[id]
	if !cl.tryAcquire(1) {
		return Permit{}, Reject(ReasonConcurrency, c.cfg.RetryAfter)
	}
	if !c.total.tryAcquire(c.cfg.Shares[c.prio[id]]) {
		cl.inflight.Add(-1)
		return Permit{}, Reject(ReasonConcurrency, c.cfg.RetryAfter)
	}
	return Permit{class: id, held: true}, Admitted()
}

// Release returns p's slot at now with the measured round-trip (service)
// time rtt, which feeds the adaptive limits. Releasing a permit twice
// corrupts the count; the zero Permit is ignored.
func (c *Concurrency) Release(now time.Time, p Permit, rtt time.Duration) {
	if !p.held || int(p.class) >= len(c.classes) {
		return
	}
	t := nanos(now)
	c.classes[p.class].release(t, int64(rtt))
	c.total.release(t, int64(rtt))
}

// LimitStats describes one limit.
type LimitStats struct {
	Name     string
	Priority Priority
	// Limit is the current limit (math.MaxInt64 when unlimited).
	Limit int64
	// Inflight is the number of held slots.
	Inflight int64
	// Refused counts refusals by this limit.
	Refused uint64
}

// Stats returns the total's and every class's limit, in-flight and refusals.
// It allocates; call it from a stats path, not per request.
func (c *Concurrency) Stats() (total LimitStats, classes []LimitStats) {
	snap := func(x *cell) LimitStats {
		return LimitStats{Limit: x.limit.Load(), Inflight: x.inflight.Load(), Refused: x.refused.Load()}
	}
	total = snap(&c.total)
	total.Name = "total"
	classes = make([]LimitStats, len(c.classes))
	for i := range c.classes {
		classes[i] = snap(&c.classes[i])
		classes[i].Name, classes[i].Priority = c.cfg.Classes[i].Name, c.prio[i]
	}
	return total, classes
}

// Limit returns class id's current limit and the shared total's limit.
func (c *Concurrency) Limit(id ClassID) (class, total int64) {
	if int(id) >= len(c.classes) {
		return 0, c.total.limit.Load()
	}
	return c.classes[id].limit.Load(), c.total.limit.Load()
}
