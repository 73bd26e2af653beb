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

func TestMainUsageErrors(t *testing.T) {
	if code := Main(nil); code != 2 {
		t.Fatalf("no command: exit %d, want 2", code)
	}
	if code := Main([]string{"frobnicate"}); code != 2 {
		t.Fatalf("unknown command: exit %d, want 2", code)
	}
	if code := Main([]string{"load", "-codec", "morse"}); code != 1 {
		t.Fatalf("bad codec: exit %d, want 1", code)
	}
	if code := Main([]string{"compare", "-scenarios", "12"}); code != 1 {
		t.Fatalf("bad scenario: exit %d, want 1", code)
	}
}

// TestRender re-renders a saved report: markdown, charts and the doc section.
func TestRender(t *testing.T) {
	closed, _ := lab.ParseScenario("8x2x64")
	open, _ := lab.ParseScenario("open50")
	res := func(rate, p99 float64) *bench.LoadResult {
		return &bench.LoadResult{Mode: "closed", MsgsPerSec: rate, OfferedPerSec: rate,
			Latency: bench.LatencySummary{Count: 100, P50Micros: p99 / 3, P99Micros: p99, P999Micros: p99 * 2, MaxMicros: p99 * 3}}
	}
	rep := lab.Report{
		Started: time.Now(), Finished: time.Now(),
		Servers:   []lab.ServerStatus{{Name: "sluice", Available: true}, {Name: "gnet", Available: true}},
		Scenarios: []lab.Scenario{closed, open},
	}
	for _, srv := range []string{"sluice", "gnet"} {
		for _, s := range rep.Scenarios {
			r := res(50000, 120)
			rep.Cells = append(rep.Cells, lab.Cell{Scenario: s.Name, Server: srv, Runs: []lab.Run{{Round: 1, Result: r}},
				Summary: &lab.CellSummary{Rounds: 1, MsgsPerSec: lab.Spread{Median: 50000, Min: 49000, Max: 51000},
					OfferedPerSec: 25000, Latency: r.Latency, ServerUtil: 0.5, ClientUtil: 0.5, Saturated: "neither"}})
		}
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "report.json")
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(dir, "BENCHMARKS.md")
	if err := os.WriteFile(doc, []byte(lab.DocBeginMarker+"\n"+lab.DocEndMarker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if code := Main([]string{"render", "-in", in, "-out", out, "-doc", doc}); code != 0 {
		t.Fatalf("render: exit %d", code)
	}
	for _, f := range []string{lab.ReportMarkdown, lab.ThroughputChart, lab.LatencyChart} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	d, _ := os.ReadFile(doc)
	if !strings.Contains(string(d), "8 conns × 2 in flight × 64 B") || !strings.Contains(string(d), "out/"+lab.LatencyChart) {
		t.Fatalf("doc section:\n%s", d)
	}
}

// TestMatrixRender re-renders the lab's synthetic matrix.json through
// bench overload -matrix -from.
func TestMatrixRender(t *testing.T) {
	out := t.TempDir()
	if code := Main([]string{"overload", "-matrix", "-from", filepath.Join("..", "testdata", lab.MatrixJSON), "-out", out}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, name := range []string{lab.MatrixJSON, lab.MatrixMarkdown, lab.MatrixChartName("inline", 64), lab.MatrixChartName("pool", 64)} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Error(err)
		}
	}
	if code := Main([]string{"overload", "-matrix", "-resume", "-out", out}); code != 1 {
		t.Errorf("-resume without -from: exit %d, want 1", code)
	}
	if code := Main([]string{"overload", "-matrix", "-works", "2ms,fast", "-out", out}); code != 1 {
		t.Errorf("a bad -works: exit %d, want 1", code)
	}
}

func TestMatrixFlags(t *testing.T) {
	m := matrixFlags{factors: "2, 5,10", works: "50us,2ms", modes: "pool", conns: "64,1000", servers: "net", minSamples: 500}
	var cfg lab.MatrixConfig
	if err := m.config(&cfg); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(cfg.Factors, cfg.Works, cfg.Modes, cfg.Conns, cfg.Servers, cfg.MinSamples); got != "[2 5 10] [50µs 2ms] [pool] [64 1000] [net] 500" {
		t.Errorf("config %s", got)
	}
	var empty lab.MatrixConfig
	if err := (&matrixFlags{}).config(&empty); err != nil || empty.Factors != nil || empty.Works != nil {
		t.Errorf("empty lists: %v %+v", err, empty)
	}
	for _, bad := range []matrixFlags{{factors: "x"}, {conns: "1.5"}, {works: "5"}} {
		if err := bad.config(&cfg); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
