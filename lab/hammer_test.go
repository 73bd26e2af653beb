package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicenet/sluice/bench"
)

func TestParseHammerShapes(t *testing.T) {
	got, err := ParseHammerShapes(" 1000x8, 1000×64,64X64,")
	if err != nil || fmt.Sprint(got) != "[1000x8 1000x64 64x64]" {
		t.Fatalf("%v: %v", got, err)
	}
	if got, err := ParseHammerShapes(""); got != nil || err != nil {
		t.Errorf("empty: %v %v", got, err)
	}
	for _, bad := range []string{"1000", "x8", "1000x", "0x8", "8x0", "-1x8", "1000x8x2", "ax8", "1000,8"} {
		if s, err := ParseHammerShapes(bad); !errors.Is(err, bench.ErrInvalidConfig) {
			t.Errorf("%q: %v, %v", bad, s, err)
		}
	}
	if s := (HammerShape{1000, 64}); s.String() != "1000x64" || s.text() != "1,000 × 64" {
		t.Errorf("%s / %s", s.String(), s.text())
	}
}

func TestHammerConfig(t *testing.T) {
	c := HammerConfig{}.withDefaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if got := fmt.Sprint(c.Shapes, c.Works, c.Modes, c.Servers, c.Rounds, c.RefFraction, c.Size, c.Warmup, c.Duration, c.MinSamples, c.ServerCPUs, c.ClientCPUs); got != "[1000x8 1000x64 64x64] [50µs 200µs 2ms] [inline pool] [sluice-shed-default gnet net] 2 0.5 64 1s 3s 1000 [0] [1]" {
		t.Errorf("defaults %s", got)
	}
	if fmt.Sprint(c.ShedArgs) != fmt.Sprint(DefaultShedArgs) {
		t.Errorf("shed args %v", c.ShedArgs)
	}
	for i, bad := range []HammerConfig{
		{Servers: []string{"apache"}},
		{Modes: []string{"threads"}},
		{Works: []time.Duration{0}},
		{Shapes: []HammerShape{{0, 8}}},
		{Shapes: []HammerShape{{8, -1}}},
		{RefFraction: 1.5},
		{ClientProcs: -1},
		{Size: -1},
	} {
		b := bad.withDefaults()
		if err := b.Validate(); err == nil {
			t.Errorf("%d: %+v validated", i, bad)
		}
	}
}

// TestHammerPlan: rounds outermost, then modes, shapes and works; pool
// blocks hold the sluice servers only; a resumed run does the blocks the
// saved runs lack.
func TestHammerPlan(t *testing.T) {
	c := HammerConfig{Shapes: []HammerShape{{1000, 8}, {64, 64}}, Works: []time.Duration{50 * time.Microsecond, 2 * time.Millisecond}}.withDefaults()
	plan := c.Plan()
	if len(plan) != 2*2*2*2 {
		t.Fatalf("%d blocks, want 16", len(plan))
	}
	var got []string
	for _, b := range plan[:8] {
		got = append(got, fmt.Sprintf("%d/%s/%s/%v/%s", b.Round, b.Mode, b.Shape, b.Work, strings.Join(b.Servers, "+")))
	}
	want := "1/inline/1000x8/50µs/sluice-shed-default+gnet+net 1/inline/1000x8/2ms/sluice-shed-default+gnet+net " +
		"1/inline/64x64/50µs/sluice-shed-default+gnet+net 1/inline/64x64/2ms/sluice-shed-default+gnet+net " +
		"1/pool/1000x8/50µs/sluice-shed-default 1/pool/1000x8/2ms/sluice-shed-default " +
		"1/pool/64x64/50µs/sluice-shed-default 1/pool/64x64/2ms/sluice-shed-default"
	if strings.Join(got, " ") != want {
		t.Errorf("round 1:\n got %v\nwant %v", strings.Join(got, " "), want)
	}
	if plan[8].Round != 2 {
		t.Errorf("block 9 %+v", plan[8])
	}
	c.Servers = []string{ServerNet}
	if n := len(c.Plan()); n != 8 {
		t.Errorf("net only: %d blocks, want 8 (no pool)", n)
	}

	c = HammerConfig{Shapes: []HammerShape{{64, 64}}, Works: []time.Duration{time.Millisecond, 2 * time.Millisecond}, Modes: []string{ModeInline}}.withDefaults()
	runs := []HammerRun{
		{MatrixRun: MatrixRun{Round: 1, Mode: ModeInline, Conns: 64, Work: time.Millisecond, Kind: KindCapacity}, Shape: HammerShape{64, 64}},
		// another shape's block does not count
		{MatrixRun: MatrixRun{Round: 1, Mode: ModeInline, Conns: 64, Work: 2 * time.Millisecond, Kind: KindCapacity}, Shape: HammerShape{64, 8}},
	}
	got = nil
	for _, b := range pendingHammerBlocks(c.Plan(), runs) {
		got = append(got, fmt.Sprintf("%d/%v", b.Round, b.Work))
	}
	if strings.Join(got, " ") != "1/2ms 2/1ms 2/2ms" {
		t.Errorf("pending %v", got)
	}
	// a block: capacity, a reference and a hammer run per server, each 1 s
	// of warm-up, 1 s to start and stop and the window (3 s; the 2 ms
	// reference at 250/s needs 4 s for 1,000 requests)
	if d := hammerBlockTime(HammerBlock{Work: 2 * time.Millisecond, Servers: []string{ServerSluiceShedDefault, ServerNet}}, c); d != 3*5*time.Second+2*6*time.Second {
		t.Errorf("block time %v", d)
	}
	c.NoReference = true
	if d := hammerBlockTime(HammerBlock{Work: 2 * time.Millisecond, Servers: []string{ServerNet}}, c); d != 2*5*time.Second {
		t.Errorf("block time without references %v", d)
	}
}

