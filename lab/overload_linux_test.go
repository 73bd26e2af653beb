//go:build linux

package lab

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluicenet/sluice/bench"
)

func TestOverloadConfig(t *testing.T) {
	c := OverloadConfig{}.withDefaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if c.Factor != 5 || c.Work != 200*time.Microsecond || len(c.Parts) != 6 || c.Tenants != 10 || c.HeavyWeight != 10 || len(c.Servers) != 5 || c.Rounds != 3 {
		t.Errorf("defaults %+v", c)
	}
	for i, bad := range []OverloadConfig{
		{Servers: []string{"apache"}},
		{Parts: []string{"everything"}},
		{BacklogRejectAbove: 2},
		{Factor: -1},
		{Tenants: 1},
		{Tenants: 300},
		{CriticalFactor: 2, NormalFactor: 4},
		{ClientProcs: -1},
	} {
		b := bad.withDefaults()
		if err := b.Validate(); err == nil {
			t.Errorf("%d: %+v validated", i, bad)
		}
	}
}

func TestQuantileAndBacklogRun(t *testing.T) {
	if q := quantile([]float64{5, 1, 4, 2, 3}, 0.5); q != 3 {
		t.Errorf("median %v", q)
	}
	if q := quantile(nil, 0.99); q != 0 {
		t.Errorf("empty %v", q)
	}
	res := &ConnFloodResult{Records: []ConnRecord{
		{AnswerNanos: 1e6, Outcome: OutcomeServed},
		{AnswerNanos: 2e6, Outcome: OutcomeReject},
		{AnswerNanos: 4e6, Outcome: OutcomeReject},
		{AnswerNanos: 5e9, Outcome: OutcomeTimeout},
	}}
	r := backlogRun(1, res)
	if r.Explicit != 0.75 || r.Outcomes[OutcomeReject] != 2 || r.P99Millis["all"] != 5000 || r.P50Millis[OutcomeReject] != 2 {
		t.Errorf("backlog run %+v", r)
	}
}

func TestAcceptTimeline(t *testing.T) {
	t0 := int64(1e18)
	res := &ConnFloodResult{Records: []ConnRecord{
		{StartUnixNano: t0, AnswerNanos: 10e6, Outcome: OutcomeServed},
		{StartUnixNano: t0 + 20e6, AnswerNanos: 70e6, Outcome: OutcomeServed},
		{StartUnixNano: t0 + 30e6, AnswerNanos: 5e6, Outcome: OutcomeTimeout},
	}}
	acc, off := acceptTimeline(res, t0, 50)
	if len(acc) != 2 || acc[0] != 20 || acc[1] != 20 || off[0] != 60 || off[1] != 0 {
		t.Errorf("accepted %v offered %v (per second, 50 ms bins)", acc, off)
	}
}

