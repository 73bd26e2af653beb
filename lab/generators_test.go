package lab

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sluicenet/sluice/bench"
)

// TestSplitGenerators: one process per CPU by default, the connections and
// the rate divided evenly (the first processes taking the remainder), the
// CPUs in contiguous runs; one CPU, or procs 1, is the run as one process;
// never more processes than connections; more processes than CPUs share
// them round-robin.
func TestSplitGenerators(t *testing.T) {
	text := func(ss []GeneratorShare) string {
		var parts []string
		for _, s := range ss {
			parts = append(parts, fmt.Sprintf("%d@%v/%g", s.Conns, s.CPUs, s.RatePerSec))
		}
		return strings.Join(parts, " ")
	}
	for i, tc := range []struct {
		conns int
		rate  float64
		cpus  []int
		procs int
		want  string
	}{
		{1000, 0, []int{1}, 0, "1000@[1]/0"},
		{1000, 5000, []int{1}, 0, "1000@[1]/5000"},
		{1000, 0, []int{1, 2, 3, 4, 5, 6, 7, 8}, 1, "1000@[1 2 3 4 5 6 7 8]/0"},
		{1000, 0, []int{1, 2, 3, 4, 5, 6, 7, 8}, 0, "125@[1]/0 125@[2]/0 125@[3]/0 125@[4]/0 125@[5]/0 125@[6]/0 125@[7]/0 125@[8]/0"},
		{64, 6400, []int{1, 2, 3}, 0, "22@[1]/2200 21@[2]/2100 21@[3]/2100"},
		{10, 0, []int{1, 2, 3, 4, 5}, 2, "5@[1 2 3]/0 5@[4 5]/0"},
		{2, 100, []int{1, 2, 3, 4}, 0, "1@[1 2]/50 1@[3 4]/50"},
		{1, 0, []int{1, 2, 3, 4}, 0, "1@[1 2 3 4]/0"},
		{9, 90, []int{1}, 3, "3@[1]/30 3@[1]/30 3@[1]/30"},
		{8, 0, []int{1, 2}, 3, "3@[1]/0 3@[2]/0 2@[1]/0"},
		{8, 0, nil, 2, "4@[]/0 4@[]/0"},
	} {
		if got := text(SplitGenerators(tc.conns, tc.rate, tc.cpus, tc.procs)); got != tc.want {
			t.Errorf("%d: SplitGenerators(%d, %v, %v, %d) = %s, want %s", i, tc.conns, tc.rate, tc.cpus, tc.procs, got, tc.want)
		}
	}
	// The shares add up to the whole, whatever the split.
	for conns := 1; conns <= 40; conns++ {
		for ncpu := 1; ncpu <= 9; ncpu++ {
			cpus := make([]int, ncpu)
			for i := range cpus {
				cpus[i] = i + 1
			}
			var c, n int
			var rate float64
			for _, s := range SplitGenerators(conns, 1000, cpus, 0) {
				c, rate, n = c+s.Conns, rate+s.RatePerSec, n+len(s.CPUs)
			}
			if c != conns || math.Abs(rate-1000) > 1e-9 || (conns >= ncpu && n != ncpu) {
				t.Fatalf("%d conns over %d CPUs: %d conns, rate %v, %d CPUs", conns, ncpu, c, rate, n)
			}
		}
	}
}

// hist returns a histogram (encoded as LoadResult carries it) of the
// latencies lo..hi µs, one each, and their summary.
func hist(t *testing.T, lo, hi int64) (string, bench.LatencySummary) {
	t.Helper()
	h := bench.NewLatencyHistogram()
	for v := lo; v <= hi; v++ {
		if err := h.RecordValue(v * 1000); err != nil {
			t.Fatal(err)
		}
	}
	enc, err := bench.EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	return enc, bench.Summarize(h)
}

