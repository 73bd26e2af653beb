package lab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMatrixConfig(t *testing.T) {
	c := MatrixConfig{}.withDefaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if fmt.Sprint(c.Factors, c.Works, c.Modes, c.Conns, c.Servers) != "[2 5 10] [50µs 200µs 2ms 20ms] [inline pool] [64 1000] [sluice-shed-default gnet net]" ||
		c.RefFraction != 0.5 || c.Rounds != 3 || c.MinSamples != 1000 {
		t.Errorf("defaults %+v", c)
	}
	for i, bad := range []MatrixConfig{
		{Servers: []string{"apache"}},
		{Modes: []string{"threads"}},
		{Factors: []float64{0}},
		{Factors: []float64{math.NaN()}},
		{Works: []time.Duration{-time.Millisecond}},
		{Conns: []int{0}},
		{RefFraction: 1},
		{Size: -1},
		{ClientProcs: -1},
	} {
		b := bad.withDefaults()
		if err := b.Validate(); err == nil {
			t.Errorf("%d: %+v validated", i, bad)
		}
	}
}

// TestMatrixPlan: rounds outermost, then modes, connections and works;
// pool blocks hold the sluice servers only, and a pool block without one
// is left out.
func TestMatrixPlan(t *testing.T) {
	c := MatrixConfig{Rounds: 2, Works: []time.Duration{time.Millisecond, 2 * time.Millisecond}, Conns: []int{64, 1000}}.withDefaults()
	plan := c.Plan()
	if len(plan) != 2*2*2*2 {
		t.Fatalf("%d blocks, want 16", len(plan))
	}
	var got []string
	for _, b := range plan[:8] {
		got = append(got, fmt.Sprintf("%d/%s/%d/%v/%s", b.Round, b.Mode, b.Conns, b.Work, strings.Join(b.Servers, "+")))
	}
	want := []string{
		"1/inline/64/1ms/sluice-shed-default+gnet+net", "1/inline/64/2ms/sluice-shed-default+gnet+net",
		"1/inline/1000/1ms/sluice-shed-default+gnet+net", "1/inline/1000/2ms/sluice-shed-default+gnet+net",
		"1/pool/64/1ms/sluice-shed-default", "1/pool/64/2ms/sluice-shed-default",
		"1/pool/1000/1ms/sluice-shed-default", "1/pool/1000/2ms/sluice-shed-default",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("round 1:\n got %v\nwant %v", got, want)
	}
	if plan[8].Round != 2 || plan[15].Round != 2 {
		t.Errorf("round 2 blocks: %+v, %+v", plan[8], plan[15])
	}
	c.Servers = []string{ServerGnet, ServerNet}
	for _, b := range c.Plan() {
		if b.Mode == ModePool {
			t.Fatalf("a pool block without a sluice server: %+v", b)
		}
	}
	if n := len(c.Plan()); n != 8 {
		t.Errorf("gnet and net only: %d blocks, want 8", n)
	}
}

// TestPendingBlocks: a resumed matrix runs the blocks the saved runs lack,
// in plan order, and more rounds add whole rounds.
func TestPendingBlocks(t *testing.T) {
	c := MatrixConfig{Rounds: 2, Works: []time.Duration{time.Millisecond, 2 * time.Millisecond}, Conns: []int{64}, Modes: []string{ModeInline}}.withDefaults()
	plan := c.Plan()
	runs := []MatrixRun{
		{Round: 1, Mode: ModeInline, Conns: 64, Work: time.Millisecond, Server: ServerNet, Kind: KindCapacity},
		{Round: 1, Mode: ModeInline, Conns: 64, Work: time.Millisecond, Server: ServerGnet, Kind: KindOverload, Factor: 2},
		{Round: 2, Mode: ModeInline, Conns: 64, Work: 2 * time.Millisecond, Server: ServerNet, Kind: KindReference},
		{Round: 1, Mode: ModePool, Conns: 64, Work: 2 * time.Millisecond, Server: ServerSluiceShedDefault, Kind: KindCapacity},
	}
	var got []string
	for _, b := range pendingBlocks(plan, runs) {
		got = append(got, fmt.Sprintf("%d/%v", b.Round, b.Work))
	}
	if strings.Join(got, " ") != "1/2ms 2/1ms" {
		t.Errorf("pending %v, want [1/2ms 2/1ms]", got)
	}
	if n := len(pendingBlocks(plan, nil)); n != len(plan) {
		t.Errorf("nothing saved: %d pending of %d", n, len(plan))
	}
}

