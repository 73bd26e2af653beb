// Package ratelog rate-limits log records per message, so a flood of events
// (EMFILE on every accept, a gate flapping, a peer misbehaving a million
// times) cannot become a flood of log lines.
//
// It owns a slog.Handler wrapper (Handler) and the per-key token bucket
// behind it (Limiter, GCRA: one timestamp per key, time passed in). A
// record passes when its message has a token; otherwise it is dropped and
// counted, and the next record of that message that passes carries
// suppressed=K. Flush reports the counts of floods that stopped. Memory is
// bounded by Options.MaxKeys.
//
// It refuses to decide what is logged, to format anything, or to buffer
// records: formatting belongs to the wrapped handler, and a dropped record
// is gone (only its count survives). It keys on the message alone, so
// structured fields (peer address, fd) do not multiply the keys: write
// "accept failed" with an errno attribute, not the errno in the message.
//
// Usage:
//
//	h, err := ratelog.New(slog.NewJSONHandler(os.Stderr, nil),
//		ratelog.Options{Burst: 5, Interval: 10 * time.Second})
//	if err != nil { ... }
//	log := slog.New(h)
//	log.Warn("accept paused", "errno", "EMFILE") // at most 5 at once, then 1 per 2 s
//	...
//	h.Flush(ctx) // from a ticker and at shutdown
package ratelog
