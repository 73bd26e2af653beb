package admission

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// RetryHints are the retry-after values sent with refusals whose cause has
// no exact answer (a tenant refusal carries GCRA's exact value instead).
type RetryHints struct {
	// Global: a global cap is reached. Zero: 100ms.
	Global time.Duration
	// Memory: the heap is above its high watermark. Zero: 1s.
	Memory time.Duration
	// CPU: the process is CPU-saturated. Zero: 1s.
	CPU time.Duration
	// Queue: the connection's pipeline is full. Zero: 10ms.
	Queue time.Duration
	// Draining: the server is going away; zero sends no hint (the client
	// should go to another server, not come back).
	Draining time.Duration
}

func (h RetryHints) withDefaults() RetryHints {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&h.Global, 100*time.Millisecond)
	def(&h.Memory, time.Second)
	def(&h.CPU, time.Second)
	def(&h.Queue, 10*time.Millisecond)
	return h
}

// Config configures an Admitter. The zero value admits everything except
// what the memory limit (GOMEMLIMIT, when set) and the gate defaults refuse.
//
// It holds only what the policy owns. What the engine that runs the
// Admitter owns, its loop count and the connection and queued-byte caps it
// enforces itself, the engine hands over with Bind, so each setting exists
// in one place.
type Config struct {
	// MaxInflightReqs caps requests admitted and not yet answered (the
	// worker pool's queue and workers); at the cap frames are refused with
	// ReasonGlobal. Zero: no cap.
	MaxInflightReqs int64
	// MemoryLimitBytes caps Go runtime memory (see
	// GlobalBudgets.MemoryLimitBytes): zero uses GOMEMLIMIT when it is
	// set, negative disables the memory budget.
	MemoryLimitBytes int64
	// Gate configures the listen gate on the maximum pressure.
	Gate GateConfig
	// Memory is the watermark on memory/limit that refuses frames with
	// ReasonMemory. Zero: High 0.90, Low 0.80, MinDwell 1s.
	Memory Watermark
	// SampleInterval is the minimum spacing of Tick's work (aggregating
	// loops, reading runtime/metrics and getrusage). Zero: 10ms.
	SampleInterval time.Duration
	// Tenants charges tenant quotas; nil disables them.
	Tenants TenantQuota
	// TenantFailOpen admits a frame when Tenants returns a backend error
	// (Redis unreachable); otherwise it is refused with ReasonTenant.
	TenantFailOpen bool
	// Conn are the per-connection budgets.
	Conn ConnBudgets
	// Idempotency is consulted last for frames with an idempotency key;
	// nil disables the hook.
	Idempotency Store
	// CPU enables the CPU signal, which refuses best-effort frames with
	// ReasonCPU while hot. Nil: off.
	CPU *CPUConfig
	// CPUTime reads the process's CPU time. Nil: ProcessCPUTime. Tests
	// script it.
	CPUTime func() (time.Duration, error)
	// MemoryBytes reads the runtime's memory. Nil: a MemorySampler over
	// runtime/metrics. Tests script it.
	MemoryBytes func(now time.Time) int64
	// Lag enables a loop-lag signal per loop. Nil: off.
	Lag *LagConfig
	// CoDel enables CoDel on each loop's request queue (Loop.Dequeue).
	// Nil: off (Dequeue admits everything).
	CoDel *CoDelConfig
	// Retry are the retry-after hints.
	Retry RetryHints
}

func (c Config) withDefaults() Config {
	if c.Memory == (Watermark{}) {
		c.Memory = Watermark{High: 0.90, Low: 0.80, MinDwell: time.Second}
	}
	if c.SampleInterval == 0 {
		c.SampleInterval = 10 * time.Millisecond
	}
	if c.CPUTime == nil {
		c.CPUTime = ProcessCPUTime
	}
	c.Retry = c.Retry.withDefaults()
	return c
}

