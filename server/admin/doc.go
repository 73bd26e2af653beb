// Package admin serves a sluice engine's operational endpoints over HTTP,
// on the standard library's net/http, outside the event loops:
//
//	/metrics        Prometheus metrics (package server/metrics), on the
//	                server's own registry, plus Go runtime and process metrics
//	/healthz        200 while the process is up
//	/readyz         200 only when not draining and the listen gate is open
//	                (what a load balancer should read), else 503 and why
//	/debug/pprof/   net/http/pprof, registered on the server's own mux
//	/debug/sluice   a JSON snapshot of Engine.Stats (and of admission when
//	                configured)
//
// It owns the admin listener, its mux and registry, the draining flag that
// /readyz reports, and the JSON view of the stats. It refuses to own the
// engine or its lifecycle (it only reads Stats), metric definitions
// (package metrics), and any endpoint that changes the server: it is
// read-only. Because the handlers run on ordinary goroutines and a scrape
// reads counters the loops publish once per turn, it answers while the
// loops are saturated (tested); it does not answer if the whole process is
// starved of CPU.
//
// Bind it to loopback (127.0.0.1:9100 in the examples): /debug/pprof/ and
// /debug/sluice expose internals. Importing net/http/pprof also registers
// its handlers on http.DefaultServeMux; this package never serves that mux.
//
// Usage, in a command with an -admin-addr flag (empty: off):
//
//	adm, err := admin.New(*adminAddr, admin.Config{Stats: engine, Logger: log})
//	if err != nil { ... }
//	defer adm.Shutdown(context.Background())
//	...
//	adm.SetDraining(true) // before a graceful shutdown: /readyz says 503
package admin
