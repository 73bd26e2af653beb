// Package bench is sluice's load generator and comparison runner: closed- and
// open-loop load over raw TCP with latency from intended send times, HDR
// histograms, and a runner that sets sluice's cmd/echo side by side with a
// gnet v2 and a standard-library echo server and writes the report.
//
// bench owns:
//
//   - The generator (Load, LoadConfig, LoadResult). Event loops on raw
//     non-blocking sockets and edge-triggered epoll, one locked OS thread
//     each, so that the generator is cheaper per message than the servers it
//     drives; the send and receive path takes no lock and allocates nothing.
//     Closed loop: N connections × P requests in flight × S bytes, a new
//     request as each response arrives. Open loop: a fixed total rate spread
//     round-robin over the connections (OpenSchedule), latency measured from
//     each request's intended send time (coordinated omission corrected, as
//     wrk2 does); sends issued late are counted, sends that could not be
//     issued at all are counted as missed. Every response is checked against
//     its request: length-prefixed and line frames by order, length, sequence
//     number and content; raw echo by byte accounting (echo servers may split
//     and coalesce) and content.
//   - Latency histograms: one HdrHistogram per event loop, merged after the
//     loops stop (MergeHistograms), summarised as p50/p90/p99/p99.9/max.
//   - The comparison runner (Compare, CompareConfig, Report): builds cmd/echo,
//     starts every server as its own process pinned to the server CPU and the
//     generator as its own process pinned to the client CPU, alternates the
//     servers within each round, derives the open-loop rates from the measured
//     peak, and measures idle memory per connection and the system-call mix.
//   - Reports: JSON, markdown tables and SVG charts (WriteReport).
//
// bench refuses to own the servers under test (package server, cmd/echo),
// framing for servers (package protocol; the generator frames and checks
// with its own code so that it does not share what it verifies), the peer
// servers (package bench/peers) and flag parsing (package bench/cli).
//
// Linux only: the generator uses epoll and the runner reads /proc. Elsewhere
// Load and Compare return ErrUnsupported.
//
// Usage:
//
//	res, err := bench.Load(ctx, bench.LoadConfig{
//		Addr: "127.0.0.1:7000", Codec: bench.CodecLength,
//		Conns: 64, InFlight: 16, Size: bench.FixedSize(64),
//		Warmup: time.Second, Duration: 5 * time.Second,
//	})
//	fmt.Print(bench.FormatLoadResult(res))
//
//	rep, err := bench.Compare(ctx, bench.CompareConfig{Codec: bench.CodecLength})
//	_, err = bench.WriteReport(rep, "docs/bench", "docs/BENCHMARKS.md")
package bench