// TestMatrixLoadShape: the capacity run queues about 250 ms of work, one
// request per connection at least, with a response timeout above that
// queue; windows grow until MinSamples requests are expected, within
// Duration and two minutes.
func TestMatrixLoadShape(t *testing.T) {
	for i, tc := range []struct {
		work             time.Duration
		conns, inFlight  int
		timeout          time.Duration
		perSec           float64
		window, wantWind time.Duration
	}{
		{50 * time.Microsecond, 64, 16, 5 * time.Second, 20000, 3 * time.Second, 3 * time.Second},
		{200 * time.Microsecond, 1000, 1, 5 * time.Second, 5000, 3 * time.Second, 3 * time.Second},
		{2 * time.Millisecond, 64, 1, 5 * time.Second, 250, 3 * time.Second, 4 * time.Second},
		{20 * time.Millisecond, 64, 1, 5120 * time.Millisecond, 25, 3 * time.Second, 40 * time.Second},
		{20 * time.Millisecond, 1000, 1, 80 * time.Second, 50, 3 * time.Second, 20 * time.Second},
		{20 * time.Millisecond, 1, 13, 5 * time.Second, 1, 3 * time.Second, maxMatrixWindow},
		{time.Millisecond, 8, 31, 5 * time.Second, 0, 3 * time.Second, 3 * time.Second},
	} {
		n := capacityInFlight(tc.work, tc.conns)
		if n != tc.inFlight {
			t.Errorf("%d: %v × %d connections: %d in flight each, want %d", i, tc.work, tc.conns, n, tc.inFlight)
		}
		if to := responseTimeout(tc.work, n*tc.conns); to != tc.timeout {
			t.Errorf("%d: timeout %v, want %v", i, to, tc.timeout)
		}
		if w := window(tc.window, 1000, tc.perSec); w != tc.wantWind {
			t.Errorf("%d: window at %v/s %v, want %v", i, tc.perSec, w, tc.wantWind)
		}
	}
	if w := window(5*time.Minute, 1000, 1); w != 5*time.Minute {
		t.Errorf("a Duration above the cap is kept: %v", w)
	}
}

func TestMatrixRunAccount(t *testing.T) {
	for i, tc := range []struct {
		load       *LoadBrief
		unanswered int64
		answered   bool
		balance    int64
	}{
		{nil, 0, false, 0},
		{&LoadBrief{Intended: 100, Msgs: 60, Rejected: 40}, 0, true, 0},
		{&LoadBrief{Intended: 100, Msgs: 58, Rejected: 40, Unfinished: 5}, 0, true, -3},
		{&LoadBrief{Intended: 100, Msgs: 80, Missed: 7, Dropped: 3}, 10, false, 10},
		{&LoadBrief{Msgs: 50, Unfinished: 64, Errors: map[string]int64{"refused": 1}}, 0, false, 0},
		{&LoadBrief{Errors: map[string]int64{}}, 0, true, 0},
	} {
		r := MatrixRun{Load: tc.load, Unanswered: 99, Answered: !tc.answered, Balance: 99}
		r.account()
		if r.Unanswered != tc.unanswered || r.Answered != tc.answered || r.Balance != tc.balance {
			t.Errorf("%d: unanswered %d answered %v balance %d, want %d %v %d", i, r.Unanswered, r.Answered, r.Balance, tc.unanswered, tc.answered, tc.balance)
		}
	}
}

// loadMatrixTestdata reads testdata/matrix.json: two rounds of
// sluice-shed-default and net at 200 µs and 20 ms of inline work and
// sluice-shed-default at 200 µs in the pool, 64 connections, factors 2
// and 10, with a failed pool round.
func loadMatrixTestdata(t *testing.T) *MatrixReport {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", MatrixJSON))
	if err != nil {
		t.Fatal(err)
	}
	var rep MatrixReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	rep.Summarize()
	return &rep
}

func (rep *MatrixReport) cell(mode string, work time.Duration, srv string, factor float64) *MatrixCell {
	for i := range rep.Cells {
		c := &rep.Cells[i]
		if c.Mode == mode && c.Work == work && c.Server == srv && c.Factor == factor {
			return c
		}
	}
	return nil
}