// hammerFixture is two rounds of sluice-shed-default and net at 1,000 × 8
// inline, and sluice-shed-default at 64 × 64 in the pool with a failed
// capacity run (round 1) and a failed hammer run (round 2); sluice's
// hammer runs read the refusal share.
func hammerFixture() *HammerReport {
	const w = 200 * time.Microsecond
	inline, pool := HammerShape{1000, 8}, HammerShape{64, 64}
	run := func(round int, mode string, shape HammerShape, srv, kind string, l *LoadBrief) HammerRun {
		r := HammerRun{MatrixRun: MatrixRun{Round: round, Mode: mode, Conns: shape.Conns, Work: w, Server: srv, Kind: kind, Load: l}, Shape: shape}
		if kind != KindReference {
			r.InFlight = shape.InFlight
		}
		return r
	}
	served := func(perSec, p99 float64) *LoadBrief {
		return &LoadBrief{MsgsPerSec: perSec, Msgs: int64(2 * perSec), Latency: bench.LatencySummary{Count: int64(2 * perSec), P99Micros: p99}, Errors: map[string]int64{}, ClientUtil: 0.5}
	}
	shed := func(perSec, p99, refused, rp50, rp99 float64) *LoadBrief {
		l := served(perSec, p99)
		l.RejectedPerSec, l.Rejected = refused, int64(2*refused)
		l.RejectLatency = &bench.LatencySummary{Count: l.Rejected, P50Micros: rp50, P99Micros: rp99}
		l.ServerUtil, l.ServerMicrosPerMsg = 1, 1e6/perSec // a core: 1e6 / (served + refused) µs per answer
		return l
	}
	lost := served(5000, 400_000)
	lost.Dropped, lost.Errors = 16, map[string]int64{"timeout": 2}
	rep := &HammerReport{
		Started: time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC), Finished: time.Date(2026, 11, 28, 3, 30, 0, 0, time.UTC),
		Machine: Machine{CPUModel: "Test CPU", CPUs: 2, Kernel: "6.1", GoVersion: "go1.26"},
		Config: HammerConfig{Shapes: []HammerShape{inline, pool}, Works: []time.Duration{w}, Servers: []string{ServerSluiceShedDefault, ServerNet},
			ClientCPUs: []int{1, 2}}.withDefaults(),
		Commands: map[string]string{"hammer inline: sluice-shed-default": "cmd/echo -shed -work 200µs"},
		Runs: []HammerRun{
			// round 1
			run(1, ModeInline, inline, ServerSluiceNoShed, KindCapacity, served(4000, 900_000)),
			run(1, ModeInline, inline, ServerSluiceShedDefault, KindReference, served(2000, 1000)),
			run(1, ModeInline, inline, ServerNet, KindReference, served(2000, 500)),
			run(1, ModeInline, inline, ServerSluiceShedDefault, KindHammer, shed(3800, 2000, 40000, 10_000, 300_000)),
			run(1, ModeInline, inline, ServerNet, KindHammer, lost),
			run(1, ModePool, pool, ServerSluiceNoShed, KindCapacity, served(4500, 9000)),
			run(1, ModePool, pool, ServerSluiceShedDefault, KindReference, served(2200, 700)),
			run(1, ModePool, pool, ServerSluiceShedDefault, KindHammer, shed(4000, 1500, 20000, 1000, 3000)),
			// round 2
			run(2, ModeInline, inline, ServerSluiceNoShed, KindCapacity, served(5000, 800_000)),
			run(2, ModeInline, inline, ServerSluiceShedDefault, KindReference, served(2500, 2000)),
			run(2, ModeInline, inline, ServerNet, KindReference, served(2500, 500)),
			run(2, ModeInline, inline, ServerSluiceShedDefault, KindHammer, shed(4000, 5000, 30000, 20_000, 200_000)),
			run(2, ModeInline, inline, ServerNet, KindHammer, served(5000, 500_000)),
			run(2, ModePool, pool, ServerSluiceNoShed, KindCapacity, served(4400, 9000)),
			run(2, ModePool, pool, ServerSluiceShedDefault, KindReference, served(2200, 700)),
			run(2, ModePool, pool, ServerSluiceShedDefault, KindHammer, nil),
		},
	}
	rep.Runs[5].Error = "sluice: bench: the generator printed no result" // its load stands, but not as a capacity
	rep.Runs[15].Error = "connection refused"
	rep.Runs[3].ServerSysShare, rep.Runs[11].ServerSysShare = 0.3, 0.4
	rep.Runs[3].PeakRSSKiB = 20480
	// sluice's readings of sluice_refuse_share_ratio: inline over the
	// target (median 17%), the pool's one round under it; net has none
	rep.Runs[3].RefuseShare = &RefuseShare{Mean: 0.12, Max: 0.3, Samples: 12}
	rep.Runs[11].RefuseShare = &RefuseShare{Mean: 0.22, Max: 0.25, Samples: 12}
	rep.Runs[7].RefuseShare = &RefuseShare{Mean: 0.05, Max: 0.08, Samples: 12}
	rep.Summarize()
	return rep
}

