// Package shed is sluice's shedding law: when a server short of capacity
// refuses work, which work, and for how long its refusals wait to be
// written. The engine's loops and its worker pool both use it, with the
// one set of constants below.
//
// It owns the law, as pure types with time passed in (nanoseconds of one
// monotonic clock): the service-time estimate and the queueing-delay caps
// derived from it (Caps: C = 2·S, L = max(8·C, C + 2·hold)), the overload
// judgement over a busy window with hysteresis (Busy), the cap a frame of
// each priority gets (Caps.For), max-min fair shares between tenants
// (Fair), the worker pool's predicted wait (PredictedLong), and the
// holding of refusals and parking of reads (Hold, PeerWaits, Pace), and
// the bound on what refusing may cost a loop before it rations its reads
// (Ration). CoDel
// itself, tenant quotas and the listen gate are package admission's.
//
// It refuses to own mechanism: it touches no socket, loop, list or
// connection, reads no clock and starts no goroutine. The engine keeps
// the state it is given here per loop (or per pool) and carries out the
// answers: refusing a frame, holding an out-queue, deferring a read.
//
// The law, its measurements and what it does not yet meet are in
// docs/OVERLOAD.md.
//
// Usage sketch, as a loop uses it:
//
//	caps := shed.NewCaps(shed.LoopMinCap, rejectFlush)
//	busy := shed.NewBusy(now)
//	// after each wait that slept d nanoseconds:
//	busy.Slept(now, d)
//	busy.Judge(now, caps.Short())
//	// each frame, with its queueing delay:
//	limit, reason := caps.For(priority, busy.Standing(now, caps.Long()))
//	if delay > limit { /* refuse with reason */ }
//	// after the handler took d:
//	caps.Observe(d)
package shed