// TestMatrixSummarize checks the aggregation: ratios paired by round,
// medians and ranges over the rounds, the fewest samples, the targets and
// the accounts.
func TestMatrixSummarize(t *testing.T) {
	rep := loadMatrixTestdata(t)
	if len(rep.Cells) != 2*2*2+2 {
		t.Fatalf("%d cells, want 10", len(rep.Cells))
	}
	const us200, ms20 = 200 * time.Microsecond, 20 * time.Millisecond
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	nearSpread := func(s Spread, med, lo, hi float64) bool {
		return near(s.Median, med) && near(s.Min, lo) && near(s.Max, hi)
	}
	for i, tc := range []struct {
		mode                    string
		work                    time.Duration
		srv                     string
		factor                  float64
		rounds                  int
		good                    [3]float64
		p99                     [3]float64
		goodMet, p99Met, allAns bool
		met                     bool
		unanswered              int64
		failed                  int
		refSamples, overSamples int64
	}{
		// 3840/4000 and 4600/5000; 2000/1000 and 4800/2000
		{ModeInline, us200, ServerSluiceShedDefault, 2, 2, [3]float64{0.94, 0.92, 0.96}, [3]float64{2.2, 2.0, 2.4}, true, true, true, true, 0, 0, 1500, 11520},
		{ModeInline, us200, ServerSluiceShedDefault, 10, 2, [3]float64{0.8, 0.8, 0.8}, [3]float64{3.5, 3, 4}, false, false, true, false, 0, 0, 1500, 9600},
		{ModeInline, us200, ServerNet, 2, 2, [3]float64{1, 1, 1}, [3]float64{500, 500, 500}, true, false, false, false, 3000, 0, 6000, 12000},
		{ModeInline, us200, ServerNet, 10, 2, [3]float64{1, 1, 1}, [3]float64{900, 900, 900}, true, false, false, false, 100064, 0, 6000, 12000},
		// the p99 target is met at exactly 3×; goodput at 89% is not
		{ModeInline, ms20, ServerSluiceShedDefault, 10, 2, [3]float64{0.89, 0.88, 0.9}, [3]float64{3, 2.8, 3.2}, false, true, true, false, 0, 0, 900, 880},
		{ModeInline, ms20, ServerSluiceShedDefault, 2, 2, [3]float64{0.93, 0.92, 0.94}, [3]float64{2.2, 2, 2.4}, true, true, true, true, 0, 0, 900, 920},
		// one round failed: judged on the other, and not met
		{ModePool, us200, ServerSluiceShedDefault, 2, 1, [3]float64{0.8, 0.8, 0.8}, [3]float64{4, 4, 4}, false, false, true, false, 0, 1, 4500, 7200},
		{ModePool, us200, ServerSluiceShedDefault, 10, 0, [3]float64{}, [3]float64{}, false, false, true, false, 0, 2, 0, 0},
	} {
		c := rep.cell(tc.mode, tc.work, tc.srv, tc.factor)
		if c == nil {
			t.Errorf("%d: no cell %s %v %s %v×", i, tc.mode, tc.work, tc.srv, tc.factor)
			continue
		}
		if c.Rounds != tc.rounds || !nearSpread(c.GoodputRatio, tc.good[0], tc.good[1], tc.good[2]) || !nearSpread(c.P99Ratio, tc.p99[0], tc.p99[1], tc.p99[2]) {
			t.Errorf("%d: rounds %d goodput %+v p99 %+v, want %d %v %v", i, c.Rounds, c.GoodputRatio, c.P99Ratio, tc.rounds, tc.good, tc.p99)
		}
		if c.GoodputMet() != tc.goodMet || c.P99Met() != tc.p99Met || c.AllAnswered != tc.allAns || c.Met() != tc.met {
			t.Errorf("%d: goodput met %v, p99 met %v, answered %v, met %v; want %v %v %v %v", i, c.GoodputMet(), c.P99Met(), c.AllAnswered, c.Met(), tc.goodMet, tc.p99Met, tc.allAns, tc.met)
		}
		if c.Unanswered != tc.unanswered || c.Failed != tc.failed || c.RefSamples != tc.refSamples || c.OverloadSamples != tc.overSamples {
			t.Errorf("%d: unanswered %d failed %d samples %d/%d, want %d %d %d/%d", i, c.Unanswered, c.Failed, c.RefSamples, c.OverloadSamples, tc.unanswered, tc.failed, tc.refSamples, tc.overSamples)
		}
	}
	c := rep.cell(ModeInline, us200, ServerSluiceShedDefault, 10)
	if !near(c.Late, 0.1) || !nearSpread(c.Capacity, 4500, 4000, 5000) || !nearSpread(c.RefP99, 1500, 1000, 2000) {
		t.Errorf("late %v capacity %+v reference p99 %+v", c.Late, c.Capacity, c.RefP99)
	}
	if c := rep.cell(ModeInline, us200, ServerSluiceShedDefault, 2); !nearSpread(c.PeakRSS, 21001.5, 21001, 21002) {
		t.Errorf("peak RSS %+v", c.PeakRSS)
	}
	// Cells follow the configuration's order: mode, conns, work, server,
	// factor.
	var order []string
	for _, c := range rep.Cells[:4] {
		order = append(order, fmt.Sprintf("%s/%v/%s/%v", c.Mode, c.Work, c.Server, c.Factor))
	}
	if got := strings.Join(order, " "); got != "inline/200µs/sluice-shed-default/2 inline/200µs/sluice-shed-default/10 inline/200µs/net/2 inline/200µs/net/10" {
		t.Errorf("order %s", got)
	}
	if last := rep.Cells[len(rep.Cells)-1]; last.Mode != ModePool || last.Factor != 10 {
		t.Errorf("last cell %+v", last)
	}
}

