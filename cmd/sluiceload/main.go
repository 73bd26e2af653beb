// Command sluiceload is wrk for binary protocols: a load generator for any
// TCP server that echoes, with raw, length-field (1, 2, 4 or 8 bytes, either
// byte order), line, RESP or HTTP/1.1 framing, in a closed loop (connections × requests in flight) or an open
// loop at a fixed rate with latency from intended send times (coordinated
// omission corrected, as wrk2 does). It checks every response against its
// request, prints a progress line while it runs, HDR-histogram percentiles
// when it ends, the result as JSON with -json, and the latency by percentile
// as an SVG chart with -svg. With -tls it speaks TLS 1.3 (on goroutines
// rather than its epoll loops), and with -handshakes it measures handshakes:
// their rate, the share resumed (-tls-resume) and their latency.
//
//	go install github.com/sluicenet/sluice/cmd/sluiceload@latest
//	sluiceload -addr 127.0.0.1:7000 -codec length -conns 64 -inflight 16 -size 64 -duration 10s
//	sluiceload -addr 127.0.0.1:6379 -codec resp -rate 50000 -svg latency.svg
//	sluiceload -addr 127.0.0.1:8080 -codec http -conns 32 -json > result.json
//	sluiceload -addr 127.0.0.1:7443 -tls -tls-ca cert.pem -conns 64 -inflight 8
//	sluiceload -addr 127.0.0.1:7443 -tls -tls-ca cert.pem -handshakes -tls-resume -conns 16
//
// Run "sluiceload -h" for every flag. It is the generator lab/cmd/bench load
// runs (package bench; flags in internal/loadcmd). Linux only.
package main

import (
	"os"

	"github.com/sluicenet/sluice/internal/loadcmd"
)

func main() { os.Exit(loadcmd.Main("sluiceload", os.Args[1:])) }