// splitFixture is two generator processes' results of one closed-loop
// run: 600 and 400 messages (latencies 1–600 µs and 601–1,000 µs),
// refusals after 1–100 ms and 101–300 ms, the first having read the
// server's usage.
func splitFixture(t *testing.T) []*bench.LoadResult {
	h1, l1 := hist(t, 1, 600)
	h2, l2 := hist(t, 601, 1000)
	// Refusals: 1..100 ms and 101..300 ms, every ms.
	rej := func(lo, hi int64) (string, bench.LatencySummary) {
		h := bench.NewLatencyHistogram()
		for v := lo; v <= hi; v++ {
			if err := h.RecordValue(v * 1_000_000); err != nil {
				t.Fatal(err)
			}
		}
		enc, err := bench.EncodeHistogram(h)
		if err != nil {
			t.Fatal(err)
		}
		return enc, bench.Summarize(h)
	}
	rh1, rs1 := rej(1, 100)
	rh2, rs2 := rej(101, 300)
	a := &bench.LoadResult{
		Config: bench.LoadConfig{Addr: "127.0.0.1:1", Conns: 500, InFlight: 8, ServerPID: 42}, Mode: "closed", WindowSec: 2,
		Msgs: 600, PayloadBytes: 600 * 64, MsgsPerSec: 300, MBPerSec: 0.0192, Latency: l1, HistogramV2: h1,
		Rejected: 100, RejectedPerSec: 50, Rejects: map[string]int64{"codel": 60, "queue": 40}, RejectLatency: &rs1, RejectHistogramV2: rh1,
		Unfinished: 4000, Errors: map[string]int64{}, ConnsOpen: 500,
		Client: &bench.ProcUsage{PID: 10, CPUs: []int{1}, CPUSec: 1, Util: 0.5, CPUMicrosPerMsg: 1e6 / 600, ReadSyscalls: 100, WriteSyscalls: 100, SyscallsPerMsg: 200.0 / 600, RSSKiB: 1000},
		Server: &bench.ProcUsage{PID: 42, CPUs: []int{0}, CPUSec: 2, Util: 1, CPUMicrosPerMsg: 2e6 / 600, ReadSyscalls: 300, WriteSyscalls: 300, SyscallsPerMsg: 1, RSSKiB: 9000},
		Cores:  []bench.CoreUsage{{CPU: 1, Role: "client", Busy: 0.5, MicrosPerMsg: 1e6 / 600}, {CPU: 0, Role: "server", Busy: 1, MicrosPerMsg: 2e6 / 600}},
	}
	b := &bench.LoadResult{
		Config: bench.LoadConfig{Addr: "127.0.0.1:1", Conns: 500, InFlight: 8}, Mode: "closed", WindowSec: 2,
		Msgs: 400, PayloadBytes: 400 * 64, MsgsPerSec: 200, MBPerSec: 0.0128, Latency: l2, HistogramV2: h2,
		Rejected: 200, RejectedPerSec: 100, Rejects: map[string]int64{"codel": 200}, RejectLatency: &rs2, RejectHistogramV2: rh2,
		Unfinished: 4000, Dropped: 8, Errors: map[string]int64{"reset": 1}, FirstError: "connection reset", ConnsOpen: 500, ConnsLost: 1,
		Client: &bench.ProcUsage{PID: 11, CPUs: []int{2}, CPUSec: 1, Util: 0.5, CPUMicrosPerMsg: 1e6 / 400, ReadSyscalls: 100, WriteSyscalls: 100, SyscallsPerMsg: 200.0 / 400, RSSKiB: 1000},
		Cores:  []bench.CoreUsage{{CPU: 2, Role: "client", Busy: 0.5, MicrosPerMsg: 1e6 / 400}},
	}
	return []*bench.LoadResult{a, b}
}

