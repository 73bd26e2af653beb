package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/sluicenet/sluice/bench"
	"github.com/sluicenet/sluice/internal/procstat"
)

// runLoad runs one load test and prints its result (a summary, or JSON with
// -json).
func runLoad(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench load", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:7000", "server address HOST:PORT")
	codec := fs.String("codec", "length", "codec: raw (byte accounting), length or line (request/response matching)")
	conns := fs.Int("conns", 64, "connections")
	inflight := fs.Int("inflight", 0, "closed loop: requests in flight per connection (0: 1); open loop: the most per connection, beyond which a due send is missed (0: 64)")
	size := fs.String("size", "64", `payload bytes: fixed ("64", "4k") or uniform range ("64-4096")`)
	rate := fs.Float64("rate", 0, "open loop: total requests per second over all connections (0: closed loop)")
	warmup := fs.Duration("warmup", bench.DefaultWarmup, "warm-up before measuring")
	duration := fs.Duration("duration", bench.DefaultDuration, "measured window")
	workers := fs.Int("workers", 0, "generator event loops (0: GOMAXPROCS)")
	timeout := fs.Duration("timeout", bench.DefaultResponseTimeout, "response timeout (a connection whose oldest request waits longer is closed)")
	serverPID := fs.Int("server-pid", 0, "server process to read CPU time, system calls and memory of (0: none)")
	cpus := fs.String("cpus", "", `pin this process to these CPUs ("1" or "2,3"; empty: no pinning)`)
	jsonOut := fs.Bool("json", false, "print the result as JSON on stdout and no progress line")
	_ = fs.Parse(args)

	c, err := bench.ParseCodec(*codec)
	if err != nil {
		return err
	}
	sz, err := bench.ParseSize(*size)
	if err != nil {
		return err
	}
	if *cpus != "" {
		list, err := procstat.ParseCPUList(*cpus)
		if err != nil {
			return err
		}
		if err := procstat.PinProcess(list); err != nil {
			return err
		}
	}
	cfg := bench.LoadConfig{
		Addr: *addr, Codec: c, Conns: *conns, InFlight: *inflight, Size: sz, RatePerSec: *rate,
		Warmup: *warmup, Duration: *duration, Workers: *workers, ResponseTimeout: *timeout, ServerPID: *serverPID,
	}
	if !*jsonOut && procstat.IsTerminal(os.Stderr) {
		cfg.Progress = os.Stderr
	}
	res, err := bench.Load(ctx, cfg)
	if res == nil {
		return err
	}
	if *jsonOut {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(res); jerr != nil {
			return jerr
		}
		return err
	}
	fmt.Print(bench.FormatLoadResult(res))
	return err
}
