package admission

import (
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"time"
)

// LagConfig configures a loop-lag signal. Lag is the time from readiness
// (epoll_wait returning) to handling; a loop that is behind its events
// shows lag before its queues show anything.
type LagConfig struct {
	// High and Low are the lag watermarks applied to the maximum lag seen
	// in each Window. Zero: 50ms and 10ms.
	High, Low time.Duration
	// MinDwell is the hysteresis dwell. Zero: 1s.
	MinDwell time.Duration
	// Window is how long lag samples are pooled (max) before the
	// hysteresis sees them. Zero: 100ms.
	Window time.Duration
}

func (c LagConfig) withDefaults() LagConfig {
	if c.High == 0 && c.Low == 0 {
		c.High, c.Low = 50*time.Millisecond, 10*time.Millisecond
	}
	if c.MinDwell == 0 {
		c.MinDwell = time.Second
	}
	if c.Window == 0 {
		c.Window = 100 * time.Millisecond
	}
	return c
}

func (c LagConfig) watermark() Watermark {
	return Watermark{High: float64(c.High), Low: float64(c.Low), MinDwell: c.MinDwell}
}

// Validate checks the configuration after defaults are applied.
func (c LagConfig) Validate() error {
	c = c.withDefaults()
	if c.Window < 0 {
		return fmt.Errorf("%w: negative lag Window", ErrBadConfig)
	}
	return c.watermark().Validate()
}

// LagSignal turns per-event loop lag into a hot/cold signal with
// hysteresis. Observe is called by the loop that owns it (not safe for
// concurrent Observe); Hot may be read from anywhere. Use NewLagSignal.
type LagSignal struct {
	h         Hysteresis
	window    int64
	windowEnd int64
	started   bool
	maxLag    int64
	hot       atomic.Bool
}

// NewLagSignal returns a cold signal.
func NewLagSignal(cfg LagConfig) (*LagSignal, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	h, _ := NewHysteresis(cfg.watermark())
	return &LagSignal{h: h, window: int64(cfg.Window)}, nil
}

// Observe records one lag sample at now and, at the end of each window,
// feeds the window's maximum to the hysteresis. It returns the state and
// whether this call changed it. Once per turn is enough: pass the turn's
// largest lag.
func (s *LagSignal) Observe(now time.Time, lag time.Duration) (hot, changed bool) {
	t := nanos(now)
	if !s.started {
		s.started, s.windowEnd = true, t+s.window
	}
	s.maxLag = max(s.maxLag, int64(lag))
	if t < s.windowEnd {
		return s.h.Hot(), false
	}
	hot, changed = s.h.Update(now, float64(s.maxLag))
	s.maxLag, s.windowEnd = 0, t+s.window
	s.hot.Store(hot)
	return hot, changed
}

// Hot reports the current state.
func (s *LagSignal) Hot() bool { return s.hot.Load() }

// CPUConfig configures a CPU signal.
type CPUConfig struct {
	// Watermark applies to the process's CPU utilisation as a fraction of
	// Procs cores (0..1). Zero: High 0.90, Low 0.75, MinDwell 2s.
	Watermark Watermark
	// Procs is the number of cores the process may use. Zero:
	// runtime.GOMAXPROCS(0) at construction.
	Procs int
	// MinInterval is the shortest span between two samples; calls in
	// between return the previous state. Zero: 100ms.
	MinInterval time.Duration
}

func (c CPUConfig) withDefaults() CPUConfig {
	if c.Watermark == (Watermark{}) {
		c.Watermark = Watermark{High: 0.90, Low: 0.75, MinDwell: 2 * time.Second}
	}
	if c.Procs == 0 {
		c.Procs = runtime.GOMAXPROCS(0)
	}
	if c.MinInterval == 0 {
		c.MinInterval = 100 * time.Millisecond
	}
	return c
}

// Validate checks the configuration after defaults are applied.
func (c CPUConfig) Validate() error {
	c = c.withDefaults()
	if c.Procs < 1 || c.MinInterval < 0 {
		return fmt.Errorf("%w: cpu Procs %d, MinInterval %v", ErrBadConfig, c.Procs, c.MinInterval)
	}
	return c.Watermark.Validate()
}

