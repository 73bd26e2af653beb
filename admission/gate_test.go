package admission

import (
	"errors"
	"fmt"
	"math"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestGateTable(t *testing.T) {
	type step struct {
		at       time.Duration
		pressure float64 // NaN: feed an EMFILE instead
		want     GateState
		changed  bool
	}
	emfile := math.NaN()
	cfg := GateConfig{Watermark: Watermark{High: 0.9, Low: 0.6, MinDwell: 200 * ms}, FDPause: 100 * ms}
	steps := []step{
		{0, 0.5, GateOpen, false},
		{10 * ms, 0.95, GateClosed, true},
		{20 * ms, 0.7, GateClosed, false},  // in the band
		{30 * ms, 0.5, GateClosed, false},  // below low: dwell starts
		{229 * ms, 0.5, GateClosed, false}, // 199ms below
		{230 * ms, 0.5, GateOpen, true},    // 200ms below
		{240 * ms, emfile, GatePaused, true},
		{300 * ms, 0.1, GatePaused, false}, // pause runs to 340ms
		{340 * ms, 0.1, GateOpen, true},
		{350 * ms, 1.0, GateClosed, true},
		{360 * ms, emfile, GatePaused, true}, // pause beats pressure
		{460 * ms, 1.0, GateClosed, true},    // pause over, still hot
	}
	g, err := NewGatePolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		var got GateState
		var changed bool
		if math.IsNaN(s.pressure) {
			pause, ok := g.AcceptError(at(s.at), os.NewSyscallError("accept4", syscall.EMFILE))
			if !ok || pause != 100*ms {
				t.Fatalf("step %d: AcceptError = %v, %v", i, pause, ok)
			}
			got, changed = g.State(), true
		} else {
			got, changed = g.Update(at(s.at), s.pressure)
		}
		if got != s.want || changed != s.changed || g.State() != got {
			t.Errorf("step %d (t=%v p=%v): got %v changed=%v, want %v %v", i, s.at, s.pressure, got, changed, s.want, s.changed)
		}
	}
	st := g.Stats()
	want := GateStats{State: GateClosed, Transitions: 7, Closes: 3, Opens: 2, Pauses: 2, Pressure: 1.0}
	if st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
}

func TestGateAcceptErrors(t *testing.T) {
	g, _ := NewGatePolicy(GateConfig{})
	for _, err := range []error{syscall.ENFILE, fmt.Errorf("wrapped: %w", syscall.EMFILE), &os.SyscallError{Syscall: "accept4", Err: syscall.ENFILE}} {
		if _, ok := g.AcceptError(t0, err); !ok {
			t.Errorf("%v: not treated as fd exhaustion", err)
		}
	}
	for _, err := range []error{syscall.ECONNABORTED, errors.New("x"), nil} {
		if _, ok := g.AcceptError(t0, err); ok {
			t.Errorf("%v: treated as fd exhaustion", err)
		}
	}
	if st := g.Stats(); st.Pauses != 1 || st.State != GatePaused {
		// Three EMFILE/ENFILE inside one pause extend it but count once.
		t.Errorf("stats %+v", st)
	}
	// Default pause is 100ms.
	if s, _ := g.Update(at(99*ms), 0); s != GatePaused {
		t.Errorf("at 99ms: %v", s)
	}
	if s, _ := g.Update(at(100*ms), 0); s != GateOpen {
		t.Errorf("at 100ms: %v", s)
	}
}

func TestGateRejectingWhenBacklogNearlyFull(t *testing.T) {
	g, _ := NewGatePolicy(GateConfig{Watermark: Watermark{High: 0.9, Low: 0.5}, RejectBacklogAbove: 0.8})
	g.Update(t0, 1)
	g.Backlog(70, 100)
	if s, _ := g.Update(at(ms), 1); s != GateClosed || s.Listening() {
		t.Fatalf("backlog 70%%: %v", s)
	}
	g.Backlog(85, 100)
	if s, changed := g.Update(at(2*ms), 1); s != GateRejecting || !changed || !s.Listening() {
		t.Fatalf("backlog 85%%: %v %v", s, changed)
	}
	g.Backlog(10, 100)
	if s, _ := g.Update(at(3*ms), 1); s != GateClosed {
		t.Fatalf("backlog drained: %v", s)
	}
	if s, _ := g.Update(at(4*ms), 0.1); s != GateOpen {
		t.Fatalf("pressure gone: %v", s)
	}
	if st := g.Stats(); st.Rejecting != 1 || st.Closes != 2 {
		t.Errorf("stats %+v", st)
	}
}

