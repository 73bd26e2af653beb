package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sluicenet/sluice/bench"
	"github.com/sluicenet/sluice/lab"
)

// runOverload runs the overload measurement and writes its report.
func runOverload(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench overload", flag.ExitOnError)
	var cfg lab.OverloadConfig
	parts := fs.String("parts", "", "parts to run, comma-separated: goodput, priorities, fairness, memory, gate, backlog (empty: all)")
	fs.IntVar(&cfg.Rounds, "rounds", 0, "rounds per part, servers alternating within a round (0: 3; with -hammer 2)")
	servers := fs.String("servers", "", "goodput servers: sluice-shed, sluice-shed-tight, sluice-noshed, gnet, net, and sluice-shed-default (cmd/echo -shed alone) (empty: the first five)")
	memServers := fs.String("memory-servers", "", "memory servers: sluice-budget, sluice-noshed, net, gnet (empty: all four)")
	fs.DurationVar(&cfg.Work, "work", 0, "simulated CPU cost per frame of every server (0: 200us)")
	fs.Float64Var(&cfg.Factor, "factor", 0, "overload: open-loop rate as a multiple of each server's median capacity (0: 5)")
	fs.Float64Var(&cfg.UnloadedFraction, "unloaded", 0, "the reference run: open-loop rate as a fraction of each server's median capacity (with -matrix: of its capacity in the same round), whose p99 the overload p99 is compared with (0: 0.2; with -matrix and -hammer 0.5)")
	fs.IntVar(&cfg.Conns, "conns", 0, "goodput connections (0: 32)")
	fs.DurationVar(&cfg.Duration, "duration", 0, "measured window of each goodput run (0: 3s); with -matrix the shortest window, longer where a run would serve fewer than -min-samples requests")
	shed := fs.String("shed-args", "", "cmd/echo flags of sluice-shed, space-separated (empty: "+strings.Join(lab.DefaultShedArgs, " ")+")")
	fs.Float64Var(&cfg.CriticalFactor, "critical-factor", 0, "priorities: critical traffic as a multiple of the round's capacity (0: 0.3); normal at -normal-factor, best-effort at the rest of -factor")
	fs.Float64Var(&cfg.NormalFactor, "normal-factor", 0, "priorities: normal traffic as a multiple of the round's capacity (0: 1)")
	fs.IntVar(&cfg.Tenants, "tenants", 0, "fairness: tenants, each a generator from its own loopback address (0: 10)")
	fs.Float64Var(&cfg.HeavyWeight, "heavy-weight", 0, "fairness: how many times as much the heavy tenant sends as each other one (0: 10)")
	fs.IntVar(&cfg.MixConnsFactor, "mix-conns-factor", 0, "priorities and fairness: multiply every generator's connections (8, 16 and 16 per class; 8 per tenant) by this (0: 1; 25 gives 1,000 in all)")
	fs.StringVar(&cfg.MixMode, "mix-mode", "", "priorities and fairness: where the servers run the work, inline or pool (cmd/echo -work-mode; empty: inline)")
	fs.Int64Var(&cfg.QueuedBudgetBytes, "queued-budget", 0, "sluice-budget's -max-queued-bytes (0: 16 MiB)")
	fs.IntVar(&cfg.FloodConns, "flood-conns", 0, "memory: non-reading peers (0: 200)")
	fs.IntVar(&cfg.GateBudget, "gate-budget", 0, "gate: -budget-conns of the flooded server (0: 300)")
	out := fs.String("out", "../docs/overload", "directory for overload.json, overload.md and gate.svg (with -matrix: matrix.json, matrix.md and the charts, in "+defaultMatrixOut+" unless given)")
	serverCPUs := fs.String("server-cpus", "0", "CPUs the servers are pinned to")
	clientCPUs := fs.String("client-cpus", "1", "CPUs the generator and floods are pinned to: a list or ranges, e.g. 1 or 1-8 or 1,3,5")
	fs.IntVar(&cfg.ClientProcs, "client-procs", 0, "the generator of every load run as this many processes over -client-cpus, the CPUs, connections and open-loop rate split evenly and the results merged (0: one process per client CPU; 1: one process over all of them; more than the CPUs: processes sharing CPUs; the floods run as one)")
	from := fs.String("from", "", "re-render the report files into -out from this saved overload.json (with -matrix: matrix.json) instead of measuring")
	var mf matrixFlags
	mf.register(fs)
	var hf hammerFlags
	hf.register(fs)
	_ = fs.Parse(args)
	if mf.matrix && hf.hammer {
		return fmt.Errorf("-matrix and -hammer: run one at a time")
	}
	if hf.hammer {
		outDir := *out
		if !flagSet(fs, "out") {
			outDir = defaultHammerOut
		}
		hc := lab.HammerConfig{Rounds: cfg.Rounds, Duration: cfg.Duration, RefFraction: cfg.UnloadedFraction, ClientProcs: cfg.ClientProcs}
		if *shed != "" {
			hc.ShedArgs = strings.Fields(*shed)
		}
		return runHammer(ctx, &hf, &mf, hc, *serverCPUs, *clientCPUs, *from, outDir)
	}
	if mf.matrix {
		outDir := *out
		if !flagSet(fs, "out") {
			outDir = defaultMatrixOut
		}
		mc := lab.MatrixConfig{Rounds: cfg.Rounds, Duration: cfg.Duration, RefFraction: cfg.UnloadedFraction, ClientProcs: cfg.ClientProcs}
		if *shed != "" {
			mc.ShedArgs = strings.Fields(*shed)
		}
		return runMatrix(ctx, &mf, mc, *serverCPUs, *clientCPUs, *from, outDir)
	}
	if *from != "" {
		b, err := os.ReadFile(*from)
		if err != nil {
			return err
		}
		var rep lab.OverloadReport
		if err := json.Unmarshal(b, &rep); err != nil {
			return fmt.Errorf("%s: %w", *from, err)
		}
		paths, err := lab.WriteOverloadReport(&rep, *out)
		for _, p := range paths {
			fmt.Println("wrote", p)
		}
		return err
	}
	split := func(s string) []string {
		var v []string
		for _, f := range strings.Split(s, ",") {
			if f = strings.TrimSpace(f); f != "" {
				v = append(v, f)
			}
		}
		return v
	}
	cfg.Parts, cfg.Servers, cfg.MemoryServers = split(*parts), split(*servers), split(*memServers)
	if *shed != "" {
		cfg.ShedArgs = strings.Fields(*shed)
	}
	var err error
	if cfg.ServerCPUs, cfg.ClientCPUs, err = parsePinning(*serverCPUs, *clientCPUs); err != nil {
		return err
	}
	cfg.Progress = os.Stderr
	if self, err := os.Executable(); err == nil && isBenchBinary(self) {
		cfg.BenchBin = self
	}
	rep, err := lab.Overload(ctx, cfg)
	if rep == nil {
		return err
	}
	paths, werr := lab.WriteOverloadReport(rep, *out)
	for _, p := range paths {
		fmt.Println("wrote", p)
	}
	if err != nil {
		return err
	}
	return werr
}

