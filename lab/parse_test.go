package lab

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicenet/sluice/bench"
)

func TestParseStraceSummary(t *testing.T) {
	text := `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 52.10    0.171234           3     51234       120 read
 40.00    0.131000           2     61000           writev
  7.90    0.026407          13      2000           epoll_wait
------ ----------- ----------- --------- --------- ----------------
100.00    0.328641           2    114234       120 total
`
	calls, err := parseStraceSummary(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []SyscallCount{{Name: "writev", Calls: 61000}, {Name: "read", Calls: 51234, Errors: 120}, {Name: "epoll_wait", Calls: 2000}}
	if len(calls) != len(want) {
		t.Fatalf("%d lines: %+v", len(calls), calls)
	}
	for i := range want {
		if calls[i] != want[i] {
			t.Fatalf("line %d: %+v, want %+v", i, calls[i], want[i])
		}
	}
	if _, err := parseStraceSummary("strace: attach: ptrace(PTRACE_SEIZE, 1): Operation not permitted\n"); err == nil {
		t.Fatal("no table accepted")
	}
}

func TestParseScenarios(t *testing.T) {
	def, err := ParseScenarios("default")
	if err != nil || len(def) != 6 {
		t.Fatalf("default: %d scenarios, %v", len(def), err)
	}
	for _, s := range def {
		if s.Title == "" || s.Conns < 1 || s.InFlight < 1 || s.Size.Validate() != nil {
			t.Fatalf("default scenario %+v", s)
		}
	}
	list, err := ParseScenarios("1x1x64, 8x4x64-4k ,open75,1x1x64")
	if err != nil || len(list) != 3 {
		t.Fatalf("list: %+v %v", list, err)
	}
	if list[1].Size != (bench.SizeSpec{Min: 64, Max: 4096}) || list[1].InFlight != 4 || !list[2].Open() || list[2].LoadFraction != 0.75 {
		t.Fatalf("parsed %+v", list)
	}
	for _, bad := range []string{"1x1", "0x1x64", "1x0x64", "axbxc", "open0", "open101", "openx", ","} {
		if _, err := ParseScenarios(bad); !errors.Is(err, bench.ErrInvalidConfig) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestCompareConfigDefaultsAddOpenRef(t *testing.T) {
	open, _ := ParseScenario("open50")
	cfg := CompareConfig{Scenarios: []Scenario{open}}.withDefaults()
	if len(cfg.Scenarios) != 2 || cfg.Scenarios[0].Name != OpenRefScenario {
		t.Fatalf("reference scenario not added: %+v", cfg.Scenarios)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.Servers = []string{"nginx"}
	if err := cfg.Validate(); !errors.Is(err, bench.ErrInvalidConfig) {
		t.Fatalf("unknown server: %v", err)
	}
}

func TestReplaceBetween(t *testing.T) {
	doc := "intro\n" + DocBeginMarker + "\nold\n" + DocEndMarker + "\noutro\n"
	got, ok := replaceBetween(doc, DocBeginMarker, DocEndMarker, "new table")
	if !ok || !strings.Contains(got, "new table") || strings.Contains(got, "old") || !strings.HasSuffix(got, DocEndMarker+"\noutro\n") {
		t.Fatalf("%v %q", ok, got)
	}
	if _, ok := replaceBetween("no markers", DocBeginMarker, DocEndMarker, "x"); ok {
		t.Fatal("replaced without markers")
	}
}

func TestSummarizeRatiosAndSaturation(t *testing.T) {
	mk := func(rate, sutil, cutil float64) *bench.LoadResult {
		return &bench.LoadResult{MsgsPerSec: rate, Server: &bench.ProcUsage{Util: sutil}, Client: &bench.ProcUsage{Util: cutil}}
	}
	gnet := map[int]*bench.LoadResult{1: mk(100, 1, 0.5), 2: mk(200, 1, 0.5), 3: mk(100, 1, 0.5)}
	runs := []Run{
		{Round: 1, Result: mk(110, 0.95, 0.5)},
		{Round: 2, Result: mk(180, 0.97, 0.6)},
		{Round: 3, Result: mk(130, 0.99, 0.4)},
		{Round: 4, Error: "server did not start"},
	}
	s := summarize(runs, gnet, 1, 1)
	if s.Rounds != 3 || s.MsgsPerSec != (Spread{Median: 130, Min: 110, Max: 180}) {
		t.Fatalf("spread %+v rounds %d", s.MsgsPerSec, s.Rounds)
	}
	// Per-round ratios 1.1, 0.9, 1.3: median 1.1.
	if s.VsGnet == nil || s.VsGnet.Median < 1.0999 || s.VsGnet.Median > 1.1001 || s.VsGnet.Min < 0.8999 || s.VsGnet.Max < 1.2999 {
		t.Fatalf("ratio %+v", s.VsGnet)
	}
	if s.Saturated != "server" {
		t.Fatalf("saturated %q", s.Saturated)
	}
	if summarize([]Run{{Round: 1, Error: "x"}}, nil, 1, 1) != nil {
		t.Fatal("summary of failed runs")
	}
	for i, tc := range []struct {
		su, cu, sc, cc float64
		want           string
	}{
		{0.95, 0.95, 0, 0, "both"}, {0.5, 0.95, 0, 0, "client"}, {0.5, 0.5, 0.95, 0.2, "server"}, {0.5, 0.5, 0.5, 0.5, "neither"},
	} {
		if got := saturation(tc.su, tc.cu, tc.sc, tc.cc, 1, 1); got != tc.want {
			t.Errorf("%d: %q, want %q", i, got, tc.want)
		}
	}
}
