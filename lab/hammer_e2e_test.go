//go:build linux

package lab_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicenet/sluice/lab"
)

// TestHammerEndToEnd runs one tiny hammer block on loopback (cmd/echo
// -shed and net, 200 µs of work inline, 8 connections × 4 in flight, one
// round of 300 ms windows: a capacity, two references and two hammers)
// with the generator split into two processes sharing the client CPU, and
// checks the report: every run with a result from both processes (their
// connections added up), answers in every run but sluice's hammer, the
// cells, the checkpoint and the files.
// Resuming the finished run runs nothing. Windows stretch as in
// TestMatrixEndToEnd.
func TestHammerEndToEnd(t *testing.T) {
	cpus := pinnedRunCPUs(t, "starts servers and generators for about ten seconds")
	const work = 200 * time.Microsecond
	slow := spinSlowness(work)
	checkpoints := 0
	cfg := lab.HammerConfig{
		BenchBin:    os.Args[0],
		BenchEnv:    []string{childEnv},
		Rounds:      1,
		ServerCPUs:  cpus[:1],
		ClientCPUs:  cpus[1:2],
		ClientProcs: 2,
		Servers:     []string{lab.ServerSluiceShedDefault, lab.ServerNet},
		Shapes:      []lab.HammerShape{{Conns: 8, InFlight: 4}},
		Works:       []time.Duration{work},
		Modes:       []string{lab.ModeInline},
		Warmup:      stretch(100*time.Millisecond, slow),
		Duration:    stretch(300*time.Millisecond, slow),
		MinSamples:  10,
		Reconnect:   true, // the generator takes -reconnect (no final refusal comes this soon)
		Progress:    testLog{t},
		Checkpoint:  func(*lab.HammerReport) { checkpoints++ },
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := lab.Hammer(ctx, cfg, nil)
	if err != nil {
		t.Fatalf("hammer: %v", err)
	}
	if len(rep.Runs) != 5 || checkpoints != 1 {
		t.Fatalf("%d runs and %d checkpoints, want 5 and 1", len(rep.Runs), checkpoints)
	}
	var kinds []string
	for _, r := range rep.Runs {
		kinds = append(kinds, r.Server+" "+r.Kind)
		if r.Load == nil {
			t.Errorf("%s %s: no result: %s", r.Server, r.Kind, r.Error)
			continue
		}
		if r.Load.ConnsOpen != 8 || r.Shape != cfg.Shapes[0] {
			t.Errorf("%s %s: %d connections, shape %v", r.Server, r.Kind, r.Load.ConnsOpen, r.Shape)
		}
		switch {
		case r.Load.Msgs > 0:
		case r.Server == lab.ServerSluiceShedDefault && r.Kind == lab.KindHammer:
			// In its first half second under a hammer, cmd/echo -shed
			// may answer one generator process's connections and not
			// the other's, or neither (seen in 2 of 8 runs here).
			t.Logf("%s %s: no message answered in the window (%d refused)", r.Server, r.Kind, r.Load.Rejected)
		default:
			t.Errorf("%s %s: no message answered in the window", r.Server, r.Kind)
		}
		if r.Kind != lab.KindReference && r.InFlight != 4 {
			t.Errorf("%s %s: %d in flight", r.Server, r.Kind, r.InFlight)
		}
	}
	if got := strings.Join(kinds, ", "); got != "sluice-noshed capacity, sluice-shed-default reference, net reference, sluice-shed-default hammer, net hammer" {
		t.Errorf("runs %s", got)
	}
	if len(rep.Cells) != 2 {
		t.Fatalf("%d cells, want 2", len(rep.Cells))
	}
	for _, c := range rep.Cells {
		// On a busy machine a ratio may be anything; that it was
		// measured is what this test is about (sluice's hammer may
		// have served nothing: see above).
		if c.Rounds != 1 || c.Server == lab.ServerNet && (c.GoodputRatio.Median <= 0 || c.P99Ratio.Median <= 0) {
			t.Errorf("cell %s: rounds %d goodput %v p99 %v errors %v", c.Server, c.Rounds, c.GoodputRatio, c.P99Ratio, c.Errors)
		}
	}
	for _, n := range rep.Notes {
		if strings.Contains(n, "merging") {
			t.Errorf("note %s", n)
		}
	}
	if rep.Commands["hammer inline: sluice-noshed"] == "" || rep.Commands["hammer inline: net"] == "" {
		t.Errorf("commands %v", rep.Commands)
	}
	out := t.TempDir()
	if paths, err := lab.WriteHammerReport(rep, out); err != nil || len(paths) != 2 {
		t.Fatalf("wrote %v: %v", paths, err)
	}
	md, _ := os.ReadFile(filepath.Join(out, lab.HammerMarkdown))
	t.Logf("%s", md)

	again, err := lab.Hammer(ctx, lab.HammerConfig{BenchBin: os.Args[0], BenchEnv: []string{childEnv}, Progress: testLog{t}}, rep)
	if err != nil || len(again.Runs) != len(rep.Runs) || again.Config.ClientProcs != 2 {
		t.Errorf("resuming a finished run: %v, %d runs, config %+v", err, len(again.Runs), again.Config)
	}
}
