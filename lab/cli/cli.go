// Package cli is the command line of cmd/bench: the compare, load, peer,
// render, external and overload commands, their flags and their output.
//
// cli owns flag parsing and printing and nothing else; the work is done by
// package bench (the generator), package lab (runner, reports) and package
// lab/peers. It is a package rather than cmd/bench's main so that the
// comparison runner can start
// any binary that calls Main (cmd/bench itself, or a test binary) as its
// generator and peer processes.
//
// Usage:
//
//	func main() { os.Exit(cli.Main(os.Args[1:])) }
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicenet/sluice/internal/loadcmd"
	"github.com/sluicenet/sluice/internal/procstat"
)

// Main runs the command named by args[0] with the rest of args as its flags,
// until it finishes or the process receives SIGINT or SIGTERM, and returns the
// process exit code: 0 on success, 1 on failure, 2 on a usage error.
func Main(args []string) int {
	if len(args) < 1 {
		usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch args[0] {
	case "compare":
		err = runCompare(ctx, args[1:])
	case "load":
		err = runLoad(ctx, args[1:])
	case "peer":
		err = runPeer(ctx, args[1:])
	case "external":
		err = runExternal(ctx, args[1:])
	case "overload":
		err = runOverload(ctx, args[1:])
	case "connflood":
		err = runConnFlood(ctx, args[1:])
	case "peerflood":
		err = runPeerFlood(ctx, args[1:])
	case "render":
		err = runRender(args[1:])
	case "-h", "-help", "--help", "help":
		usage()
		return 0
	default:
		fmt.Fprintf(os.Stderr, "bench: unknown command %q\n", args[0])
		usage()
		return 2
	}
	if errors.Is(err, loadcmd.ErrUsage) {
		return 2 // the flag package has printed the problem and the usage
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}

func usage() {
	fmt.Fprint(os.Stderr, `usage: bench <command> [flags]

commands:
  compare   run the comparison matrix (sluice cmd/echo, gnet, net; -servers adds sluice-uring, c-epoll, c-uring) and write the report
  load      run one load test (closed or open loop) against a server
  peer      run a peer server: gnet, net, or trivial (for the generator's ceiling); gnet-http, nethttp
  render    re-render report.md and the charts from a saved report.json
  external  redis-benchmark (redis-server vs sluice kv) and wrk (sluice HTTP vs gnet vs net/http)
  overload  goodput at 5× capacity, memory under non-reading peers, the listen gate, full accept queues;
            with -matrix the overload matrix (2×-10× capacity, 50 µs-20 ms of work, inline and pool, 64 and 1,000 connections);
            with -hammer the hammer cells (closed loops of 1,000 × 8, 1,000 × 64 and 64 × 64 requests in flight)
  connflood open connections at a rate and record how each ended (overload's child)
  peerflood peers that send and never read (overload's child)

"bench <command> -h" lists a command's flags. Run it in lab/ of the sluice
repository (cd lab && go run ./cmd/bench ...): the reports go to ../docs by
default, and sluice's cmd/echo and cmd/kv are built from the checkout above.
`)
}

// parsePinning parses the -server-cpus and -client-cpus lists every
// measuring subcommand takes.
func parsePinning(serverCPUs, clientCPUs string) (server, client []int, err error) {
	if server, err = procstat.ParseCPUList(serverCPUs); err != nil {
		return nil, nil, err
	}
	if client, err = procstat.ParseCPUList(clientCPUs); err != nil {
		return nil, nil, err
	}
	return server, client, nil
}
