package main

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/internal/spin"
	"github.com/sluicenet/sluice/server"
	"github.com/sluicenet/sluice/server/metrics"
)

// Work modes of -work-mode.
const (
	workInline = "inline" // the simulated work runs on the loop, in OnFrame
	workPool   = "pool"   // it runs on the engine's worker pool
)

// overloadFlags are the admission and simulated-work flags.
type overloadFlags struct {
	maxQueuedBytes int64
	maxInflight    int64
	budgetConns    int64
	memoryLimit    int64
	gateHigh       float64
	gateLow        float64
	gateDwell      time.Duration
	backlogReject  float64
	tenantRate     float64
	tenantBurst    int64
	tenantBytes    bool
	tenantReads    bool
	concurrency    int
	shed           bool
	criticalBelow  int
	bestEffortOver int
	codelTarget    time.Duration
	codelInterval  time.Duration
	maxQueueDelay  time.Duration
	rejectDelay    time.Duration
	goAwayAfter    time.Duration
	maxFrames      int
	backlog        int

	work      time.Duration
	workMode  string
	workers   int
	poolQueue int
}

// register adds the flags to fs.
func (o *overloadFlags) register(fs *flag.FlagSet) {
	fs.Int64Var(&o.maxQueuedBytes, "max-queued-bytes", 0, "global budget on queued bytes (input + output, all connections): reading stops for connections that do not read, frames are refused with reason global, and the gate closes at its watermark (0: none)")
	fs.Int64Var(&o.maxInflight, "max-inflight", 0, "global budget on requests in the worker pool; frames past it are refused with reason global (0: none)")
	fs.Int64Var(&o.budgetConns, "budget-conns", 0, "connection budget with the admission gate on top: unless -max-conns is set it becomes the engine's exact cap at accept time (-max-conns), and the admission gate, which derives its connection budget from that cap, closes with hysteresis (-gate-high/-gate-low/-gate-dwell) on the maximum normalised pressure (0: none)")
	fs.Int64Var(&o.memoryLimit, "memory-limit", 0, "memory budget in bytes for the gate and for refusals with reason memory (0: GOMEMLIMIT when set, <0: none)")
	fs.Float64Var(&o.gateHigh, "gate-high", 0.95, "listen gate: close when the maximum normalised pressure of the global budgets reaches this")
	fs.Float64Var(&o.gateLow, "gate-low", 0.80, "listen gate: reopen when the pressure has stayed at or below this for -gate-dwell")
	fs.DurationVar(&o.gateDwell, "gate-dwell", 500*time.Millisecond, "listen gate: minimum time below -gate-low before reopening")
	fs.Float64Var(&o.backlogReject, "backlog-reject", 0, "when the gate is closed and the kernel accept queue is fuller than this fraction (0..1], accept and answer each new connection with a reject instead of letting the kernel drop handshakes (0: off)")
	fs.Float64Var(&o.tenantRate, "tenant-rate", 0, "per-tenant (peer IP) quota in requests per second, GCRA (0: none)")
	fs.Int64Var(&o.tenantBurst, "tenant-burst", 0, "per-tenant burst (0: one second of -tenant-rate)")
	fs.BoolVar(&o.tenantBytes, "tenant-bytes", false, "charge each frame's bytes to the tenant instead of 1 request (-tenant-rate is then bytes per second)")
	fs.BoolVar(&o.tenantReads, "tenant-charge-reads", false, "with -tenant-bytes: charge bytes as they are read, before decoding; a read over quota has its frames refused and the connection is not read until the quota has room")
	fs.IntVar(&o.concurrency, "concurrency", 0, "concurrency limit (bulkhead) on the simulated work; frames past it are refused with reason concurrency (0: none)")
	fs.BoolVar(&o.shed, "shed", false, "active shedding: CoDel on each frame's queueing delay (on the loop, or in the worker pool), refusing with reason codel")
	fs.IntVar(&o.criticalBelow, "critical-below", 0, "with the admission policy on: frames shorter than this many bytes are critical (refused last), the rest normal; a size-based AdmissionPolicy.Classify for measuring priorities (0: every frame normal)")
	fs.IntVar(&o.bestEffortOver, "best-effort-above", 0, "with the admission policy on: frames longer than this many bytes are best-effort (refused first), with -critical-below a three-class size-based AdmissionPolicy.Classify (0: none best-effort)")
	fs.DurationVar(&o.codelTarget, "codel-target", 0, "CoDel target queueing delay (-shed; 0: derived from the measured service time in the worker pool, 5ms for a loop with a fixed -max-queue-delay)")
	fs.DurationVar(&o.codelInterval, "codel-interval", 100*time.Millisecond, "CoDel interval (-shed)")
	fs.DurationVar(&o.maxQueueDelay, "max-queue-delay", 0, "with -shed -work-mode inline: refuse frames that waited longer than this whatever CoDel says, reason queue (0: derived from the measured handler time, see docs/OVERLOAD.md; negative: none, CoDel alone)")
	fs.DurationVar(&o.rejectDelay, "reject-flush-delay", 0, "with the admission policy on: a connection whose queued output is only rejects is written with its next reply or after this long, so shedding does not cost a writev per connection per turn (0: with the derived queueing-delay cap, reads deferred 10ms and rejects held 10ms or 100ms by how the peer behaves, see AdmissionPolicy.RejectFlushDelay; else none; negative: rejects are written at once)")
	fs.DurationVar(&o.goAwayAfter, "goaway-after", 0, "with the derived queueing-delay cap: close a connection refused this long without an admission, while the loop rations its reads, with a final refusal (reason goaway) and refuse its tenant's new connections at accept as long (0: derived, 1s; negative: never), see AdmissionPolicy.GoAwayAfter")
	fs.IntVar(&o.maxFrames, "max-frames-per-turn", 0, "frames dispatched per connection per loop turn (0: default 256)")
	fs.IntVar(&o.backlog, "backlog", 0, "listen(2) backlog (0: default 4096, capped by net.core.somaxconn)")
	fs.DurationVar(&o.work, "work", 0, "simulated CPU cost per frame: a calibrated busy loop of this much CPU time before the echo (internal/spin, as the bench peers), e.g. 200us (0: none)")
	fs.StringVar(&o.workMode, "work-mode", workInline, "where -work runs: inline (on the loop; shedding is CoDel on the loop's queueing delay) or pool (the engine's worker pool; CoDel on the pool queue, newest first when overloaded)")
	fs.IntVar(&o.workers, "workers", 0, "worker goroutines with -work-mode pool (0: GOMAXPROCS)")
	fs.IntVar(&o.poolQueue, "pool-queue", 0, "worker pool queue length (0: default 1024)")
}