// isBenchBinary reports whether path is a cmd/bench binary (and not a test
// binary or go run's temporary one, which the runner rebuilds instead).
func isBenchBinary(path string) bool {
	return strings.HasSuffix(path, "/bench") && !strings.Contains(path, "go-build")
}

// runConnFlood runs a connection flood and prints its records (the overload
// runner's child).
func runConnFlood(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench connflood", flag.ExitOnError)
	var cfg lab.ConnFloodConfig
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:7000", "server address")
	codec := fs.String("codec", "length", "codec: length or line")
	fs.IntVar(&cfg.Conns, "conns", 1000, "connections")
	fs.Float64Var(&cfg.RatePerSec, "rate", 1000, "connections started per second")
	fs.DurationVar(&cfg.Hold, "hold", time.Second, "how long a served connection stays open (0: to the end)")
	fs.DurationVar(&cfg.Timeout, "timeout", 5*time.Second, "connect plus answer timeout per connection")
	jsonOut := fs.Bool("json", false, "print every record as JSON")
	_ = fs.Parse(args)
	return runFloodChild(*codec, *jsonOut, func(c bench.Codec) (*lab.ConnFloodResult, error) {
		cfg.Codec = c
		return lab.ConnFlood(ctx, cfg)
	}, func(res *lab.ConnFloodResult) {
		fmt.Printf("outcomes %v\n", res.Outcomes())
	})
}

// runPeerFlood runs peers that send and never read (the overload runner's
// child).
func runPeerFlood(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench peerflood", flag.ExitOnError)
	var cfg lab.PeerFloodConfig
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:7000", "server address")
	codec := fs.String("codec", "length", "codec: raw, length or line")
	fs.IntVar(&cfg.Conns, "conns", 200, "peers")
	fs.IntVar(&cfg.Size, "size", 4096, "request payload bytes")
	fs.DurationVar(&cfg.Duration, "duration", 5*time.Second, "how long the peers send")
	fs.IntVar(&cfg.RcvBufBytes, "rcvbuf", 4096, "each peer's SO_RCVBUF, set before connecting")
	jsonOut := fs.Bool("json", false, "print the result as JSON")
	_ = fs.Parse(args)
	return runFloodChild(*codec, *jsonOut, func(c bench.Codec) (*lab.PeerFloodResult, error) {
		cfg.Codec = c
		return lab.PeerFlood(ctx, cfg)
	}, func(res *lab.PeerFloodResult) {
		fmt.Printf("%d peers sent %d MiB; %d closed by the server\n", res.Conns, res.SentBytes>>20, res.Closed)
	})
}

// runFloodChild parses codec, runs a flood child's flood with it and prints
// the result on stdout: as JSON with jsonOut, else with printText. It returns
// the codec's error, or the flood's (with its result printed when there is
// one), or the JSON encoder's.
func runFloodChild[R any](codec string, jsonOut bool, flood func(bench.Codec) (*R, error), printText func(*R)) error {
	c, err := bench.ParseCodec(codec)
	if err != nil {
		return err
	}
	res, err := flood(c)
	if res == nil {
		return err
	}
	if jsonOut {
		if jerr := json.NewEncoder(os.Stdout).Encode(res); jerr != nil {
			return jerr
		}
		return err
	}
	printText(res)
	return err
}