// CPUSignal turns process CPU time (from ProcessCPUTime, i.e. getrusage)
// into a utilisation with hysteresis. Update takes both the time and the CPU
// time as inputs, so it is a pure function of its inputs and tests are
// tables. Update is for one caller at a time; Hot and Utilisation may be read
// from anywhere. Use NewCPUSignal.
type CPUSignal struct {
	h       Hysteresis
	procs   float64
	every   int64
	started bool
	lastT   int64
	lastCPU time.Duration
	util    atomic.Uint64 // float64 bits
	hot     atomic.Bool
}

// NewCPUSignal returns a cold signal.
func NewCPUSignal(cfg CPUConfig) (*CPUSignal, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	h, _ := NewHysteresis(cfg.Watermark)
	return &CPUSignal{h: h, procs: float64(cfg.Procs), every: int64(cfg.MinInterval)}, nil
}

// Update feeds the process's cumulative CPU time (user + system) read at
// now. The first call only records a baseline.
func (s *CPUSignal) Update(now time.Time, cpu time.Duration) (hot, changed bool) {
	t := nanos(now)
	if !s.started {
		s.started, s.lastT, s.lastCPU = true, t, cpu
		return s.h.Hot(), false
	}
	dt := t - s.lastT
	if dt < s.every || dt <= 0 {
		return s.h.Hot(), false
	}
	u := float64(cpu-s.lastCPU) / (float64(dt) * s.procs)
	s.lastT, s.lastCPU = t, cpu
	s.util.Store(math.Float64bits(u))
	hot, changed = s.h.Update(now, u)
	s.hot.Store(hot)
	return hot, changed
}

// Hot reports the current state.
func (s *CPUSignal) Hot() bool { return s.hot.Load() }

// Utilisation returns the latest CPU utilisation (fraction of Procs cores).
func (s *CPUSignal) Utilisation() float64 { return math.Float64frombits(s.util.Load()) }

// HotMode is the operator's setting for the hot switch.
type HotMode uint32

// Hot switch modes.
const (
	// HotAuto: hot exactly when some signal is hot.
	HotAuto HotMode = iota
	// HotForceOn: always hot (serve the degraded path).
	HotForceOn
	// HotForceOff: never hot.
	HotForceOff
)

// Signal identifies one automatic input of the hot switch.
type Signal uint8

// Signals feeding the hot switch.
const (
	SignalGate Signal = iota
	SignalMemory
	SignalCPU
	SignalLag
	SignalCoDel
	numSignals
)

// HotSwitch tells handlers to serve a degraded path (skip an expensive
// enrichment, answer from cache). Handlers read Hot, which is one atomic
// load; the admission policy sets the automatic signals; an operator sets
// the mode at run time. It is safe for concurrent use; the zero value is in
// HotAuto with no signal hot.
type HotSwitch struct {
	mode    atomic.Uint32
	signals atomic.Uint32
}

// Hot reports whether handlers should take the degraded path.
func (h *HotSwitch) Hot() bool {
	switch HotMode(h.mode.Load()) {
	case HotForceOn:
		return true
	case HotForceOff:
		return false
	}
	return h.signals.Load() != 0
}

// SetMode sets the operator's mode.
func (h *HotSwitch) SetMode(m HotMode) { h.mode.Store(uint32(m)) }

// Mode returns the operator's mode.
func (h *HotSwitch) Mode() HotMode { return HotMode(h.mode.Load()) }

// SetSignal sets one automatic input.
func (h *HotSwitch) SetSignal(s Signal, hot bool) {
	if s >= numSignals {
		return
	}
	bit := uint32(1) << s
	for {
		old := h.signals.Load()
		next := old &^ bit
		if hot {
			next |= bit
		}
		if old == next || h.signals.CompareAndSwap(old, next) {
			return
		}
	}
}

// Signals returns the bit set of hot signals (bit i is Signal i).
func (h *HotSwitch) Signals() uint32 { return h.signals.Load() }