// policyOn reports whether a flag asks for the admission policy.
func (o *overloadFlags) policyOn() bool {
	return o.maxQueuedBytes > 0 || o.maxInflight > 0 || o.budgetConns > 0 || o.memoryLimit > 0 ||
		o.backlogReject > 0 || o.tenantRate > 0 || o.shed
}

// apply wires the flags into cfg and wraps handler (the echo) with the
// simulated work and the concurrency limit. It returns the metrics source
// for the admin endpoint (nil without a policy).
func (o *overloadFlags) apply(cfg *server.Config, handler server.Handler, codecName string) (server.Handler, metrics.AdmissionSource, error) {
	switch {
	case o.workMode != workInline && o.workMode != workPool:
		return nil, nil, fmt.Errorf("-work-mode %q: want inline or pool", o.workMode)
	case o.workMode == workPool && codecName == codecHTTP:
		return nil, nil, fmt.Errorf("-work-mode pool echoes frames: use -codec raw, length, length16, varint or line")
	case o.tenantRate < 0 || o.tenantBurst < 0:
		return nil, nil, fmt.Errorf("-tenant-rate %v, -tenant-burst %d: must not be negative", o.tenantRate, o.tenantBurst)
	case o.maxQueuedBytes < 0 || o.maxInflight < 0 || o.budgetConns < 0 || o.concurrency < 0 || o.criticalBelow < 0 || o.bestEffortOver < 0:
		return nil, nil, fmt.Errorf("-max-queued-bytes, -max-inflight, -budget-conns, -concurrency, -critical-below and -best-effort-above must not be negative")
	case o.bestEffortOver > 0 && o.bestEffortOver < o.criticalBelow:
		return nil, nil, fmt.Errorf("-best-effort-above %d is below -critical-below %d", o.bestEffortOver, o.criticalBelow)
	}
	if o.tenantReads && (!o.tenantBytes || o.tenantRate <= 0) {
		return nil, nil, fmt.Errorf("-tenant-charge-reads needs -tenant-bytes and -tenant-rate")
	}
	if o.work < 0 {
		return nil, nil, fmt.Errorf("-work %v: must not be negative", o.work)
	}
	cfg.MaxQueuedBytes = int(o.maxQueuedBytes)
	if o.budgetConns > 0 && cfg.MaxConns == 0 {
		// The policy samples its pressure (every 10 ms at most), so with a
		// deep accept queue a reopened gate could accept far past the
		// budget before it closes again; the engine's MaxConns caps the
		// count exactly at accept time, and the policy adds the dwell.
		cfg.MaxConns = int(o.budgetConns)
		cfg.MaxConnsLow = min(cfg.MaxConns-1, max(0, int(o.gateLow*float64(o.budgetConns))))
	}
	cfg.MaxFramesPerTurn = o.maxFrames
	cfg.Backlog = o.backlog
	var conc *admission.Concurrency
	if o.concurrency > 0 {
		var err error
		conc, err = admission.NewConcurrency(admission.ConcurrencyConfig{
			Total:   admission.LimitConfig{Fixed: o.concurrency},
			Classes: []admission.ClassConfig{{Name: "echo", Priority: admission.PriorityNormal}},
		})
		if err != nil {
			return nil, nil, fmt.Errorf("-concurrency: %w", err)
		}
	}
	var adm *admission.Admitter
	var tenants *admission.TenantLimiter
	if o.policyOn() {
		// the engine owns the connection and queued-byte caps (cfg.MaxConns,
		// cfg.MaxQueuedBytes above) and hands them to the Admitter with its
		// loop count (server.New binds it)
		acfg := admission.Config{
			MaxInflightReqs:  o.maxInflight,
			MemoryLimitBytes: o.memoryLimit,
			Gate: admission.GateConfig{Watermark: admission.Watermark{High: o.gateHigh, Low: o.gateLow, MinDwell: o.gateDwell},
				RejectBacklogAbove: o.backlogReject},
		}
		if o.tenantRate > 0 {
			q := admission.Quota{Count: int64(o.tenantRate * 1000), Per: 1000 * time.Second, Burst: o.tenantBurst}
			if q.Burst == 0 {
				q.Burst = max(1, int64(o.tenantRate))
			}
			var err error
			if tenants, err = admission.NewTenantLimiter(admission.TenantConfig{Quota: q}); err != nil {
				return nil, nil, fmt.Errorf("-tenant-rate/-tenant-burst: %w", err)
			}
			acfg.Tenants = tenants
		}
		if o.shed && o.workMode == workInline {
			acfg.CoDel = &admission.CoDelConfig{Target: o.codelTarget, Interval: o.codelInterval}
		}
		var err error
		if adm, err = admission.NewAdmitter(acfg); err != nil {
			return nil, nil, err
		}
		pol := server.AdmissionPolicy{Admitter: adm, CostBytes: o.tenantBytes && !o.tenantReads, ChargeReadBytes: o.tenantBytes && o.tenantReads,
			RejectFlushDelay: offIfNegative(o.rejectDelay),
			GoAwayAfter:      offIfNegative(o.goAwayAfter)}
		if acfg.CoDel != nil { // the loop sheds on queueing delay
			pol.MaxQueueDelay = offIfNegative(o.maxQueueDelay)
		}
		if crit, be := o.criticalBelow, o.bestEffortOver; crit > 0 || be > 0 {
			pol.Classify = func(_ *server.Conn, frame []byte, f *admission.Frame) {
				switch {
				case len(frame) < crit:
					f.Priority = admission.PriorityCritical
				case be > 0 && len(frame) > be:
					f.Priority = admission.PriorityBestEffort
				}
			}
		}
		cfg.Admission = pol
	}
	w := &workHandler{Handler: handler, work: o.work, conc: conc}
	if o.workMode == workPool {
		cfg.Pool = server.PoolConfig{Handler: w, Workers: o.workers, QueueLen: o.poolQueue}
		if cfg.Pool.Workers == 0 {
			cfg.Pool.Workers = runtime.GOMAXPROCS(0)
		}
		if o.shed {
			cfg.Pool.CoDel = &admission.CoDelConfig{Target: o.codelTarget, Interval: o.codelInterval}
		}
	}
	var src metrics.AdmissionSource
	if adm != nil {
		src = metrics.NewAdmissionSource(adm, conc, tenants)
	}
	if o.work == 0 && conc == nil && o.workMode == workInline {
		return handler, src, nil
	}
	return w, src, nil
}

