// Command bench is sluice's load generator and comparison runner.
//
//	bench compare [flags]   run the comparison matrix (sluice, gnet, net) and write the report
//	bench load [flags]      run one load test against any server
//	bench peer [flags]      run a peer echo server (gnet, net, trivial)
//	bench render [flags]    re-render the markdown and charts of a saved report.json
//
// Run "bench <command> -h" for the flags of each command. make bench runs
// "go run ./cmd/bench compare". The commands live in package internal/lab/cli.
package main

import (
	"os"

	"github.com/sluicenet/sluice/internal/lab/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