func (rep *HammerReport) cell(mode string, srv string) *HammerCell {
	for i := range rep.Cells {
		if c := &rep.Cells[i]; c.Mode == mode && c.Server == srv {
			return c
		}
	}
	return nil
}

// TestHammerSummarize: the ratios are paired by round (goodput over the
// capacity of the same round, p99 over the server's own reference of the
// same round), medians and ranges over the rounds; the targets and what
// went unanswered.
func TestHammerSummarize(t *testing.T) {
	rep := hammerFixture()
	if len(rep.Cells) != 3 {
		t.Fatalf("%d cells, want 3", len(rep.Cells))
	}
	near := func(s Spread, med, lo, hi float64) bool {
		return math.Abs(s.Median-med) < 1e-9 && math.Abs(s.Min-lo) < 1e-9 && math.Abs(s.Max-hi) < 1e-9
	}
	s := rep.cell(ModeInline, ServerSluiceShedDefault)
	// goodput 3800/4000 and 4000/5000; p99 2000/1000 and 5000/2000
	if s.Rounds != 2 || !near(s.GoodputRatio, 0.875, 0.8, 0.95) || !near(s.Capacity, 4500, 4000, 5000) || !near(s.Goodput, 3900, 3800, 4000) ||
		!near(s.P99Ratio, 2.25, 2, 2.5) || !near(s.RefP99, 1500, 1000, 2000) || !near(s.P99, 3500, 2000, 5000) {
		t.Errorf("sluice ratios: %+v", s)
	}
	if !near(s.Refused, 35000, 30000, 40000) || !near(s.RefusalP50, 15000, 10000, 20000) || !near(s.RefusalP99, 250_000, 200_000, 300_000) {
		t.Errorf("sluice refusals: %+v %+v %+v", s.Refused, s.RefusalP50, s.RefusalP99)
	}
	// a core over 3,800 + 40,000 and 4,000 + 30,000 answers a second
	if !near(s.ServerMicrosPerAnswer, (1e6/43800+1e6/34000)/2, 1e6/43800, 1e6/34000) || !near(s.ServerSysShare, 0.35, 0.3, 0.4) || !near(s.ServerUtil, 1, 1, 1) || s.PeakRSS.Max != 20480 {
		t.Errorf("sluice server: per answer %+v sys %+v util %+v rss %+v", s.ServerMicrosPerAnswer, s.ServerSysShare, s.ServerUtil, s.PeakRSS)
	}
	// the refusal target is met at exactly 250 ms; goodput is not
	if s.GoodputMet() || !s.P99Met() || !s.RefusalMet() || !s.AllAnswered || s.Met() || s.GeneratorBusy != 0.25 {
		t.Errorf("sluice targets: goodput %v p99 %v refusal %v answered %v met %v busy %v", s.GoodputMet(), s.P99Met(), s.RefusalMet(), s.AllAnswered, s.Met(), s.GeneratorBusy)
	}
	// the refusal share: the median of the runs' means, the largest reading
	if s.RefuseShareRounds != 2 || !near(s.RefuseShare, 0.17, 0.12, 0.22) || s.RefuseShareMax != 0.3 || s.RefuseShareMet() {
		t.Errorf("sluice refuse share: %d rounds %+v max %v met %v", s.RefuseShareRounds, s.RefuseShare, s.RefuseShareMax, s.RefuseShareMet())
	}
	n := rep.cell(ModeInline, ServerNet)
	if n.Rounds != 2 || !near(n.GoodputRatio, 1.125, 1, 1.25) || !near(n.P99Ratio, 900, 800, 1000) || n.AllAnswered || n.Dropped != 16 || n.ConnErrors != 2 ||
		!n.GoodputMet() || n.P99Met() || !n.RefusalMet() || n.Met() || n.Refused.Max != 0 {
		t.Errorf("net: %+v", n)
	}
	if n.RefuseShareRounds != 0 || !n.RefuseShareMet() {
		t.Errorf("net refuse share: %d rounds, met %v (unmeasured: not judged)", n.RefuseShareRounds, n.RefuseShareMet())
	}
	p := rep.cell(ModePool, ServerSluiceShedDefault)
	// round 1's capacity failed, round 2's hammer: no goodput ratio, the
	// p99 ratio of round 1 (1500/700)
	if p.Rounds != 0 || p.Failed != 1 || len(p.Errors) != 1 || !near(p.Goodput, 4000, 4000, 4000) || !near(p.P99Ratio, 1500.0/700, 1500.0/700, 1500.0/700) ||
		p.GoodputMet() || !p.P99Met() || p.Met() || !p.AllAnswered {
		t.Errorf("pool: %+v", p)
	}
	if p.RefuseShareRounds != 1 || !near(p.RefuseShare, 0.05, 0.05, 0.05) || p.RefuseShareMax != 0.08 || !p.RefuseShareMet() {
		t.Errorf("pool refuse share: %d rounds %+v max %v", p.RefuseShareRounds, p.RefuseShare, p.RefuseShareMax)
	}
	// the order of the configuration: modes, shapes, works, servers
	var order []string
	for _, c := range rep.Cells {
		order = append(order, c.Mode+"/"+c.Shape.String()+"/"+c.Server)
	}
	if got := strings.Join(order, " "); got != "inline/1000x8/sluice-shed-default inline/1000x8/net pool/64x64/sluice-shed-default" {
		t.Errorf("order %s", got)
	}
	// Work above 2 ms has no refusal target.
	slow := HammerCell{Work: 20 * time.Millisecond, RefusalP99: Spread{Median: 5e6}}
	fast := HammerCell{Work: 2 * time.Millisecond, RefusalP99: Spread{Median: 250_001}}
	if !slow.RefusalMet() || fast.RefusalMet() {
		t.Errorf("refusal target: 20 ms %v, 2 ms at 250.001 ms %v", slow.RefusalMet(), fast.RefusalMet())
	}
	// The refusal share's target is met at exactly 15%.
	at := HammerCell{RefuseShareRounds: 1, RefuseShare: Spread{Median: HammerRefuseShareTarget}}
	over := HammerCell{RefuseShareRounds: 1, RefuseShare: Spread{Median: 0.151}}
	if !at.RefuseShareMet() || over.RefuseShareMet() {
		t.Errorf("refuse share target: 15%% %v, 15.1%% %v", at.RefuseShareMet(), over.RefuseShareMet())
	}
}