// workHandler burns -work of CPU per frame, under the concurrency limit,
// then hands the frame to the echo. As a BlockingHandler (-work-mode pool)
// it runs on the engine's workers; as a Handler (inline) on the loop.
type workHandler struct {
	server.Handler
	work time.Duration
	conc *admission.Concurrency
}

// OnFrame runs the work inline, on the loop.
func (h *workHandler) OnFrame(c *server.Conn, frame []byte) server.Action {
	permit, ok := h.acquire(c, frame)
	if !ok {
		return server.None
	}
	t0 := time.Now()
	spin.For(h.work)
	h.release(permit, t0)
	return h.Handler.OnFrame(c, frame)
}

// ServeFrame runs the work on a worker; the echo's WriteFrame goes
// through the loop's inbox.
func (h *workHandler) ServeFrame(ctx context.Context, c *server.Conn, frame []byte) server.Action {
	permit, ok := h.acquire(c, frame)
	if !ok {
		return server.None
	}
	t0 := time.Now()
	spin.For(h.work)
	h.release(permit, t0)
	if err := c.WriteFrame(frame); err != nil {
		c.CloseWithError(err)
	}
	return server.None
}

// acquire takes a concurrency slot; without one it answers the frame with
// the codec's reject (reason "concurrency").
func (h *workHandler) acquire(c *server.Conn, frame []byte) (admission.Permit, bool) {
	if h.conc == nil {
		return admission.Permit{}, true
	}
	p, v := h.conc.Acquire(time.Now(), 0)
	if v.Admit {
		return p, true
	}
	if err := c.Reject(frame, v.Reason.String(), v.RetryAfter); err != nil {
		c.CloseWithError(err)
	}
	return admission.Permit{}, false
}

func (h *workHandler) release(p admission.Permit, t0 time.Time) {
	if h.conc != nil {
		now := time.Now()
		h.conc.Release(now, p, now.Sub(t0))
	}
}

// offIfNegative maps a negative duration flag to server.Off.
func offIfNegative(d time.Duration) time.Duration {
	if d < 0 {
		return server.Off
	}
	return d
}