// Validate checks the configuration after defaults are applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.SampleInterval < 0 {
		return fmt.Errorf("%w: SampleInterval %v", ErrBadConfig, c.SampleInterval)
	}
	for _, err := range []error{c.budgets(Binding{}).Validate(), c.Gate.Validate(), c.Memory.Validate(), c.Conn.Validate()} {
		if err != nil {
			return err
		}
	}
	if c.CPU != nil {
		if err := c.CPU.Validate(); err != nil {
			return err
		}
	}
	if c.Lag != nil {
		if err := c.Lag.Validate(); err != nil {
			return err
		}
	}
	if c.CoDel != nil {
		if err := c.CoDel.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Flags published by Tick and read once per frame.
const (
	flagDraining uint32 = 1 << iota
	flagMemory
	flagGlobal
	flagCPU
)

// budgets returns the global budgets of c with the engine's caps b.
func (c Config) budgets(b Binding) GlobalBudgets {
	return GlobalBudgets{MaxConns: b.MaxConns, MaxInflightReqs: c.MaxInflightReqs,
		MaxQueuedBytes: b.MaxQueuedBytes, MemoryLimitBytes: c.MemoryLimitBytes}
}

// Binding is what the engine that runs an Admitter hands it (Bind): the
// settings the engine owns and the policy derives from.
type Binding struct {
	// Loops is the engine's number of event loops; each gets a Loop
	// handle. At least 1.
	Loops int
	// MaxConns is the connection cap the engine enforces at accept time
	// (0: none); the gate's pressure is open connections over it.
	MaxConns int64
	// MaxQueuedBytes is the queued-byte cap the engine enforces before
	// every read (0: none); frames are refused with ReasonGlobal at it and
	// the gate's pressure counts it.
	MaxQueuedBytes int64
}

// Admitter runs the admission order for every frame and the periodic
// sampling behind it. The per-frame path (Loop.Admit) reads one atomic word
// of flags published by Tick, then charges the tenant, then checks the
// connection, then consults the idempotency store: nothing expensive happens
// before a cheap refusal. Per-loop state lives in Loop handles, which the
// loops own; Tick aggregates them. Use NewAdmitter, then Bind.
type Admitter struct {
	cfg      Config
	budgets  GlobalBudgets // cfg's and the engine's, set by Bind
	bound    atomic.Bool
	memLimit int64
	gate     *GatePolicy
	hot      HotSwitch
	flags    atomic.Uint32
	loops    []Loop
	extra    RejectCounters // refusals counted outside the loops

	tickMu    sync.Mutex
	ticked    bool
	lastTick  int64
	lastSweep int64
	mem       *MemorySampler
	memH      Hysteresis
	cpu       *CPUSignal
	last      tickState

	tenantErrors, claimErrors atomic.Uint64
}

type tickState struct {
	load     Load
	pressure float64
	worst    Resource
	memHot   bool
	cpuHot   bool
	lagHot   bool
	codelHot bool
}

// NewAdmitter builds an Admitter from cfg. It has no Loop handles until
// Bind gives it its engine's loop count and caps.
func NewAdmitter(cfg Config) (*Admitter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	gate, err := NewGatePolicy(cfg.Gate)
	if err != nil {
		return nil, err
	}
	a := &Admitter{cfg: cfg, budgets: cfg.budgets(Binding{}), gate: gate}
	a.memLimit = a.budgets.ResolveMemoryLimit()
	a.memH, _ = NewHysteresis(cfg.Memory)
	if cfg.MemoryBytes == nil {
		a.mem = NewMemorySampler(0) // Tick already rate-limits
	}
	if cfg.CPU != nil {
		if a.cpu, err = NewCPUSignal(*cfg.CPU); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Bind gives a what its engine owns: one Loop handle per engine loop and
// the caps the engine enforces, which the gate's pressure and the
// per-frame global refusal derive from. An Admitter is bound once, before
// it is used: a second Bind fails with ErrBound, and so does a Binding with
// no loops or a negative cap (ErrBadConfig).
func (a *Admitter) Bind(b Binding) error {
	budgets := a.cfg.budgets(b)
	if b.Loops < 1 {
		return fmt.Errorf("%w: Binding.Loops %d: at least 1", ErrBadConfig, b.Loops)
	}
	if err := budgets.Validate(); err != nil {
		return err
	}
	if !a.bound.CompareAndSwap(false, true) {
		return ErrBound
	}
	loops := make([]Loop, b.Loops)
	for i := range loops {
		l := &loops[i]
		l.a = a
		if a.cfg.Lag != nil {
			l.lag, _ = NewLagSignal(*a.cfg.Lag) // validated by NewAdmitter
		}
		if a.cfg.CoDel != nil {
			l.codel, _ = NewCoDel(*a.cfg.CoDel)
		}
	}
	a.tickMu.Lock()
	a.budgets, a.loops = budgets, loops
	a.tickMu.Unlock()
	return nil
}

// Loop returns the handle of loop i (0 <= i < Binding.Loops), or nil
// (always nil before Bind).
func (a *Admitter) Loop(i int) *Loop {
	if i < 0 || i >= len(a.loops) {
		return nil
	}
	return &a.loops[i]
}

// Gate returns the listen gate. Loops read Gate().State() once per turn.
func (a *Admitter) Gate() *GatePolicy { return a.gate }

// Hot returns the hot switch handlers read.
func (a *Admitter) Hot() *HotSwitch { return &a.hot }

// Budgets returns the global budgets in force: the policy's own
// (MaxInflightReqs, MemoryLimitBytes) and the engine's caps from Bind.
func (a *Admitter) Budgets() GlobalBudgets { return a.budgets }

// CoDel returns the CoDel configuration of the loops' request queues, or
// nil when the policy does not shed on queueing delay.
func (a *Admitter) CoDel() *CoDelConfig { return a.cfg.CoDel }

// MemoryLimitBytes returns the resolved memory cap (0: none).
func (a *Admitter) MemoryLimitBytes() int64 { return a.memLimit }

// SetDraining starts (or stops) refusing every new frame with
// ReasonDraining.
func (a *Admitter) SetDraining(on bool) {
	v := uint32(0)
	if on {
		v = flagDraining
	}
	a.storeFlags(flagDraining, v)
}

// storeFlags sets the bits in mask to value's, atomically with respect to
// the other bits.
func (a *Admitter) storeFlags(mask, value uint32) {
	for {
		old := a.flags.Load()
		next := old&^mask | value&mask
		if old == next || a.flags.CompareAndSwap(old, next) {
			return
		}
	}
}

// Count counts a refusal decided outside a loop (a worker pool's CoDel, a
// concurrency refusal on a worker). Loops count through their own handle.
func (a *Admitter) Count(r Reason) { a.extra.Inc(r) }

// Tick samples and decides: it sums the loops' published load, reads the
// runtime's memory and the process's CPU time, feeds the gate and the
// memory, CPU and lag signals, and publishes the per-frame flags. Call it
// once per turn from any loop (or from a timer): it does its work at most
// once per SampleInterval, and concurrent calls return at once while one
// runs. It returns the gate's state and whether this call changed it.
func (a *Admitter) Tick(now time.Time) (GateState, bool) {
	if !a.tickMu.TryLock() {
		return a.gate.State(), false
	}
	defer a.tickMu.Unlock()
	t := nanos(now)
	if a.ticked && t-a.lastTick < int64(a.cfg.SampleInterval) {
		return a.gate.State(), false
	}
	a.ticked, a.lastTick = true, t

	var ld Load
	st := tickState{}
	for i := range a.loops {
		l := &a.loops[i]
		ld.Conns += l.pubConns.Load()
		ld.InflightReqs += l.pubInflight.Load()
		ld.QueuedBytes += l.pubQueued.Load()
		st.lagHot = st.lagHot || (l.lag != nil && l.lag.Hot())
		st.codelHot = st.codelHot || (l.codel != nil && l.codel.Overloaded())
	}
	if a.cfg.MemoryBytes != nil {
		ld.MemoryBytes = a.cfg.MemoryBytes(now)
	} else {
		ld.MemoryBytes, _ = a.mem.Sample(now)
	}
	st.load = ld
	st.pressure, st.worst = a.budgets.Pressure(ld, a.memLimit)
	state, changed := a.gate.Update(now, st.pressure)
	if a.memLimit > 0 {
		st.memHot, _ = a.memH.Update(now, float64(ld.MemoryBytes)/float64(a.memLimit))
	}
	if a.cpu != nil {
		if cpu, err := a.cfg.CPUTime(); err == nil {
			st.cpuHot, _ = a.cpu.Update(now, cpu)
		} else {
			st.cpuHot = a.cpu.Hot()
		}
	}
	a.last = st

	var set uint32
	if st.memHot {
		set |= flagMemory
	}
	if a.budgets.AtCap(ld) {
		set |= flagGlobal
	}
	if st.cpuHot {
		set |= flagCPU
	}
	a.storeFlags(flagMemory|flagGlobal|flagCPU, set)
	a.hot.SetSignal(SignalGate, state != GateOpen)
	a.hot.SetSignal(SignalMemory, st.memHot)
	a.hot.SetSignal(SignalCPU, st.cpuHot)
	a.hot.SetSignal(SignalLag, st.lagHot)
	a.hot.SetSignal(SignalCoDel, st.codelHot)

	if tl, ok := a.cfg.Tenants.(*TenantLimiter); ok && t-a.lastSweep >= int64(time.Second) {
		a.lastSweep = t
		tl.Sweep(now, 4)
	}
	return state, changed
}

// Stats is a snapshot of the admission state for the engine's Stats and the
// metrics collector.
type Stats struct {
	// Load is the latest aggregated load; Pressure and Worst its maximum
	// normalised pressure and the budget that has it.
	Load     Load
	Pressure float64
	Worst    Resource
	// MemoryLimitBytes is the resolved memory cap (0: none).
	MemoryLimitBytes int64
	// Gate counts the listen gate's transitions.
	Gate GateStats
	// Decisions counts frames per reason; index ReasonNone counts admitted
	// frames. It includes what loops published at their last turn.
	Decisions RejectCounts
	// MemoryHot, CPUHot, LagHot, CoDelHot are the signals; Hot is the hot
	// switch as handlers see it; Draining is the draining flag.
	MemoryHot, CPUHot, LagHot, CoDelHot, Hot, Draining bool
	// CPUUtilisation is the latest CPU sample (fraction of the cores).
	CPUUtilisation float64
	// TenantErrors counts tenant backend errors; ClaimErrors idempotency
	// store errors.
	TenantErrors, ClaimErrors uint64
}

// Stats returns a snapshot. It takes the tick lock briefly.
func (a *Admitter) Stats() Stats {
	a.tickMu.Lock()
	st := a.last
	a.tickMu.Unlock()
	s := Stats{
		Load: st.load, Pressure: st.pressure, Worst: st.worst, MemoryLimitBytes: a.memLimit,
		Gate:      a.gate.Stats(),
		Decisions: a.extra.Snapshot(),
		MemoryHot: st.memHot, CPUHot: st.cpuHot, LagHot: st.lagHot, CoDelHot: st.codelHot,
		Hot: a.hot.Hot(), Draining: a.flags.Load()&flagDraining != 0,
		TenantErrors: a.tenantErrors.Load(), ClaimErrors: a.claimErrors.Load(),
	}
	if a.cpu != nil {
		s.CPUUtilisation = a.cpu.Utilisation()
	}
	for i := range a.loops {
		s.Decisions = s.Decisions.Add(a.loops[i].pub.Snapshot())
	}
	return s
}

// LoopLoad is one loop's share of the global budgets. The loop updates it
// with plain arithmetic (it owns it) and calls Loop.Publish once per turn.
type LoopLoad struct {
	Conns        int64
	InflightReqs int64
	QueuedBytes  int64
}

// Loop is one event loop's admission handle. Everything in it is owned by
// that loop's goroutine: Admit, Dequeue, ObserveLag, Count and the Load
// fields are not safe for concurrent use. Publish makes the loop's counters
// visible to Tick and Stats with a few atomic stores per turn, instead of a
// shared atomic per message.
type Loop struct {
	a *Admitter
	// Load is the loop's current usage; see LoopLoad.
	Load   LoopLoad
	counts RejectCounts
	lag    *LagSignal
	codel  *CoDel

	pubConns, pubInflight, pubQueued atomic.Int64
	pub                              RejectCounters
}

// Publish copies the loop's load and decision counters to where Tick and
// Stats read them. Call it once per turn.
func (l *Loop) Publish() {
	l.pubConns.Store(l.Load.Conns)
	l.pubInflight.Store(l.Load.InflightReqs)
	l.pubQueued.Store(l.Load.QueuedBytes)
	for i := range l.counts {
		l.pub.n[i].Store(l.counts[i])
	}
}

// Frame is what Admit needs to know about one decoded frame, plus the
// idempotency outcome it fills in. The engine keeps one per loop and reuses
// it; Admit does not retain it or its slices.
type Frame struct {
	// Tenant is the tenant key (TenantKeyFunc); nil skips the quota.
	Tenant []byte
	// Cost is charged to the tenant in the quota's units. Zero: 1.
	Cost int64
	// Priority is the frame's class priority; best-effort frames are
	// refused while the CPU signal is hot.
	Priority Priority
	// ConnPending is the number of requests from this frame's connection
	// admitted and not yet answered.
	ConnPending int
	// IdempotencyKey, when non-empty and a store is configured, makes Admit
	// claim the key; Op and Payload make up its fingerprint.
	IdempotencyKey []byte
	Op, Payload    []byte

	// Claimed reports that Admit consulted the store; Claim is its answer.
	// The engine then runs the handler (ClaimNew, then Finish), replays
	// (ClaimDone), or answers 409/422 (ClaimInProgress, ClaimMismatch).
	Claimed bool
	Claim   Claim
	// Err is the cause behind a refusal that came from an error, else nil.
	// A store error refuses with ReasonGlobal (the store is a global
	// budget: full, or unreachable); when errors.Is(Err, ErrKeyTooLong) or
	// ErrEmptyKey the client sent a bad key and a codec that can should
	// answer "bad request" instead. A tenant backend error refuses with
	// ReasonTenant unless Config.TenantFailOpen; a cost above the burst
	// refuses with ReasonTenant and no retry-after.
	Err error
}

// Admit runs the admission order for one frame at now:
//
//  1. global caps: draining, memory above its watermark, in-flight or
//     queued bytes at their cap, CPU hot for best-effort work — one atomic
//     load when nothing is wrong;
//  2. tenant quota (GCRA), which charges Cost;
//  3. the connection's own queue (pipelined requests);
//  4. the idempotency store, when the frame has a key.
//
// A refusal is counted per reason. A frame refused at step 3 has already
// been charged to its tenant: it consumed reading and decoding.
func (l *Loop) Admit(ctx context.Context, now time.Time, f *Frame) Verdict {
	v := l.admit(ctx, now, f)
	l.counts[v.Reason]++
	return v
}

// chargeTenant charges cost to tenant's quota: admitted, or refused with
// reason tenant and the quota's retry-after (a cost that can never pass,
// or a backend error unless TenantFailOpen, with the error).
func (a *Admitter) chargeTenant(ctx context.Context, now time.Time, tenant []byte, cost int64) (Verdict, error) {
	d, err := a.cfg.Tenants.AllowN(ctx, now, tenant, cost)
	switch {
	case err == nil:
		if !d.Allowed {
			return Reject(ReasonTenant, d.RetryAfter), nil
		}
	case errors.Is(err, ErrCostExceedsBurst) || errors.Is(err, ErrBadCost):
		return Reject(ReasonTenant, 0), err
	case errors.Is(err, ErrTenantTableFull):
		return Reject(ReasonTenant, d.RetryAfter), err
	default:
		a.tenantErrors.Add(1)
		if !a.cfg.TenantFailOpen {
			return Reject(ReasonTenant, a.cfg.Retry.Global), err
		}
	}
	return Admitted(), nil
}

// ChargeBytes charges n bytes just read from a connection to tenant's
// quota, before any frame is decoded from them (the quota's units must be
// bytes). Admitted means the bytes fit; a refusal carries reason tenant
// and the retry-after after which the quota has room again, and the caller
// should refuse what those bytes hold and stop reading the connection
// until then. No quota configured (or an empty tenant) admits. Unlike
// Admit it counts no decision: the frames refused because of it are
// counted where they are refused.
func (l *Loop) ChargeBytes(ctx context.Context, now time.Time, tenant []byte, n int64) (Verdict, error) {
	a := l.a
	if a.cfg.Tenants == nil || len(tenant) == 0 || n <= 0 {
		return Admitted(), nil
	}
	return a.chargeTenant(ctx, now, tenant, n)
}

// Idempotency returns the store the Admitter claims idempotency keys in
// (nil: none); handlers Finish or Abandon their claims there.
func (a *Admitter) Idempotency() Store { return a.cfg.Idempotency }

// Tenants returns the tenant quota the Admitter charges (nil: none).
func (a *Admitter) Tenants() TenantQuota { return a.cfg.Tenants }

func (l *Loop) admit(ctx context.Context, now time.Time, f *Frame) Verdict {
	a := l.a
	f.Claimed, f.Err = false, nil
	if flags := a.flags.Load(); flags != 0 {
		switch {
		case flags&flagDraining != 0:
			return Reject(ReasonDraining, a.cfg.Retry.Draining)
		case flags&flagMemory != 0:
			return Reject(ReasonMemory, a.cfg.Retry.Memory)
		case flags&flagGlobal != 0:
			return Reject(ReasonGlobal, a.cfg.Retry.Global)
		case flags&flagCPU != 0 && f.Priority >= PriorityBestEffort:
			return Reject(ReasonCPU, a.cfg.Retry.CPU)
		}
	}
	if a.cfg.Tenants != nil && f.Tenant != nil {
		cost := f.Cost
		if cost == 0 {
			cost = 1
		}
		if v, err := a.chargeTenant(ctx, now, f.Tenant, cost); !v.Admit {
			f.Err = err
			return v
		}
	}
	if m := a.cfg.Conn.MaxPipelinedReqs; m > 0 && f.ConnPending >= m {
		return Reject(ReasonQueue, a.cfg.Retry.Queue)
	}
	if a.cfg.Idempotency != nil && len(f.IdempotencyKey) > 0 {
		c, err := a.cfg.Idempotency.Claim(ctx, now, f.IdempotencyKey, FingerprintOf(f.Op, f.Payload))
		if err != nil {
			a.claimErrors.Add(1)
			f.Err = err
			return Reject(ReasonGlobal, a.cfg.Retry.Global)
		}
		f.Claimed, f.Claim = true, c
	}
	return Admitted()
}

// Dequeue runs the loop's CoDel (when configured) for a request leaving the
// loop's queue at now after being enqueued at enqueued, and counts a shed.
func (l *Loop) Dequeue(now, enqueued time.Time) Verdict {
	if l.codel == nil {
		return Admitted()
	}
	v := l.codel.Dequeue(now, enqueued)
	if !v.Admit {
		l.counts[v.Reason]++
	}
	return v
}

// ObserveDelay folds a request's queueing delay into the loop's CoDel
// (when configured) without deciding about the request: the engine's
// derived shedding judges overload with CoDel and refuses by its own caps.
func (l *Loop) ObserveDelay(now, enqueued time.Time) {
	if l.codel != nil {
		l.codel.Observe(now, enqueued)
	}
}

// SetCoDelTarget sets the loop's CoDel target (CoDel.SetTarget); nothing
// without a CoDel.
func (l *Loop) SetCoDelTarget(d time.Duration) {
	if l.codel != nil {
		l.codel.SetTarget(d)
	}
}

// Overloaded reports whether the loop's CoDel judged its last complete
// interval overloaded (a standing queue: not empty recently); false
// without a CoDel.
func (l *Loop) Overloaded() bool { return l.codel != nil && l.codel.Overloaded() }

// QueueEmpty tells the loop's CoDel that its queue drained at now.
func (l *Loop) QueueEmpty(now time.Time) {
	if l.codel != nil {
		l.codel.Empty(now)
	}
}

// ServeNewestFirst reports whether the loop should serve its queue LIFO.
func (l *Loop) ServeNewestFirst() bool { return l.codel != nil && l.codel.ServeNewestFirst() }

// ObserveLag records the turn's largest readiness-to-handling lag.
func (l *Loop) ObserveLag(now time.Time, lag time.Duration) {
	if l.lag != nil {
		l.lag.Observe(now, lag)
	}
}

// Count counts a refusal the engine carried out on this loop for a reason
// Admit did not decide (a concurrency refusal, a connection shed).
func (l *Loop) Count(r Reason) {
	if r < NumReasons {
		l.counts[r]++
	}
}

// CheckConn applies the per-connection budgets; see ConnBudgets.Check.
func (l *Loop) CheckConn(queuedBytes, queuedMsgs int64, paused bool) ConnAction {
	return l.a.cfg.Conn.Check(queuedBytes, queuedMsgs, paused)
}