// TestPromGauge reads a gauge from a Prometheus text exposition: past the
// comments and the metrics whose names only start with its name, with or
// without labels and a timestamp, the largest of several series.
func TestPromGauge(t *testing.T) {
	const text = `# HELP sluice_refuse_share_ratio The part of a loop's last busy window spent on frames it refused.
# TYPE sluice_refuse_share_ratio gauge
sluice_refuse_share_ratio_other 0.9
sluice_ration_holds_total 61
sluice_refuse_share_ratio 0.125
`
	if v, err := promGauge(text, RefuseShareMetric); err != nil || v != 0.125 {
		t.Errorf("plain: %v %v", v, err)
	}
	labelled := "sluice_refuse_share_ratio{engine=\"a}b\"} 0.25 1732780800000\r\nsluice_refuse_share_ratio{engine=\"c\"}\t0.5\n"
	if v, err := promGauge(labelled, RefuseShareMetric); err != nil || v != 0.5 {
		t.Errorf("labelled: %v %v", v, err)
	}
	for _, bad := range []string{
		"",
		"# TYPE sluice_refuse_share_ratio gauge\nsluice_refuse_share_ratio_other 0.9\n",
		"sluice_refuse_share_ratio x\n",
		"sluice_refuse_share_ratio\n",
		"sluice_refuse_share_ratio{engine=\"a\" 0.1\n",
		"sluice_refuse_share_ratio{} \n",
	} {
		if v, err := promGauge(bad, RefuseShareMetric); err == nil {
			t.Errorf("%q: %v", bad, v)
		}
	}
}

