package bench

import (
	"errors"
	"strings"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	// The command name may hold spaces and parentheses.
	stat := "4242 (my (odd) srv) S 1 4242 4242 0 -1 4194560 613 0 0 0 157 42 0 0 20 0 5 0 1234 0 0 0\n"
	got, err := parseProcStatCPU([]byte(stat))
	if err != nil || got != 199 {
		t.Fatalf("utime+stime = %d, %v; want 199", got, err)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 a b c"} {
		if _, err := parseProcStatCPU([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseStatusAndIO(t *testing.T) {
	status := "Name:\techo\nVmPeak:\t  10000 kB\nVmRSS:\t    6996 kB\nThreads:\t5\n"
	if v := parseStatusKiB([]byte(status), "VmRSS:"); v != 6996 {
		t.Fatalf("VmRSS %d", v)
	}
	if v := parseStatusKiB([]byte(status), "VmSwap:"); v != -1 {
		t.Fatalf("missing key gave %d", v)
	}
	io := "rchar: 100\nwchar: 200\nsyscr: 31\nsyscw: 17\nread_bytes: 0\n"
	if r, w := parseProcIO([]byte(io)); r != 31 || w != 17 {
		t.Fatalf("syscr %d syscw %d", r, w)
	}
}

func TestParseCoreTicks(t *testing.T) {
	stat := `cpu  100 0 50 1000 5 1 2 3 0 0
cpu0 10 1 20 300 4 5 6 7 0 0
cpu1 1 2 3 4 5 6 7 8 0 0
cpuX 1 2 3
intr 12345
`
	m := parseCoreTicks([]byte(stat))
	if len(m) != 2 {
		t.Fatalf("%d cpus parsed: %v", len(m), m)
	}
	if c := m[0]; c.Busy != 10+1+20+5+6 || c.Steal != 7 || c.Total != 42+300+4+7 {
		t.Fatalf("cpu0 %+v", c)
	}
}

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
	if list[1].Size != (SizeSpec{64, 4096}) || list[1].InFlight != 4 || !list[2].Open() || list[2].LoadFraction != 0.75 {
		t.Fatalf("parsed %+v", list)
	}
	for _, bad := range []string{"1x1", "0x1x64", "1x0x64", "axbxc", "open0", "open101", "openx", ","} {
		if _, err := ParseScenarios(bad); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	got, err := ParseCPUList("0,2-4, 7")
	if err != nil || len(got) != 5 || got[0] != 0 || got[3] != 4 || got[4] != 7 {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"", "-1", "3-1", "a"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("%q accepted", bad)
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
	if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) {
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
	mk := func(rate, sutil, cutil float64) *LoadResult {
		return &LoadResult{MsgsPerSec: rate, Server: &ProcUsage{Util: sutil}, Client: &ProcUsage{Util: cutil}}
	}
	gnet := map[int]*LoadResult{1: mk(100, 1, 0.5), 2: mk(200, 1, 0.5), 3: mk(100, 1, 0.5)}
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
