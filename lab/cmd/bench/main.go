// Command bench is sluice's comparison lab: the load generator and the
// runners that set sluice beside its peers.
//
//	bench compare [flags]   run the comparison matrix (sluice, gnet, net; c-epoll and c-uring, the C floor servers, on request) and write the report
//	bench load [flags]      run one load test against any server (what cmd/sluiceload runs)
//	bench peer [flags]      run a peer echo server (gnet, net, trivial, gnet-http, nethttp)
//	bench render [flags]    re-render the markdown and charts of a saved report.json
//	bench external [flags]  redis-benchmark and wrk against sluice and the peers
//	bench overload [flags]  goodput, memory, the listen gate and full accept queues under overload; -matrix runs the overload matrix, -hammer the hammer cells
//
// Run "bench <command> -h" for the flags of each command. It belongs to the
// lab module (lab/, beside the product's module): make bench runs
// "cd lab && go run ./cmd/bench compare", and the default report paths
// (../docs/...) assume lab/ as the working directory. The commands live in
// package lab/cli.
package main

import (
	"os"

	"github.com/sluicenet/sluice/lab/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
