package admission

import (
	"sync"
	"testing"
	"time"
)

func TestLagSignalTable(t *testing.T) {
	s, err := NewLagSignal(LagConfig{High: 50 * ms, Low: 10 * ms, MinDwell: 200 * ms, Window: 100 * ms})
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		at      time.Duration
		lag     time.Duration
		hot     bool
		changed bool
	}
	steps := []step{
		{0, 1 * ms, false, false},
		{50 * ms, 80 * ms, false, false}, // pooled, window not over
		{100 * ms, 1 * ms, true, true},   // window max 80ms >= 50ms
		{150 * ms, 1 * ms, true, false},
		{200 * ms, 1 * ms, true, false}, // window max 1ms: below Low, dwell starts
		{300 * ms, 20 * ms, true, false},
		{400 * ms, 1 * ms, true, false}, // max 20ms > Low restarted the dwell at 300ms... then 1ms at 400ms
		{500 * ms, 1 * ms, true, false},
		{600 * ms, 1 * ms, false, true}, // 200ms below Low since 400ms
	}
	for i, st := range steps {
		hot, changed := s.Observe(at(st.at), st.lag)
		if hot != st.hot || changed != st.changed || s.Hot() != hot {
			t.Errorf("step %d (t=%v lag=%v): hot=%v changed=%v, want %v %v", i, st.at, st.lag, hot, changed, st.hot, st.changed)
		}
	}
}

func TestCPUSignalTable(t *testing.T) {
	s, err := NewCPUSignal(CPUConfig{Watermark: Watermark{High: 0.9, Low: 0.5, MinDwell: time.Second}, Procs: 2, MinInterval: 100 * ms})
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		at   time.Duration
		cpu  time.Duration // cumulative process CPU time
		util float64
		hot  bool
	}
	steps := []step{
		{0, 0, 0, false},                                          // baseline
		{50 * ms, 100 * ms, 0, false},                             // too soon: ignored
		{100 * ms, 100 * ms, 0.5, false},                          // 100ms CPU over 100ms × 2 cores
		{200 * ms, 290 * ms, 0.95, true},                          // 190ms over 200ms of capacity
		{1200 * ms, 290*ms + 400*ms, 0.2, true},                   // below Low: dwell starts
		{2200 * ms, 290*ms + 400*ms + 600*ms, 0.3, false},         // 1s below Low
		{2300 * ms, 290*ms + 400*ms + 600*ms + 200*ms, 1.0, true}, // saturated
	}
	for i, st := range steps {
		hot, _ := s.Update(at(st.at), st.cpu)
		if hot != st.hot || (i > 1 && s.Utilisation() != st.util) {
			t.Errorf("step %d: hot=%v util=%v, want %v %v", i, hot, s.Utilisation(), st.hot, st.util)
		}
	}
}

func TestProcessCPUTimeAdvances(t *testing.T) {
	a, err := ProcessCPUTime()
	if err != nil {
		t.Fatal(err)
	}
	// Burn a little CPU; the rusage clock has tick granularity, so loop
	// until it moves (bounded).
	deadline := time.Now().Add(2 * time.Second)
	x := 0
	for time.Now().Before(deadline) {
		for i := range 100_000 {
			x += i
		}
		if b, _ := ProcessCPUTime(); b > a {
			return
		}
	}
	t.Fatalf("CPU time did not advance past %v (x=%d)", a, x)
}

func TestHotSwitch(t *testing.T) {
	var h HotSwitch
	if h.Hot() || h.Mode() != HotAuto {
		t.Fatal("zero value is hot")
	}
	h.SetSignal(SignalCPU, true)
	h.SetSignal(SignalLag, true)
	if !h.Hot() || h.Signals() != 1<<SignalCPU|1<<SignalLag {
		t.Fatalf("signals %b", h.Signals())
	}
	h.SetMode(HotForceOff)
	if h.Hot() {
		t.Fatal("forced off but hot")
	}
	h.SetMode(HotAuto)
	h.SetSignal(SignalCPU, false)
	h.SetSignal(SignalLag, false)
	if h.Hot() {
		t.Fatal("no signal but hot")
	}
	h.SetMode(HotForceOn)
	if !h.Hot() {
		t.Fatal("forced on but cold")
	}
	h.SetSignal(Signal(99), true) // ignored
	// Concurrent setters of different signals do not lose each other's bits.
	h.SetMode(HotAuto)
	var wg sync.WaitGroup
	for s := range numSignals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				h.SetSignal(s, true)
				h.SetSignal(s, false)
			}
			h.SetSignal(s, true)
		}()
	}
	wg.Wait()
	if h.Signals() != 1<<numSignals-1 {
		t.Fatalf("lost bits: %b", h.Signals())
	}
}
