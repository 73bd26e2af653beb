// Package bench is sluice's load generator: closed- and open-loop load over
// raw TCP against any server that echoes, with latency from intended send
// times and HDR histograms. It is what a program embeds to drive a server;
// cmd/sluiceload is the same generator as a command.
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
//     its request: framed responses by order, length, sequence number and
//     content; raw echo by byte accounting (echo servers may split and
//     coalesce) and content.
//   - The TLS generator (LoadConfig.TLS): the same closed and open loops,
//     checks and histograms over crypto/tls client connections, which the
//     epoll loops cannot drive, so each connection is a reader and a writer
//     goroutine (a higher cost per message than the raw generator's); and a
//     handshake mode (LoadConfig.Handshakes): workers that dial, handshake
//     (resuming sessions when the tls.Config caches them), send one request
//     and close, for handshakes per second, the share resumed, failures by
//     reason and the handshake's latency. The tls.Config (trust, versions,
//     the session cache) is the caller's.
//   - The framings (Codec): raw bytes, a length prefix (1, 2, 4 or 8 bytes,
//     big- or little-endian), lines, RESP
//     (ECHO commands, for redis-server and sluice's kv) and HTTP/1.1 (POST
//     /echo with keep-alive); the methods on Codec encode a request and
//     decode and check a response for a program that speaks to a server
//     outside Load.
//   - Latency histograms: one HdrHistogram per event loop, merged after the
//     loops stop (MergeHistograms), summarised as p50/p90/p99/p99.9/max
//     (LatencySummary).
//   - The result (LoadResult): throughput, latency, rejects, errors by kind,
//     and the CPU, system calls and memory of the client and, given its PID,
//     of the server (ProcUsage, CoreUsage); FormatLoadResult prints it.
//
// bench refuses to own the servers under test (package server, cmd/echo),
// framing for servers (package protocol; the generator frames and checks with
// its own code so that it does not share what it verifies), flag parsing
// (cmd/sluiceload, lab/cmd/bench) and the comparison lab: the runner that sets
// sluice beside gnet, net and the C floor servers, its peers, reports and
// charts live in the lab module (lab/) and are reached through its cmd/bench.
//
// Linux only: the generator uses epoll and reads /proc. Elsewhere Load
// returns ErrUnsupported.
//
// Usage:
//
//	res, err := bench.Load(ctx, bench.LoadConfig{
//		Addr: "127.0.0.1:7000", Codec: bench.CodecLength,
//		Conns: 64, InFlight: 16, Size: bench.FixedSize(64),
//		Warmup: time.Second, Duration: 5 * time.Second,
//	})
//	fmt.Print(bench.FormatLoadResult(res))
package bench