// TestOverloadReportRender renders a small synthetic report: markdown
// tables for every part and an SVG gate chart.
func TestOverloadReportRender(t *testing.T) {
	rep := &OverloadReport{Config: OverloadConfig{}.withDefaults(), Commands: map[string]string{"goodput: net": "cmd/bench peer -kind net"}}
	g := GoodputCell{Server: "sluice-shed", Runs: []GoodputRun{{Round: 1,
		Peak:         &LoadBrief{MsgsPerSec: 4000},
		Unloaded:     &LoadBrief{Latency: bench.LatencySummary{P99Micros: 500}},
		Overload:     &LoadBrief{MsgsPerSec: 3600, RejectedPerSec: 16000, Latency: bench.LatencySummary{P99Micros: 5000}},
		GoodputRatio: 0.9, P99Ratio: 10}}}
	g.summarize()
	m := MemoryCell{Server: ServerSluiceBudget, BudgetBytes: 16 << 20, Runs: []MemoryRun{{BaselineRSSKiB: 10000, PeakRSSKiB: 40000, PeakQueuedKiB: 16000}}}
	m.summarize()
	bl := BacklogCell{Mode: "fast reject", Runs: []BacklogRun{backlogRun(1, &ConnFloodResult{Records: []ConnRecord{{AnswerNanos: 3e6, Outcome: OutcomeReject}}})}}
	bl.summarize()
	rep.Goodput, rep.Memory, rep.Backlog = []GoodputCell{g}, []MemoryCell{m}, []BacklogCell{bl}
	rep.Gate = &GateRun{BinMillis: 50, AcceptedPerSec: []float64{0, 1000, 0}, OfferedPerSec: []float64{1000, 1000, 1000},
		Samples: []GateSample{{AtMillis: 0, PolicyState: "open"}, {AtMillis: 60, PolicyState: "closed", ConnsOpen: 300}, {AtMillis: 120, PolicyState: "open"}}}
	md := rep.Markdown()
	for _, want := range []string{"| sluice-shed | 4.00k (4.00k–4.00k) |", "| 90% (90%–90%) |", "| sluice-budget | 16384 KiB | 16000", "| fast reject | 100% (100%–100%) |", "`cmd/bench peer -kind net`"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	var svg bytes.Buffer
	if err := rep.WriteGateChart(&svg); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(svg.Bytes(), []byte("<svg")) || !bytes.Contains(svg.Bytes(), []byte("Listen gate")) {
		t.Errorf("gate chart is not an SVG with its panels (%d bytes)", svg.Len())
	}
}

func TestMixLoads(t *testing.T) {
	p := priorityLoads(1000, 5, 0.3, 1, 1)
	if len(p) != 3 || p[0].Name != "critical" || p[0].RatePerSec != 300 || p[1].RatePerSec != 1000 || p[2].RatePerSec != 3700 || p[0].Conns != 8 {
		t.Errorf("priority loads %+v", p)
	}
	if p := priorityLoads(1000, 1.3, 0.3, 1, 25); len(p) != 2 || p[0].Conns != 200 || p[1].Conns != 400 || PriorityClasses[0].Conns != 8 {
		t.Errorf("nothing left for best-effort: %+v", p)
	}
	f := fairnessLoads(1900, 5, 10, 10, 8)
	if len(f) != 10 || f[0].Name != "heavy" || f[0].RatePerSec != 5000 || f[9].RatePerSec != 500 || f[0].LocalAddr != "127.0.0.2" || f[9].LocalAddr != "127.0.0.11" || f[9].Conns != 8 {
		t.Errorf("fairness loads %+v", f)
	}
	run := MixRun{Round: 1, Capacity: 1000, Loads: []MixLoad{
		{Name: "heavy", RatePerSec: 3000, Result: &LoadBrief{MsgsPerSec: 300, Intended: 9000, Msgs: 900, Missed: 2}},
		{Name: "light", RatePerSec: 300, Result: &LoadBrief{MsgsPerSec: 100, Intended: 900, Msgs: 300, Dropped: 1, Unfinished: 5}},
	}}
	run.finish()
	if run.Loads[0].ServedRatio != 0.1 || run.Loads[0].FairRatio != 1.5 || run.Loads[1].FairRatio != 0.5 {
		t.Errorf("finished run %+v", run.Loads)
	}
	c := MixCell{Label: "-shed", Runs: []MixRun{run}}
	c.summarize()
	if c.Goodput.Median != 0.4 {
		t.Errorf("goodput of the cell %v, want 0.4 (400 of 1,000 msg/s)", c.Goodput)
	}
	if len(c.Summary) != 2 || c.Summary[0].OfferedRatio.Median != 3 || c.Summary[0].Unanswered != 2 || c.Summary[1].Unanswered != 1 {
		t.Errorf("summary %+v", c.Summary)
	}
	rep := &OverloadReport{Config: OverloadConfig{}.withDefaults(), Priorities: []MixCell{c}, Fairness: []MixCell{c}}
	md := rep.Markdown()
	for _, want := range []string{"### Priorities at 5× capacity", "### Fairness between 10 tenants", "| -shed | heavy | 3.00 (3.00–3.00) | 10.0% (10.0%–10.0%) |", "| 1.50 (1.50–1.50) | 2 |", "together ÷ the round's capacity: -shed 40% (40%–40%)."} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "worker pool") {
		t.Errorf("inline mixed parts said to run on the worker pool:\n%s", md)
	}
	rep.Config.MixMode = ModePool
	if md := rep.Markdown(); strings.Count(md, "on the worker pool (`-work-mode pool`") != 2 {
		t.Errorf("pool mixed parts not said to run on the worker pool:\n%s", md)
	}
	bad := OverloadConfig{MixMode: "threads"}.withDefaults()
	if err := bad.Validate(); err == nil {
		t.Error("mix mode threads accepted")
	}
	bad = OverloadConfig{MixConnsFactor: 101}.withDefaults()
	if err := bad.Validate(); err == nil {
		t.Error("mix conns factor 101 accepted")
	}
}

// floodServer is a minimal length-prefixed echo server on loopback that
// answers every request with a reject frame when reject is set.
func floodServer(t *testing.T, reject bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			go func() {
				buf := make([]byte, 64<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 && reject {
						msg := []byte("-REJECT global 100") // a sluice reject frame
						c.Write(append([]byte{0, 0, 0, byte(len(msg))}, msg...))
					} else if n > 0 {
						c.Write(buf[:n])
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestConnFlood(t *testing.T) {
	for _, reject := range []bool{false, true} {
		addr := floodServer(t, reject)
		res, err := ConnFlood(context.Background(), ConnFloodConfig{Addr: addr, Codec: bench.CodecLength, Conns: 20, RatePerSec: 2000, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		want := OutcomeServed
		if reject {
			want = OutcomeReject
		}
		if o := res.Outcomes(); o[want] != 20 {
			t.Errorf("reject %v: outcomes %v", reject, o)
		}
	}
}

func TestPeerFlood(t *testing.T) {
	addr := floodServer(t, false)
	res, err := PeerFlood(context.Background(), PeerFloodConfig{Addr: addr, Codec: bench.CodecLength, Conns: 4, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.SentBytes <= 0 || res.Conns != 4 {
		t.Errorf("peer flood %+v", res)
	}
}