// TestRefuseShareOf: the mean and the largest of the readings; none is
// no figure.
func TestRefuseShareOf(t *testing.T) {
	if s := refuseShareOf(nil); s != nil {
		t.Errorf("no readings: %+v", s)
	}
	s := refuseShareOf([]float64{0.1, 0.4, 0.05, 0.25})
	if s == nil || math.Abs(s.Mean-0.2) > 1e-12 || s.Max != 0.4 || s.Samples != 4 {
		t.Errorf("%+v", s)
	}
	if s := refuseShareOf([]float64{0}); s == nil || s.Mean != 0 || s.Max != 0 || s.Samples != 1 {
		t.Errorf("a zero reading: %+v", s)
	}
}

func TestHammerMarkdown(t *testing.T) {
	rep := hammerFixture()
	md := rep.Markdown()
	for _, want := range []string{
		"# The hammer cells\n\nRun 2026-11-28 03:00 to 2026-11-28 03:30 on Test CPU (2 CPUs, kernel 6.1, go1.26)",
		"the generator as 2 processes, one per CPU of [1 2], the connections split evenly and the results merged; 2 rounds",
		"The **reference** is each server's p99 in an open loop at 0.5× that capacity",
		"time to a refusal p99 ≤ 250ms where the work is at most 2 ms",
		"the loop's time on refused frames ≤ 15% of its busy time, and every request answered",
		"\"Refusing\" is the sluice server's `sluice_refuse_share_ratio`",
		"read every 250ms in the window",
		"- **sluice-shed-default** meets every target in 0 of 2 cells (goodput in 0, p99 in 2, time to a refusal in 2, refusing in 1 of 2 measured, every request answered in 1).",
		"- **net** meets every target in 0 of 1 cells (goodput in 1, p99 in 0, time to a refusal in 1, every request answered in 0).",
		"## inline\n\n| C × D | work | server | goodput ÷ capacity | admitted p99 | p99 ÷ reference | refused/s | to a refusal p50 / p99 | refusing (share of busy) | unanswered | server CPU |\n|---|--:|---|--:|--:|--:|--:|--:|--:|--:|---|\n",
		"| 1,000 × 8 | 200 µs | sluice-shed-default | 88% (80%–95%) ✗ | 3.5 ms (2.0 ms–5.0 ms) | 2.2 (2.0–2.5) | 35k (30k–40k) | 15 ms / 250 ms (200 ms–300 ms) | 17% (12%–22%) ✗ · max 30% | 0 | 100% busy, 35% sys, 26.1 µs/answer |",
		"|  |  | net | 112% (100%–125%) | 450 ms (400 ms–500 ms) | 900 (800–1000) ✗ | 0 | – | – | 16 lost, 2 conns failed ✗ | – |",
		"## pool\n\nThe sluice servers only",
		"| 64 × 64 | 200 µs | sluice-shed-default | no capacity ✗ · 1 round failed ✗ | 1.5 ms (1.5 ms–1.5 ms) | 2.1 (2.1–2.1) | 20k (20k–20k) | 1.0 ms / 3.0 ms (3.0 ms–3.0 ms) | 5% (5%–5%) · max 8% | 0 | 100% busy, 41.7 µs/answer |",
		"| inline | 1,000 × 8 | 200 µs | sluice-shed-default | 4.5k (4k–5k) | 3.9k (3.8k–4k) | 1.5 ms (1.0 ms–2.0 ms) | 3.5 ms (2.0 ms–5.0 ms) | 20.0 |  |",
		"| pool | 64 × 64 | 200 µs | sluice-shed-default | – | 4k (4k–4k) | 700 µs (700 µs–700 µs) | 1.5 ms (1.5 ms–1.5 ms) | 0.0 | 1: connection refused |",
		"- hammer inline: sluice-shed-default: `cmd/echo -shed -work 200µs`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(md)
	}
	rep.Config.NoReference = true
	if md := rep.Markdown(); !strings.Contains(md, "No reference runs: the admitted p99 is not judged.") {
		t.Errorf("no reference: %s", md)
	}
	empty := &HammerReport{Config: HammerConfig{}.withDefaults()}
	if md := empty.Markdown(); !strings.Contains(md, "No cells measured.") {
		t.Errorf("empty report: %s", md)
	}
}

