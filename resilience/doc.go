// Package resilience is what a sluice handler or client uses towards its own
// dependencies: error classification, retries with backoff, jitter, a
// deadline and a per-destination retry budget, circuit breakers, hedging,
// bulkheads and adaptive client-side throttling.
//
// The package owns policy only. It is transport-free: it never dials, reads
// or writes, and it never reads a clock inside a policy. Breaker.Allow,
// Breaker.Record and RetryState.Next take now, so tests are tables over
// t0..tN with no sleeps; Budget and Bulkhead count, they do not time. Only
// the goroutine-level helpers, Retrier.Do and Hedge, wait, and they do so
// through a Clock (SystemClock unless told otherwise). It refuses to own
// connections, request encoding, idempotency keys (the client sets one per
// logical call) and server-side admission (package admission).
//
// Sketch:
//
//	budget, _ := resilience.NewBudget(resilience.BudgetConfig{}) // one per destination
//	breaker, _ := resilience.NewBreaker(resilience.BreakerConfig{})
//	r := &resilience.Retrier{
//		Policy:  resilience.RetryPolicy{MaxAttempts: 3, TypicalLatency: 5 * time.Millisecond},
//		Budget:  budget,
//		Breaker: breaker,
//	}
//	err := r.Do(ctx, func(ctx context.Context) error { return callDependency(ctx) })
//
// With the pure pieces directly:
//
//	st := policy.Start(deadline)
//	for {
//		t, err := breaker.Allow(now)
//		... call ...
//		breaker.Record(now, t, latency, resilience.Classify(err).Outcome())
//		delay, stop := st.Next(now, err)
//		if stop != nil { break }
//		... wait delay, ask budget.TryRetry() ...
//	}
//
// Errors are classified by Classify: self-classifying errors (Classifier),
// then syscall errnos, context and os sentinels, DNS errors and timeouts.
// Retries and hedges to one destination draw on one Budget, which combines
// gRPC's retry throttling (tokens) with Envoy's cap on concurrent retries as
// a share of calls in flight; under a failure burst it keeps outbound calls
// close to one per inbound call.
//
// A Throttle is the SRE book's adaptive throttling: over a 30 s window it
// counts requests and the destination's accepts, and refuses an attempt
// itself (ErrThrottled, ClassOverloaded) with probability
// max(0, (requests − K·accepts)/(requests + 1)), K = 2 by default, capped
// at MaxProbability (0.9 by default, as Envoy's admission control caps
// it), so a client stops sending most of what a refusing destination would
// refuse anyway, and is back to full rate within about two windows of the
// destination's recovery.
// Retrier.Do and Hedge record such a local refusal in the Budget
// (RecordLocalRefusal: a token's cost, counted in LocalRefusals) and not in
// the Breaker. See docs/CLIENT.md#client-side-throttling.
package resilience
