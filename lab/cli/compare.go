package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/sluicenet/sluice/bench"
	"github.com/sluicenet/sluice/internal/procstat"
	"github.com/sluicenet/sluice/lab"
)

// runCompare runs the comparison matrix and writes the report.
func runCompare(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench compare", flag.ExitOnError)
	servers := fs.String("servers", "sluice,gnet,net", "servers, in the order they alternate within a round: sluice, sluice-uring (cmd/echo -backend io_uring), gnet, net, trivial, c-epoll, c-uring (the C floor servers, built with cc)")
	peersDir := fs.String("peers-dir", "", "directory holding other sources of the C floor servers, epoll_echo.c and uring_echo.c (empty: the lab's own, lab/peers/c)")
	cc := fs.String("cc", "cc", "C compiler for the C floor servers")
	scenarios := fs.String("scenarios", "default", `scenarios: "default" (64x1x64,256x16x64,64x1x4096,1000x1x128,open50,open90) or a list of CONNSxINFLIGHTxBYTES and openNN`)
	codec := fs.String("codec", "length", "codec of every scenario: raw, length or line")
	rounds := fs.Int("rounds", 3, "rounds (each server runs each scenario once per round)")
	warmup := fs.Duration("warmup", bench.DefaultWarmup, "warm-up of every run")
	duration := fs.Duration("duration", bench.DefaultDuration, "measured window of every run")
	serverCPUs := fs.String("server-cpus", "0", "CPUs the servers are pinned to")
	clientCPUs := fs.String("client-cpus", "1", "CPUs the load generator is pinned to")
	noPin := fs.Bool("no-pin", false, "do not pin (for machines with a single CPU; numbers are then much noisier)")
	serverProcs := fs.Int("server-procs", 0, "GOMAXPROCS and -loops of the servers (0: number of server CPUs)")
	clientProcs := fs.Int("client-procs", 0, "GOMAXPROCS of the generator (0: number of client CPUs)")
	openRef := fs.String("open-ref", lab.OpenRefLowest, `open-loop rate: "lowest" (same rate for all: fraction of the lowest peak) or "each" (fraction of each server's own peak)`)
	idleConns := fs.Int("idle-conns", 10000, "idle connections for the memory measurement (0: skip)")
	straceScenario := fs.String("strace", "256x16x64", `closed-loop scenario run under strace -c -f for the syscall mix ("none": skip)`)
	straceDuration := fs.Duration("strace-duration", 2*time.Second, "length of the strace run")
	out := fs.String("out", "../docs/bench", "directory for report.json, report.md and the SVG charts")
	doc := fs.String("doc", "../docs/BENCHMARKS.md", "markdown file whose generated section is replaced with the report (empty: none)")
	jsonOut := fs.Bool("json", false, "print the report as JSON on stdout and no progress")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: bench compare [flags]\n\nA quick smoke comparison: bench compare -rounds 1 -warmup 200ms -duration 1s -idle-conns 1000 -strace none -out /tmp/bench -doc ''\n\n")
		fs.PrintDefaults()
	}
	_ = fs.Parse(args)

	cfg := lab.CompareConfig{
		Servers: lab.ParseServers(*servers), Rounds: *rounds, Warmup: *warmup, Duration: *duration,
		NoPin: *noPin, ServerProcs: *serverProcs, ClientProcs: *clientProcs, OpenRef: *openRef,
		IdleConns: *idleConns, StraceScenario: *straceScenario, StraceDuration: *straceDuration,
		PeersDir: *peersDir, CC: *cc,
	}
	var err error
	if cfg.Codec, err = bench.ParseCodec(*codec); err != nil {
		return err
	}
	if cfg.Scenarios, err = lab.ParseScenarios(*scenarios); err != nil {
		return err
	}
	if cfg.IdleConns == 0 {
		cfg.IdleConns = -1
	}
	if !*noPin {
		if cfg.ServerCPUs, cfg.ClientCPUs, err = parsePinning(*serverCPUs, *clientCPUs); err != nil {
			return err
		}
	}
	// This binary is also the generator and the peers: the runner starts it
	// with "load" and "peer" instead of building ./cmd/bench again.
	if exe, err := os.Executable(); err == nil {
		cfg.BenchBin = exe
	}
	if !*jsonOut {
		cfg.Progress = os.Stderr
		cfg.Live = procstat.IsTerminal(os.Stderr)
	}
	rep, runErr := lab.Compare(ctx, cfg)
	if rep == nil {
		return runErr
	}
	written, werr := lab.WriteReport(rep, *out, *doc)
	if *jsonOut {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		fmt.Print(rep.Markdown(*out))
		for _, p := range written {
			fmt.Fprintln(os.Stderr, "wrote", p)
		}
	}
	if runErr != nil {
		return runErr
	}
	return werr
}