func TestWriteHammerReport(t *testing.T) {
	rep := hammerFixture()
	dir := t.TempDir()
	paths, err := WriteHammerReport(rep, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 || filepath.Base(paths[0]) != HammerJSON || filepath.Base(paths[1]) != HammerMarkdown {
		t.Fatalf("wrote %v", paths)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	var back HammerReport
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Runs) != len(rep.Runs) || back.Runs[4].Shape != (HammerShape{1000, 8}) || back.Runs[3].ServerSysShare != 0.3 ||
		back.Runs[3].RefuseShare == nil || *back.Runs[3].RefuseShare != *rep.Runs[3].RefuseShare || back.Runs[4].RefuseShare != nil ||
		fmt.Sprint(back.Config.Shapes) != "[1000x8 64x64]" {
		t.Errorf("round trip: %d runs, %+v", len(back.Runs), back.Runs[4])
	}
	back.Summarize()
	if fmt.Sprint(back.Cells) != fmt.Sprint(rep.Cells) {
		t.Errorf("cells after the round trip:\n%v\nwant\n%v", back.Cells, rep.Cells)
	}
	if _, err := os.Stat(paths[0] + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
}

func TestHammerTexts(t *testing.T) {
	for n, want := range map[int]string{0: "0", 64: "64", 999: "999", 1000: "1,000", 64000: "64,000", 1234567: "1,234,567", -1000: "-1,000"} {
		if got := groupThousands(n); got != want {
			t.Errorf("groupThousands(%d) %q, want %q", n, got, want)
		}
	}
	for us, want := range map[float64]string{850.4: "850 µs", 1234: "1.2 ms", 22_000: "22 ms", 1_250_000: "1.25 s"} {
		if got := usText(us); got != want {
			t.Errorf("usText(%v) %q, want %q", us, got, want)
		}
	}
	for i, tc := range []struct {
		cpus  []int
		procs int
		want  string
	}{
		{[]int{1}, 0, "one process on CPUs [1]"},
		{[]int{1, 2, 3}, 1, "one process on CPUs [1 2 3]"},
		{[]int{1, 2, 3}, 0, "3 processes, one per CPU of [1 2 3]"},
		{[]int{1}, 2, "2 processes sharing CPUs [1]"},
		{[]int{1, 2, 3, 4}, 2, "2 processes over CPUs [1 2 3 4]"},
	} {
		if got := generatorText(tc.cpus, tc.procs); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%d: %q, want %q…", i, got, tc.want)
		}
	}
}

// TestParseUserSys reads utime and stime past a command holding spaces
// and parentheses.
func TestParseUserSys(t *testing.T) {
	stat := "4242 (echo (x) y) S 1 4242 4242 0 -1 4194560 1234 0 0 0 731 96 0 0 20 0 3 0 12345 1000000 500 18446744073709551615\n"
	u, s, err := parseUserSys([]byte(stat))
	if err != nil || u != 731 || s != 96 {
		t.Fatalf("user %d sys %d: %v", u, s, err)
	}
	for _, bad := range []string{"", "4242 echo S 1", "4242 (echo) S 1 2 3", "4242 (echo) S 1 4242 4242 0 -1 4194560 1234 0 0 0 x 96"} {
		if _, _, err := parseUserSys([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if v := sysShare(100, 10, 170, 40); math.Abs(v-0.3) > 1e-12 {
		t.Errorf("sys share %v, want 0.3", v)
	}
	if sysShare(1, 1, 1, 1) != 0 || sysShare(5, 5, 4, 6) != 0 {
		t.Errorf("sys share of no time or a counter going back")
	}
}

// TestHammerOldReport re-renders a hammer.json written before the refusal
// share was read (no refuse_share in its runs or cells): sluice's cell
// shows "–" in the column and is not judged on it.
func TestHammerOldReport(t *testing.T) {
	const saved = `{"config": {"rounds": 1, "server_cpus": [0], "client_cpus": [1], "servers": ["sluice-shed-default"],
	"shapes": [{"conns": 64, "in_flight": 8}], "works_ns": [200000], "modes": ["inline"], "ref_fraction": 0.5, "size": 64,
	"warmup_ns": 1000000000, "duration_ns": 3000000000, "min_samples": 1000},
	"runs": [
	{"round": 1, "mode": "inline", "conns": 64, "work_ns": 200000, "server": "sluice-noshed", "kind": "capacity", "in_flight": 8, "window_sec": 3,
	 "load": {"msgs_per_sec": 4000, "latency": {"count": 12000, "p99_us": 20000}, "msgs": 12000}, "answered": true, "shape": {"conns": 64, "in_flight": 8}},
	{"round": 1, "mode": "inline", "conns": 64, "work_ns": 200000, "server": "sluice-shed-default", "kind": "hammer", "in_flight": 8, "window_sec": 3,
	 "load": {"msgs_per_sec": 3900, "rejected_per_sec": 1000, "latency": {"count": 11700, "p99_us": 1000}, "msgs": 11700, "rejected": 3000},
	 "answered": true, "server_sys_share": 0.2, "shape": {"conns": 64, "in_flight": 8}}],
	"cells": [{"mode": "inline", "shape": {"conns": 64, "in_flight": 8}, "work_ns": 200000, "server": "sluice-shed-default", "rounds": 1}]}`
	var rep HammerReport
	if err := json.Unmarshal([]byte(saved), &rep); err != nil {
		t.Fatal(err)
	}
	rep.Summarize()
	c := rep.cell(ModeInline, ServerSluiceShedDefault)
	if c == nil || c.RefuseShareRounds != 0 || !c.RefuseShareMet() || rep.Runs[1].RefuseShare != nil {
		t.Fatalf("cell %+v", c)
	}
	md := rep.Markdown()
	if !strings.Contains(md, "| 64 × 8 | 200 µs | sluice-shed-default | 98% (98%–98%) | 1.0 ms (1.0 ms–1.0 ms) | – | 1k (1k–1k) | 0 µs / – | – | 0 | – |") ||
		!strings.Contains(md, "time to a refusal in 1, every request answered in 1).") {
		t.Errorf("markdown:\n%s", md)
	}
}

// TestHammerGoAways: the connections closed with a final refusal and the
// redials (bench load -reconnect) are the most of any round, and the
// table's "unanswered" column names them.
func TestHammerGoAways(t *testing.T) {
	rep := hammerFixture()
	for i := range rep.Runs {
		r := &rep.Runs[i]
		if r.Kind == KindHammer && r.Server == ServerSluiceShedDefault && r.Mode == ModeInline {
			r.Load.GoAways, r.Load.Reconnects = 5*r.Round, 9*r.Round
		}
	}
	rep.Summarize()
	s := rep.cell(ModeInline, ServerSluiceShedDefault)
	if s.GoAways != 10 || s.Reconnects != 18 {
		t.Errorf("goaways %d, reconnects %d: want 10 and 18", s.GoAways, s.Reconnects)
	}
	if n := rep.cell(ModeInline, ServerNet); n.GoAways != 0 || n.Reconnects != 0 {
		t.Errorf("net: goaways %d, reconnects %d", n.GoAways, n.Reconnects)
	}
	if md := rep.Markdown(); !strings.Contains(md, "| 0; 10 conns closed with a final refusal, 18 redialled |") {
		t.Errorf("markdown:\n%s", md)
	}
}
