package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicenet/sluice/bench"
	"github.com/sluicenet/sluice/lab"
)

func TestHammerFlags(t *testing.T) {
	h := hammerFlags{cells: "1000x8, 64x64", servers: "sluice-shed-default,net", noRef: true, redial: true}
	m := matrixFlags{works: "50us,2ms", modes: "inline", minSamples: 500}
	var cfg lab.HammerConfig
	if err := h.config(&m, &cfg); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(cfg.Shapes, cfg.Works, cfg.Modes, cfg.Servers, cfg.MinSamples, cfg.NoReference, cfg.Reconnect); got != "[1000x8 64x64] [50µs 2ms] [inline] [sluice-shed-default net] 500 true true" {
		t.Errorf("config %s", got)
	}
	var empty lab.HammerConfig
	if err := (&hammerFlags{}).config(&matrixFlags{}, &empty); err != nil || empty.Shapes != nil || empty.Works != nil || empty.Servers != nil {
		t.Errorf("empty lists: %v %+v", err, empty)
	}
	for _, bad := range []struct {
		h hammerFlags
		m matrixFlags
	}{{hammerFlags{cells: "1000"}, matrixFlags{}}, {hammerFlags{cells: "0x8"}, matrixFlags{}}, {hammerFlags{}, matrixFlags{works: "5"}}} {
		if err := bad.h.config(&bad.m, &cfg); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestHammerRender re-renders a saved hammer.json, and refuses what cannot
// run: -hammer with -matrix, -resume without -from, bad cells.
func TestHammerRender(t *testing.T) {
	shape := lab.HammerShape{Conns: 64, InFlight: 8}
	run := func(srv, kind string, perSec float64) lab.HammerRun {
		return lab.HammerRun{Shape: shape, MatrixRun: lab.MatrixRun{Round: 1, Mode: lab.ModeInline, Conns: 64, InFlight: 8, Work: 200 * time.Microsecond,
			Server: srv, Kind: kind, Load: &lab.LoadBrief{MsgsPerSec: perSec, Latency: bench.LatencySummary{Count: 100, P99Micros: 1000}}}}
	}
	rep := lab.HammerReport{Runs: []lab.HammerRun{run(lab.ServerSluiceNoShed, lab.KindCapacity, 4000), run(lab.ServerSluiceShedDefault, lab.KindHammer, 3900)}}
	rep.Config.Rounds = 1
	dir := t.TempDir()
	in := filepath.Join(dir, "saved.json")
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if code := Main([]string{"overload", "-hammer", "-from", in, "-out", out}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	md, err := os.ReadFile(filepath.Join(out, lab.HammerMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| 64 × 8 | 200 µs | sluice-shed-default | 98% (98%–98%) |") {
		t.Errorf("markdown:\n%s", md)
	}
	if _, err := os.Stat(filepath.Join(out, lab.HammerJSON)); err != nil {
		t.Error(err)
	}
	for _, args := range [][]string{
		{"overload", "-hammer", "-matrix", "-out", out},
		{"overload", "-hammer", "-resume", "-out", out},
		{"overload", "-hammer", "-hammer-cells", "64", "-out", out},
		{"overload", "-hammer", "-client-procs", "-1", "-hammer-cells", "64x8", "-out", out, "-client-cpus", "999"},
	} {
		if code := Main(args); code != 1 {
			t.Errorf("%v: exit %d, want 1", args, code)
		}
	}
}