func TestMatrixCellText(t *testing.T) {
	rep := loadMatrixTestdata(t)
	const us200, ms20 = 200 * time.Microsecond, 20 * time.Millisecond
	for i, tc := range []struct {
		c    *MatrixCell
		want string
	}{
		{rep.cell(ModeInline, us200, ServerSluiceShedDefault, 2), "94% (92–96%) / 2.2× (2.0–2.4)"},
		{rep.cell(ModeInline, us200, ServerSluiceShedDefault, 10), "80% (80–80%) ✗ / 3.5× (3.0–4.0) ✗"},
		{rep.cell(ModeInline, us200, ServerNet, 2), "100% (100–100%) / 500× (500–500) ✗ · 3000 unanswered ✗"},
		{rep.cell(ModeInline, ms20, ServerSluiceShedDefault, 10), "89% (88–90%) ✗ / 3.0× (2.8–3.2)"},
		{rep.cell(ModePool, us200, ServerSluiceShedDefault, 2), "80% (80–80%) ✗ / 4.0× (4.0–4.0) ✗ · 1 of 2 rounds failed ✗"},
		{rep.cell(ModePool, us200, ServerSluiceShedDefault, 10), "no result · 2 of 2 rounds failed ✗"},
		{&MatrixCell{Rounds: 1, GoodputRatio: Spread{1, 1, 1}, P99Ratio: Spread{1, 1, 1}}, "100% (100–100%) / 1.0× (1.0–1.0) · connections failed ✗"},
		{&MatrixCell{Rounds: 1, AllAnswered: true}, "0% (0–0%) ✗ / no p99 ✗"},
		{&MatrixCell{Rounds: 1, AllAnswered: true, GoodputRatio: Spread{0.77, 0.77, 0.77}, P99Ratio: Spread{3.9, 3.9, 3.9}, GeneratorBusy: 0.97},
			"77% (77–77%) ✗ / 3.9× (3.9–3.9) ✗ · generator 97% busy"},
		{&MatrixCell{Rounds: 1, AllAnswered: true, GoodputRatio: Spread{0.95, 0.95, 0.95}, P99Ratio: Spread{2, 2, 2}, GeneratorBusy: 0.94},
			"95% (95–95%) / 2.0× (2.0–2.0)"},
	} {
		if got := cellText(tc.c); got != tc.want {
			t.Errorf("%d: %q, want %q", i, got, tc.want)
		}
	}
}

