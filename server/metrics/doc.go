// Package metrics exports a sluice engine's counters to Prometheus through
// one prometheus.Collector that reads them at scrape time.
//
// It owns the metric names, types, units and HELP texts (every one is listed
// in docs/OBSERVABILITY.md), and the translation of snapshots into
// Prometheus metrics: server.Stats from the engine (its admission part
// included), and two optional sources, AdmissionSource (rejects by reason,
// gate state, tenants, in-flight by class) and HistogramSource (loop turn
// duration, loop lag, events per turn, out-queue depth, request latency).
// For a *server.Engine source both default to the engine's own:
// Engine.Histograms, which the loops fill from per-loop bucket arrays, and
// the admission policy's stats when the engine has one.
//
// It refuses to count anything itself: the loops count in plain memory and
// publish once per turn (server.Stats), so the data path has no lock, no
// contended atomic and no prometheus.Counter.Inc per message; a scrape costs
// one Stats call (a few loads per loop per counter) and allocates only the
// metrics it returns. It does not serve HTTP (package server/admin does) and
// does not register itself anywhere.
//
// Usage:
//
//	c, err := metrics.NewForEngine(engine, metrics.Options{})
//	if err != nil { ... }
//	reg := prometheus.NewRegistry()
//	if err := reg.Register(c); err != nil { ... }
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// Tests and other engines feed scripted snapshots through New with a
// SourceFunc.
package metrics
