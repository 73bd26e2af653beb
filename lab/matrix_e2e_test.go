//go:build linux

package lab_test

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicenet/sluice/internal/procstat"
	"github.com/sluicenet/sluice/internal/spin"
	"github.com/sluicenet/sluice/lab"
)

// TestMatrixEndToEnd runs a tiny matrix on loopback (sluice's cmd/echo
// with -shed and net, 200 µs of work inline and in the pool, 8
// connections, 2× capacity, one round of 300 ms windows: nine runs) and
// checks the report: every run there with a result and its accounts, the
// cells, the checkpoints and the files. Resuming the finished matrix runs
// nothing. The runner sizes its capacity run's queue from the nominal work
// (about 200 ms of it), so the windows stretch by how much slower than
// nominal spin.For runs here (spinSlowness): a slower CPU still gets answers
// inside them.
func TestMatrixEndToEnd(t *testing.T) {
	cpus := pinnedRunCPUs(t, "starts servers and the generator for about ten seconds")
	const work = 200 * time.Microsecond
	slow := spinSlowness(work)
	t.Logf("spin.For runs %.2f× its nominal time here: windows of %v", slow, stretch(300*time.Millisecond, slow))
	checkpoints := 0
	cfg := lab.MatrixConfig{
		BenchBin:   os.Args[0],
		BenchEnv:   []string{childEnv},
		Rounds:     1,
		ServerCPUs: cpus[:1],
		ClientCPUs: cpus[1:2],
		Servers:    []string{lab.ServerSluiceShedDefault, lab.ServerNet},
		Factors:    []float64{2},
		Works:      []time.Duration{work},
		Modes:      []string{lab.ModeInline, lab.ModePool},
		Conns:      []int{8},
		Warmup:     stretch(100*time.Millisecond, slow),
		Duration:   stretch(300*time.Millisecond, slow),
		MinSamples: 10,
		Progress:   testLog{t},
		Checkpoint: func(*lab.MatrixReport) { checkpoints++ },
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := lab.Matrix(ctx, cfg, nil)
	if err != nil {
		t.Fatalf("matrix: %v", err)
	}
	if len(rep.Runs) != 9 || checkpoints != 2 {
		t.Fatalf("%d runs and %d checkpoints, want 9 and 2", len(rep.Runs), checkpoints)
	}
	kinds := map[string]int{}
	for _, r := range rep.Runs {
		kinds[r.Mode+" "+r.Server+" "+r.Kind]++
		if r.Load == nil {
			t.Errorf("%s %s %s: no result: %s", r.Mode, r.Server, r.Kind, r.Error)
			continue
		}
		if r.PeakRSSKiB <= 0 {
			t.Errorf("%s %s %s: no peak RSS", r.Mode, r.Server, r.Kind)
		}
		if r.Kind != lab.KindCapacity && r.Load.Intended == 0 {
			t.Errorf("%s %s %s: the generator intended no sends", r.Mode, r.Server, r.Kind)
		}
		if r.Answered != (r.Unanswered == 0 && len(r.Load.Errors) == 0) {
			t.Errorf("%s %s %s: answered %v with %d unanswered and errors %v", r.Mode, r.Server, r.Kind, r.Answered, r.Unanswered, r.Load.Errors)
		}
	}
	if kinds["pool net capacity"] != 0 || kinds["pool sluice-shed-default overload"] != 1 || kinds["inline net reference"] != 1 {
		t.Errorf("runs by kind %v", kinds)
	}
	if len(rep.Cells) != 3 {
		t.Fatalf("%d cells, want 3", len(rep.Cells))
	}
	for _, c := range rep.Cells {
		// On a busy machine a ratio may be anything; that it was
		// measured is what this test is about.
		if c.Rounds != 1 || c.GoodputRatio.Median <= 0 || c.P99Ratio.Median <= 0 {
			t.Errorf("cell %s %s %v×: rounds %d goodput %v p99 %v errors %v", c.Mode, c.Server, c.Factor, c.Rounds, c.GoodputRatio, c.P99Ratio, c.Errors)
		}
	}
	if rep.Commands["matrix pool: sluice-shed-default"] == "" || rep.Commands["matrix pool: sluice-noshed"] == "" {
		t.Errorf("commands %v", rep.Commands)
	}
	out := t.TempDir()
	paths, err := lab.WriteMatrixReport(rep, out)
	if err != nil || len(paths) != 4 {
		t.Fatalf("wrote %v: %v", paths, err)
	}
	md, _ := os.ReadFile(filepath.Join(out, lab.MatrixMarkdown))
	t.Logf("%s", md)

	again, err := lab.Matrix(ctx, lab.MatrixConfig{BenchBin: os.Args[0], BenchEnv: []string{childEnv}, Progress: testLog{t}}, rep)
	if err != nil || len(again.Runs) != len(rep.Runs) || again.Config.Conns[0] != 8 {
		t.Errorf("resuming a finished matrix: %v, %d runs, config %+v", err, len(again.Runs), again.Config)
	}
}

// spinSlowness returns how many times its nominal duration spin.For(work)
// takes on this machine, at least 1: the fastest of three timings of 50
// calls.
func spinSlowness(work time.Duration) float64 {
	const n = 50
	best := time.Duration(math.MaxInt64)
	for range 3 {
		t0 := time.Now()
		for range n {
			spin.For(work)
		}
		best = min(best, time.Since(t0))
	}
	return max(1, float64(best)/float64(n*work))
}

// stretch returns d times f, rounded to the millisecond.
func stretch(d time.Duration, f float64) time.Duration {
	return time.Duration(float64(d) * f).Round(time.Millisecond)
}

// pinnedRunCPUs skips a test that starts servers and generators (for about
// the time long says) in -short mode, without the go command to build
// cmd/echo, or with fewer than two CPUs to pin them apart; else it returns
// the available CPUs (the server on the first, generators on the second).
func pinnedRunCPUs(t *testing.T, long string) []int {
	t.Helper()
	if testing.Short() {
		t.Skip(long)
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command to build cmd/echo")
	}
	cpus, err := procstat.AvailableCPUs()
	if err != nil || len(cpus) < 2 {
		t.Skip("needs two CPUs to pin the server and the generators apart")
	}
	return cpus
}