// TestMatrixGeneratorSaturated: a cell's generator load is the busiest of
// its overload runs over the generator's CPUs, marked from 95% of them, and
// the verdict line counts the marked cells.
func TestMatrixGeneratorSaturated(t *testing.T) {
	const us50 = 50 * time.Microsecond
	run := func(round int, factor, clientUtil float64) MatrixRun {
		return MatrixRun{Round: round, Mode: ModeInline, Conns: 64, Work: us50, Server: ServerSluiceShedDefault, Kind: KindOverload, Factor: factor,
			Answered: true, Load: &LoadBrief{MsgsPerSec: 1000, ClientUtil: clientUtil}}
	}
	rep := &MatrixReport{Config: MatrixConfig{ClientCPUs: []int{1, 2}},
		Runs: []MatrixRun{run(1, 2, 0.9), run(2, 2, 1.1), run(1, 5, 1.2), run(2, 5, 1.9)}}
	rep.Summarize()
	for _, tc := range []struct {
		factor float64
		busy   float64
		sat    bool
	}{{2, 0.55, false}, {5, 0.95, true}} {
		c := rep.cell(ModeInline, us50, ServerSluiceShedDefault, tc.factor)
		if c == nil {
			t.Fatalf("no cell at %v×", tc.factor)
		}
		if math.Abs(c.GeneratorBusy-tc.busy) > 1e-9 || c.GeneratorSaturated() != tc.sat {
			t.Errorf("%v×: generator busy %v saturated %v, want %v %v", tc.factor, c.GeneratorBusy, c.GeneratorSaturated(), tc.busy, tc.sat)
		}
	}
	if md := rep.Markdown(); !strings.Contains(md, "The generator used at least 95% of its CPUs in 1 of them.") {
		t.Errorf("verdicts do not count the saturated cell:\n%s", md)
	}
}

// TestMatrixMarkdown renders the synthetic matrix: the verdicts, a table
// per mode and connection count with the servers as sub-rows, the pool
// note, the reference table and the details.
func TestMatrixMarkdown(t *testing.T) {
	rep := loadMatrixTestdata(t)
	md := rep.Markdown()
	for _, want := range []string{
		"# The overload matrix",
		"the generator as one process on CPUs [1];",
		"**sluice-shed-default** meets all three targets in 2 of 6 cells (goodput in 2, p99 in 3, every request answered in 4).",
		"**net** meets all three targets in 0 of 4 cells",
		"## inline, 64 connections\n\n| work | server | 2× | 10× |\n|---|---|--:|--:|\n",
		"| 200 µs | sluice-shed-default | 94% (92–96%) / 2.2× (2.0–2.4) | 80% (80–80%) ✗ / 3.5× (3.0–4.0) ✗ |\n|  | net | 100% (100–100%) / 500× (500–500) ✗ · 3000 unanswered ✗ |",
		"| 20 ms | sluice-shed-default | 93% (92–94%) / 2.2× (2.0–2.4) |",
		"## pool, 64 connections\n\nThe sluice servers only: gnet and net have no worker pool",
		"| 20 ms | sluice-shed-default | 50 (50–50) | 25000 (25000–25000) | 900 | 880 | 19.5 |",
		"| 200 µs | sluice-shed-default | 3k (3k–3k) | 1500 (1500–1500) | 4500 | 7200 | 19.5 |",
		"![inline, 64 connections](matrix-inline-64.svg)",
		"| inline | 64 | 200 µs | sluice-shed-default | 10× | 80% (80%–80%) | 5000 (4000–6000) | 3.5 (3.0–4.0) | 41.4k (36.8k–46k) | 0 | 10.0% | 19.5 |",
		"| pool | 64 | 200 µs | sluice-shed-default | 10× | – | – | – | – | 0 | 0.0% | 0.0 | 2: sluice: bench: the generator printed no result |",
		"- matrix inline: sluice-shed-default: `cmd/echo -addr 127.0.0.1:0 -codec length -loops 1 -shed -work 200µs`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(md)
	}
}

func TestMatrixChart(t *testing.T) {
	rep := loadMatrixTestdata(t)
	for _, g := range []struct {
		mode   string
		panels []string
	}{
		{ModeInline, []string{"sluice-shed-default: goodput ÷ capacity", "net: admitted p99 ÷ p99 at 0.5×", "200 µs", "20 ms", "90%", "3.0×"}},
		{ModePool, []string{"sluice-shed-default: goodput ÷ capacity", "200 µs"}},
	} {
		var svg bytes.Buffer
		if err := rep.WriteMatrixChart(&svg, g.mode, 64); err != nil {
			t.Fatalf("%s: %v", g.mode, err)
		}
		for _, want := range append([]string{"<svg"}, g.panels...) {
			if !bytes.Contains(svg.Bytes(), []byte(want)) {
				t.Errorf("%s chart lacks %q (%d bytes)", g.mode, want, svg.Len())
			}
		}
		if g.mode == ModePool && bytes.Contains(svg.Bytes(), []byte("net:")) {
			t.Errorf("pool chart has a net panel")
		}
	}
	if err := rep.WriteMatrixChart(&bytes.Buffer{}, ModeInline, 1000); err == nil {
		t.Errorf("a chart of no cells drew")
	}
}

