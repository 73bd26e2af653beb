// Command tune reads a Linux host's cores, memory, cgroup limits, file
// descriptor limits and TCP sysctls, and proposes sluice budgets for a
// target (connections, message size, memory share): as cmd/echo flags, as a
// server.Config literal, and with the sysctl and ulimit lines the target
// needs. It reads only; it never changes the host.
//
//	go run ./cmd/tune -conns 10000 -msg-bytes 128
//	go run ./cmd/tune -conns 100000 -msg-bytes 1KiB -inflight 4 -json
//
// The logic lives in internal/tune.
package main

import (
	"os"

	"github.com/sluicenet/sluice/internal/tune"
)

func main() {
	os.Exit(tune.Main(os.Args[1:], os.Stdout, os.Stderr, tune.DirFS))
}