func TestGateOnChangeOncePerTransition(t *testing.T) {
	var log []string
	g, _ := NewGatePolicy(GateConfig{
		Watermark: Watermark{High: 0.9, Low: 0.5},
		OnChange:  func(from, to GateState, p float64) { log = append(log, fmt.Sprintf("%v->%v", from, to)) },
	})
	for i, p := range []float64{0.1, 0.95, 0.99, 0.97, 0.4, 0.3, 0.95} {
		g.Update(at(time.Duration(i)*ms), p)
	}
	if got := fmt.Sprint(log); got != "[open->closed closed->open open->closed]" {
		t.Errorf("log %s", got)
	}
}

func TestGateConfigValidate(t *testing.T) {
	for i, c := range []GateConfig{
		{Watermark: Watermark{High: 0.5, Low: 0.9}},
		{FDPause: -1},
		{RejectBacklogAbove: 1.5},
	} {
		if _, err := NewGatePolicy(c); err == nil {
			t.Errorf("%d: accepted %+v", i, c)
		}
	}
}

func TestBudgetsPressure(t *testing.T) {
	b := GlobalBudgets{MaxConns: 100, MaxInflightReqs: 1000, MaxQueuedBytes: 1 << 20}
	cases := []struct {
		l     Load
		mem   int64
		p     float64
		worst Resource
		cap   bool
	}{
		{Load{}, 0, 0, ResourceNone, false},
		{Load{Conns: 50, InflightReqs: 100}, 0, 0.5, ResourceConns, false},
		{Load{Conns: 10, InflightReqs: 900}, 0, 0.9, ResourceInflight, false},
		{Load{QueuedBytes: 1 << 20}, 0, 1, ResourceQueuedBytes, true},
		{Load{InflightReqs: 1000}, 0, 1, ResourceInflight, true},
		{Load{Conns: 10, MemoryBytes: 800}, 1000, 0.8, ResourceMemory, false},
		{Load{Conns: 200}, 0, 2, ResourceConns, false}, // conns are the gate's business
	}
	for i, c := range cases {
		p, w := b.Pressure(c.l, c.mem)
		if p != c.p || w != c.worst || b.AtCap(c.l) != c.cap {
			t.Errorf("%d: %+v: got %v %v cap=%v, want %v %v %v", i, c.l, p, w, b.AtCap(c.l), c.p, c.worst, c.cap)
		}
	}
	if (GlobalBudgets{MaxConns: -1}).Validate() == nil {
		t.Error("negative budget accepted")
	}
	if (GlobalBudgets{MemoryLimitBytes: -1}).ResolveMemoryLimit() != 0 || (GlobalBudgets{MemoryLimitBytes: 5}).ResolveMemoryLimit() != 5 {
		t.Error("ResolveMemoryLimit")
	}
}

func TestConnBudgetsCheck(t *testing.T) {
	c := ConnBudgets{
		QueuedBytes: Budget{Max: 1000, High: 600, Low: 200},
		QueuedMsgs:  Budget{Max: 100, High: 50, Low: 10},
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		bytes, msgs int64
		paused      bool
		want        ConnAction
	}{
		{100, 5, false, ConnKeep},
		{600, 5, false, ConnPauseRead},
		{100, 50, false, ConnPauseRead},
		{400, 5, true, ConnKeep}, // between watermarks: stay paused
		{200, 10, true, ConnResumeRead},
		{200, 11, true, ConnKeep},
		{1001, 0, false, ConnClose},
		{0, 101, true, ConnClose},
	}
	for i, k := range cases {
		if got := c.Check(k.bytes, k.msgs, k.paused); got != k.want {
			t.Errorf("%d: Check(%d, %d, %v) = %v, want %v", i, k.bytes, k.msgs, k.paused, got, k.want)
		}
	}
	// Only a message budget: bytes never block resuming.
	m := ConnBudgets{QueuedMsgs: Budget{High: 4, Low: 1}}
	if got := m.Check(1<<20, 1, true); got != ConnResumeRead {
		t.Errorf("msgs-only resume: %v", got)
	}
	if (Budget{Max: 10, High: 20}).Validate() == nil || (Budget{High: 5, Low: 6}).Validate() == nil {
		t.Error("bad budgets accepted")
	}
}

func TestMemorySamplerRateLimited(t *testing.T) {
	m := NewMemorySampler(100 * ms)
	v1, fresh := m.Sample(t0)
	if !fresh || v1 <= 0 {
		t.Fatalf("first sample %d fresh=%v", v1, fresh)
	}
	if _, fresh := m.Sample(at(99 * ms)); fresh {
		t.Error("sampled again within the interval")
	}
	if _, fresh := m.Sample(at(100 * ms)); !fresh {
		t.Error("did not sample after the interval")
	}
	i := 0
	if n := testing.AllocsPerRun(100, func() { i++; m.Sample(at(time.Duration(i) * time.Second)) }); n != 0 {
		t.Errorf("Sample allocates %v", n)
	}
}