// TestMergeLoadResults: counts and rates add up, the latencies are the
// merged histograms' (the same as one generator that saw every request),
// refusals too; the server's cost per message is over every process's
// messages, the client's usage adds up, the cores are all of them.
func TestMergeLoadResults(t *testing.T) {
	rs := splitFixture(t)
	res, notes := MergeLoadResults(rs)
	if len(notes) != 0 {
		t.Errorf("notes %v", notes)
	}
	_, all := hist(t, 1, 1000)
	if res.Latency != all {
		t.Errorf("latency %+v, want %+v (one histogram of every request)", res.Latency, all)
	}
	if p := res.Latency.P99Micros; p < 989 || p > 991 {
		t.Errorf("merged p99 %v µs, want 990", p)
	}
	if rl := res.RejectLatency; rl == nil || rl.Count != 300 || rl.P50Micros < 149_000 || rl.P50Micros > 151_000 || rl.P99Micros < 296_000 || rl.P99Micros > 298_000 {
		t.Errorf("reject latency %+v, want 300 refusals, p50 150 ms, p99 297 ms", rl)
	}
	if h, err := bench.DecodeHistogram(res.HistogramV2); err != nil || bench.Summarize(h) != all {
		t.Errorf("merged histogram: %v", err)
	}
	if h, err := bench.DecodeHistogram(res.RejectHistogramV2); err != nil || h.TotalCount() != 300 {
		t.Errorf("merged reject histogram: %v", err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9*max(1, math.Abs(b)) }
	if res.Config.Conns != 1000 || res.Config.ServerPID != 42 || res.Mode != "closed" || res.WindowSec != 2 ||
		res.Msgs != 1000 || res.PayloadBytes != 64000 || !near(res.MsgsPerSec, 500) || !near(res.MBPerSec, 0.032) ||
		res.Rejected != 300 || !near(res.RejectedPerSec, 150) || fmt.Sprint(res.Rejects) != "map[codel:260 queue:40]" ||
		res.Unfinished != 8000 || res.Dropped != 8 || fmt.Sprint(res.Errors) != "map[reset:1]" || res.FirstError != "connection reset" ||
		res.ConnsOpen != 1000 || res.ConnsLost != 1 {
		t.Errorf("merged counts %+v", res)
	}
	if s := res.Server; s == nil || s.PID != 42 || !near(s.CPUMicrosPerMsg, 2000) || !near(s.SyscallsPerMsg, 0.6) || s.Util != 1 {
		t.Errorf("server %+v, want 2 s of CPU over 1,000 messages", s)
	}
	if c := res.Client; c == nil || !near(c.CPUSec, 2) || !near(c.Util, 1) || !near(c.CPUMicrosPerMsg, 2000) || c.ReadSyscalls != 200 ||
		!near(c.SyscallsPerMsg, 0.4) || c.RSSKiB != 2000 || fmt.Sprint(c.CPUs) != "[1 2]" {
		t.Errorf("client %+v", c)
	}
	if got := fmt.Sprint(res.Cores); got != "[{0 server 1 0 2000} {1 client 0.5 0 1000} {2 client 0.5 0 1000}]" {
		t.Errorf("cores %s", got)
	}
	// The parts are left as they were.
	if rs[0].Msgs != 600 || rs[0].Server.CPUMicrosPerMsg != 2e6/600 {
		t.Errorf("a part changed: %+v", rs[0])
	}
	// The process that read the server's usage had nothing answered: the
	// server's cost is still over the other's messages.
	rs = splitFixture(t)
	rs[0].Msgs, rs[0].MsgsPerSec, rs[0].Server.CPUMicrosPerMsg, rs[0].Server.SyscallsPerMsg = 0, 0, 0, -1
	starved, _ := MergeLoadResults(rs)
	if s := starved.Server; starved.Msgs != 400 || !near(s.CPUMicrosPerMsg, 5000) || !near(s.SyscallsPerMsg, 1.5) {
		t.Errorf("the server over the other process's 400 messages: %+v", s)
	}
	one, notes := MergeLoadResults(rs[:1])
	if one != rs[0] || notes != nil {
		t.Errorf("one result merged into %p (want %p), notes %v", one, rs[0], notes)
	}
	if none, _ := MergeLoadResults(nil); none != nil {
		t.Errorf("nothing merged into %+v", none)
	}
}

// TestMergeLoadResultsWithoutHistograms: a part without its histogram
// makes the merged latency the worst part's percentiles (counts added,
// mean weighted) and says so; an open loop's send lag is the worst part's.
func TestMergeLoadResultsWithoutHistograms(t *testing.T) {
	rs := splitFixture(t)
	rs[1].HistogramV2, rs[0].RejectHistogramV2 = "", "garbage"
	rs[0].Mode, rs[1].Mode = "open", "open"
	rs[0].SendLag = &bench.LatencySummary{Count: 10, P99Micros: 30, MaxMicros: 40}
	rs[1].SendLag = &bench.LatencySummary{Count: 20, P99Micros: 20, MaxMicros: 90}
	res, notes := MergeLoadResults(rs)
	if len(notes) != 2 || !strings.Contains(notes[0], "generator 1") || !strings.Contains(notes[0], "reject latency") || !strings.Contains(notes[1], "generator 2: no latency histogram") {
		t.Errorf("notes %q", notes)
	}
	l0, l1 := rs[0].Latency, rs[1].Latency
	want := bench.LatencySummary{Count: 1000, MeanMicros: (l0.MeanMicros*600 + l1.MeanMicros*400) / 1000,
		P50Micros: l1.P50Micros, P90Micros: l1.P90Micros, P99Micros: l1.P99Micros, P999Micros: l1.P999Micros, MaxMicros: l1.MaxMicros}
	if math.Abs(res.Latency.MeanMicros-want.MeanMicros) > 1e-6 {
		t.Errorf("mean %v, want %v", res.Latency.MeanMicros, want.MeanMicros)
	}
	res.Latency.MeanMicros = want.MeanMicros
	if res.Latency != want || res.HistogramV2 != "" {
		t.Errorf("latency %+v, want %+v, histogram %q", res.Latency, want, res.HistogramV2)
	}
	if rl := res.RejectLatency; rl == nil || rl.Count != 300 || rl.P99Micros != rs[1].RejectLatency.P99Micros || res.RejectHistogramV2 != "" {
		t.Errorf("reject latency %+v", rl)
	}
	if l := res.SendLag; l == nil || l.Count != 30 || l.P99Micros != 30 || l.MaxMicros != 90 {
		t.Errorf("send lag %+v", l)
	}
}
