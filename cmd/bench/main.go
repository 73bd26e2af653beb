// Command bench is sluice's load generator and comparison runner.
//
//	bench compare [flags]   run the comparison matrix (sluice, gnet, net) and write the report
//	bench load [flags]      run one load test against any server
//	bench peer [flags]      run a peer echo server (gnet, net, trivial)
//	bench render [flags]    re-render the markdown and charts of a saved report.json
//
// Run "bench <command> -h" for the flags of each command. make bench runs
// "go run ./cmd/bench compare".
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "compare":
		err = runCompare(ctx, os.Args[2:])
	case "load":
		err = runLoad(ctx, os.Args[2:])
	case "peer":
		err = runPeer(ctx, os.Args[2:])
	case "render":
		err = runRender(os.Args[2:])
	case "-h", "-help", "--help", "help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "bench: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage: bench <command> [flags]

commands:
  compare   run the comparison matrix (sluice cmd/echo, gnet, net) and write the report
  load      run one load test (closed or open loop) against a server
  peer      run a peer echo server: gnet, net, or trivial (for the generator's ceiling)
  render    re-render report.md and the charts from a saved report.json

"bench <command> -h" lists a command's flags.
`)
}