// TestWriteMatrixReport writes the files and reads matrix.json back: the
// cells survive the round trip.
func TestWriteMatrixReport(t *testing.T) {
	rep := loadMatrixTestdata(t)
	dir := t.TempDir()
	paths, err := WriteMatrixReport(rep, dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	if got := strings.Join(names, " "); got != "matrix.json matrix.md matrix-inline-64.svg matrix-pool-64.svg" {
		t.Fatalf("wrote %s", got)
	}
	b, err := os.ReadFile(filepath.Join(dir, MatrixJSON))
	if err != nil {
		t.Fatal(err)
	}
	var back MatrixReport
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Runs) != len(rep.Runs) || len(back.Cells) != len(rep.Cells) || back.Cells[0].GoodputRatio != rep.Cells[0].GoodputRatio {
		t.Errorf("round trip: %d runs %d cells", len(back.Runs), len(back.Cells))
	}
	if _, err := os.Stat(filepath.Join(dir, MatrixJSON+".tmp")); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
}

func TestMatrixTexts(t *testing.T) {
	for d, want := range map[time.Duration]string{50 * time.Microsecond: "50 µs", 2 * time.Millisecond: "2 ms", time.Second: "1 s", 1500 * time.Microsecond: "1500 µs", 1500 * time.Nanosecond: "1.5µs"} {
		if got := workText(d); got != want {
			t.Errorf("workText(%v) %q, want %q", d, got, want)
		}
	}
	if factorText(0.5) != "0.5×" || factorText(10) != "10×" || timesText(2.25) != "2.2" || timesText(320.4) != "320" {
		t.Errorf("texts %s %s %s %s", factorText(0.5), factorText(10), timesText(2.25), timesText(320.4))
	}
	for d, want := range map[time.Duration]string{2 * time.Minute: "2m", time.Hour: "1h", 90 * time.Second: "1m30s", 300 * time.Millisecond: "300ms", 5 * time.Second: "5s", 0: "0s"} {
		if got := durText(d); got != want {
			t.Errorf("durText(%v) %q, want %q", d, got, want)
		}
	}
	if plural(1, "round") != "1 round" || plural(3, "round") != "3 rounds" {
		t.Errorf("plural")
	}
	if got := truncate("ab✗cd", 3); got != "ab…" {
		t.Errorf("truncate %q", got)
	}
}

// TestMatrixTime: the default matrix's expected time, and the estimate
// scales the elapsed time by the expected time of what is left.
func TestMatrixTime(t *testing.T) {
	c := MatrixConfig{}.withDefaults()
	plan := c.Plan()
	var all time.Duration
	for _, b := range plan {
		all += blockTime(b, c)
	}
	t.Logf("default matrix: %d blocks, about %v", len(plan), all.Round(time.Minute))
	if len(plan) != 3*(2*4+2*4) || all < time.Hour || all > 2*time.Hour {
		t.Errorf("%d blocks, %v", len(plan), all)
	}
	// a 20 ms block of one server: 5 runs of 1 s warm-up and 1 s to start
	// and stop, measuring 20 s (capacity: 1,000 requests at 50/s), 40 s
	// (reference, at 25/s) and 3 × 20 s (overload, served at capacity)
	if d := blockTime(MatrixBlock{Work: 20 * time.Millisecond, Servers: []string{ServerNet}}, c); d != 130*time.Second {
		t.Errorf("20 ms block %v, want 130s", d)
	}
	if e := estimate(plan, 0, c, time.Minute); e != "" {
		t.Errorf("estimate before any block: %q", e)
	}
	if e := estimate(plan[:2], 1, c, time.Minute); !strings.HasPrefix(e, "about 1m0s left") {
		t.Errorf("two equal blocks, one done in a minute: %q", e)
	}
}
