// Package admission decides, with time passed in, whether work may enter a
// sluice server: budgets with High/Low watermarks and hysteresis, the listen
// gate, per-tenant GCRA quotas, concurrency limits (bulkheads, fixed or
// adaptive), active shedding (CoDel on queueing delay, loop lag, CPU), the
// hot switch for degraded paths, explicit reject reasons with retry-after,
// and the idempotency store.
//
// It owns policy: pure answers to questions such as "may this frame
// proceed?" (Loop.Admit), "should the listener be in epoll?"
// (GatePolicy.State), "should this request that waited 12ms be shed?"
// (CoDel.Dequeue). It refuses to own mechanism: it never touches a socket,
// an epoll set, a timer or a goroutine of the engine; it does not read the
// clock (every decision takes now) except where a backend must (Redis, in
// package redisstore); it does not import server.
//
// Cost model: the per-frame path (Loop.Admit with an in-memory tenant
// limiter) allocates nothing and takes one shard lock; aggregate counters are
// owned by each loop and published once per turn (Loop.Publish); sampling
// that costs a syscall or a runtime/metrics read happens in Admitter.Tick at
// most once per SampleInterval.
//
// Usage sketch, as an engine would wire it:
//
//	tenants, _ := admission.NewTenantLimiter(admission.TenantConfig{
//		Quota: admission.Quota{Count: 1000, Per: time.Second, Burst: 100}})
//	adm, _ := admission.NewAdmitter(admission.Config{
//		MaxInflightReqs: 5_000,
//		Tenants:         tenants,
//		Conn:            admission.ConnBudgets{MaxPipelinedReqs: 64},
//		CoDel:           &admission.CoDelConfig{},
//	})
//	// the engine hands over what it owns (server.New does this):
//	adm.Bind(admission.Binding{Loops: numLoops, MaxConns: 10_000, MaxQueuedBytes: 256 << 20})
//	lp := adm.Loop(i) // owned by loop i
//
//	// each turn, after epoll_wait, with the turn's clock:
//	lp.Publish()
//	adm.Tick(now) // cheap unless SampleInterval has passed
//	if adm.Gate().State().Listening() != listening { /* EPOLL_CTL_ADD/DEL the listen fd */ }
//
//	// each frame:
//	f.Tenant = keyFn(f.Tenant[:0], peer, envTenant)
//	if v := lp.Admit(ctx, now, &f); !v.Admit {
//		// encode a reject: v.Reason, v.RetryAfter; the connection stays open
//	}
//
//	// accept4 failed:
//	if pause, ok := adm.Gate().AcceptError(now, err); ok { /* del listen fd, arm timer for pause */ }
package admission
