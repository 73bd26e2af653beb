//go:build linux

package lab_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/sluicenet/sluice/bench"
	"github.com/sluicenet/sluice/internal/procstat"
	"github.com/sluicenet/sluice/lab"
)

// TestCPeersUnderLoad builds each C floor server of lab/peers/c with cc and
// runs it through the comparison runner against the load generator for a
// fraction of a second: pinned to the server CPU like every server, with its
// CPU time, system calls and idle memory measured from /proc. Without cc or
// liburing's headers it skips, except in CI (CI=true), which installs them.
func TestCPeersUnderLoad(t *testing.T) {
	for _, srv := range []string{lab.ServerCEpoll, lab.ServerCUring} {
		t.Run(srv, func(t *testing.T) {
			if _, _, err := lab.BuildCPeer(context.Background(), "", srv, "", t.TempDir()); err != nil {
				if (errors.Is(err, lab.ErrMissingLibrary) || errors.Is(err, lab.ErrNoCompiler)) && os.Getenv("CI") != "true" {
					t.Skipf("%v", err)
				}
				t.Fatalf("build: %v", err)
			}
			scenarios, err := lab.ParseScenarios("8x4x64")
			if err != nil {
				t.Fatal(err)
			}
			cfg := lab.CompareConfig{
				BenchBin: os.Args[0], BenchEnv: []string{childEnv},
				Servers: []string{srv}, Scenarios: scenarios, Codec: bench.CodecLength, Rounds: 1,
				Warmup: 100 * time.Millisecond, Duration: 300 * time.Millisecond,
				IdleConns: 100, IdleSettle: 50 * time.Millisecond, StraceScenario: "none",
			}
			cpus, err := procstat.AvailableCPUs()
			pinned := err == nil && len(cpus) >= 2
			if pinned {
				cfg.ServerCPUs, cfg.ClientCPUs = cpus[:1], cpus[1:2]
			} else {
				cfg.NoPin = true
			}
			cfg.Progress = testLog{t}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rep, err := lab.Compare(ctx, cfg)
			if err != nil {
				t.Fatalf("compare: %v", err)
			}
			if len(rep.Servers) != 1 || !rep.Servers[0].Available {
				t.Fatalf("servers %+v", rep.Servers)
			}
			if len(rep.Cells) != 1 || len(rep.Cells[0].Runs) != 1 {
				t.Fatalf("cells %+v", rep.Cells)
			}
			run := rep.Cells[0].Runs[0]
			if run.Error != "" || run.Result == nil || run.Note != "" {
				t.Fatalf("run: error %q note %q result %v", run.Error, run.Note, run.Result)
			}
			res := run.Result
			if res.Msgs == 0 || len(res.Errors) != 0 || res.ConnsOpen != 8 {
				t.Fatalf("%d msgs, errors %v, %d conns", res.Msgs, res.Errors, res.ConnsOpen)
			}
			if res.Server == nil || res.Server.CPUSec <= 0 || res.Server.CPUMicrosPerMsg <= 0 || res.Server.RSSKiB <= 0 {
				t.Fatalf("server CPU not measured: %+v", res.Server)
			}
			// /proc/PID/io counts read- and write-like calls; io_uring's
			// io_uring_enter is neither, so c-uring shows none.
			if srv == lab.ServerCEpoll && res.Server.SyscallsPerMsg <= 0 {
				t.Fatalf("server system calls not measured: %+v", res.Server)
			}
			if pinned && (len(res.Server.CPUs) != 1 || res.Server.CPUs[0] != cpus[0]) {
				t.Fatalf("server on CPUs %v, pinned to %v", res.Server.CPUs, cpus[:1])
			}
			if len(rep.Idle) != 1 || rep.Idle[0].Error != "" || rep.Idle[0].Conns != 100 {
				t.Fatalf("idle memory %+v", rep.Idle)
			}
		})
	}
}
