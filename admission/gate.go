package admission

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// GateState is what the listen gate tells every loop to do with the
// listening socket.
type GateState uint32

// Gate states.
const (
	// GateOpen: the listen fd is in epoll; accept normally.
	GateOpen GateState = iota
	// GateClosed: global pressure crossed the high watermark; the listen fd
	// leaves epoll and the kernel backlog absorbs the flood.
	GateClosed
	// GatePaused: accept failed with EMFILE or ENFILE; the listen fd leaves
	// epoll until the pause ends, instead of spinning on a level that
	// accept cannot clear.
	GatePaused
	// GateRejecting: the gate would be closed, but the kernel accept queue
	// is nearly full, so the engine keeps accepting and answers each new
	// connection with an explicit reject and a close, rather than letting
	// the kernel drop handshakes silently (optional; see
	// GateConfig.RejectBacklogAbove).
	GateRejecting
	numGateStates
)

var gateNames = [numGateStates]string{"open", "closed", "paused", "rejecting"}

// String returns the state's name.
func (s GateState) String() string {
	if s < numGateStates {
		return gateNames[s]
	}
	return fmt.Sprintf("gate(%d)", uint32(s))
}

// Listening reports whether the listen fd should be in epoll.
func (s GateState) Listening() bool { return s == GateOpen || s == GateRejecting }

// GateConfig configures the listen gate.
type GateConfig struct {
	// Watermark applies to the maximum normalised global pressure
	// (GlobalBudgets.Pressure). Zero value: High 0.95, Low 0.80,
	// MinDwell 500ms.
	Watermark Watermark
	// FDPause is how long EMFILE/ENFILE keep the listener out of epoll.
	// Zero: 100ms (HAProxy's choice).
	FDPause time.Duration
	// RejectBacklogAbove, in (0, 1], is the accept-queue fill ratio
	// (depth/limit, from TCP_INFO on the listening socket) above which a
	// closed gate switches to GateRejecting. Zero disables this mode.
	RejectBacklogAbove float64
	// OnChange, if set, is called once per transition, after the gate's
	// lock is released, with the pressure that caused it (NaN for a
	// transition caused by an accept error or the end of a pause). It must
	// not block: log and return.
	OnChange func(from, to GateState, pressure float64)
}

func (c GateConfig) withDefaults() GateConfig {
	if c.Watermark == (Watermark{}) {
		c.Watermark = Watermark{High: 0.95, Low: 0.80, MinDwell: 500 * time.Millisecond}
	}
	if c.FDPause == 0 {
		c.FDPause = 100 * time.Millisecond
	}
	return c
}

// Validate checks the configuration after defaults are applied.
func (c GateConfig) Validate() error {
	c = c.withDefaults()
	if err := c.Watermark.Validate(); err != nil {
		return err
	}
	if c.FDPause < 0 || c.RejectBacklogAbove < 0 || c.RejectBacklogAbove > 1 {
		return fmt.Errorf("%w: gate FDPause %v, RejectBacklogAbove %v", ErrBadConfig, c.FDPause, c.RejectBacklogAbove)
	}
	return nil
}

// GateStats counts the gate's transitions.
type GateStats struct {
	// State is the current state.
	State GateState
	// Transitions counts every state change.
	Transitions uint64
	// Closes counts entries into GateClosed; Opens counts entries into
	// GateOpen; Pauses counts EMFILE/ENFILE pauses begun; Rejecting counts
	// entries into GateRejecting.
	Closes, Opens, Pauses, Rejecting uint64
	// Pressure is the latest pressure fed to Update.
	Pressure float64
}

// GatePolicy turns the maximum global pressure, accept errors and the accept
// queue's fill into one GateState. State is an atomic read, cheap enough for
// every loop to check once per turn; Update and AcceptError take a lock but
// are called per sample and per failed accept, never per message. It is safe
// for concurrent use. Build it with NewGatePolicy.
type GatePolicy struct {
	cfg GateConfig

	mu          sync.Mutex
	h           Hysteresis
	pauseUntil  int64
	paused      bool
	backlogHigh bool
	pressure    float64

	state                                          atomic.Uint32
	transitions, closes, opens, pauses, rejectings atomic.Uint64
}

// NewGatePolicy returns an open gate.
func NewGatePolicy(cfg GateConfig) (*GatePolicy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	h, _ := NewHysteresis(cfg.Watermark)
	return &GatePolicy{cfg: cfg, h: h}, nil
}

// State returns the current state. It is one atomic load.
func (g *GatePolicy) State() GateState { return GateState(g.state.Load()) }

// Update feeds the maximum normalised pressure observed at now and returns
// the resulting state and whether it changed. It also ends an EMFILE pause
// whose time is up, so the engine calls it (or Admitter.Tick) from a timer
// armed for the pause AcceptError returned.
func (g *GatePolicy) Update(now time.Time, pressure float64) (GateState, bool) {
	g.mu.Lock()
	g.pressure = pressure
	g.h.Update(now, pressure)
	from, to, changed := g.resolveLocked(nanos(now))
	g.mu.Unlock()
	g.notify(from, to, changed, pressure)
	return to, changed
}

// AcceptError feeds an accept error. EMFILE and ENFILE (bare, wrapped, or in
// an *os.SyscallError) pause the gate for FDPause and return (pause, true);
// the engine removes the listener from epoll and calls Update when the pause
// has elapsed. Any other error returns (0, false) and changes nothing.
func (g *GatePolicy) AcceptError(now time.Time, err error) (time.Duration, bool) {
	if !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ENFILE) {
		return 0, false
	}
	g.mu.Lock()
	t := nanos(now)
	g.pauseUntil = t + int64(g.cfg.FDPause)
	if !g.paused {
		g.paused = true
		g.pauses.Add(1)
	}
	from, to, changed := g.resolveLocked(t)
	g.mu.Unlock()
	g.notify(from, to, changed, nanFloat)
	return g.cfg.FDPause, true
}

// Backlog feeds the listener's accept-queue depth and limit (TCP_INFO
// tcpi_unacked and tcpi_sacked on a listening socket). It takes effect at the
// next Update. It is ignored when RejectBacklogAbove is zero.
func (g *GatePolicy) Backlog(depth, limit uint32) {
	if g.cfg.RejectBacklogAbove == 0 || limit == 0 {
		return
	}
	high := float64(depth)/float64(limit) >= g.cfg.RejectBacklogAbove
	g.mu.Lock()
	g.backlogHigh = high
	g.mu.Unlock()
}

// Stats returns the transition counters.
func (g *GatePolicy) Stats() GateStats {
	g.mu.Lock()
	p := g.pressure
	g.mu.Unlock()
	return GateStats{
		State:       g.State(),
		Transitions: g.transitions.Load(),
		Closes:      g.closes.Load(),
		Opens:       g.opens.Load(),
		Pauses:      g.pauses.Load(),
		Rejecting:   g.rejectings.Load(),
		Pressure:    p,
	}
}

// resolveLocked recomputes the state from the pause, the hysteresis and the
// backlog, and counts a transition. The pause wins over pressure: a process
// out of file descriptors cannot accept whatever the pressure.
func (g *GatePolicy) resolveLocked(t int64) (from, to GateState, changed bool) {
	if g.paused && t >= g.pauseUntil {
		g.paused = false
	}
	switch {
	case g.paused:
		to = GatePaused
	case g.h.Hot() && g.backlogHigh:
		to = GateRejecting
	case g.h.Hot():
		to = GateClosed
	default:
		to = GateOpen
	}
	from = GateState(g.state.Load())
	if from == to {
		return from, to, false
	}
	g.state.Store(uint32(to))
	g.transitions.Add(1)
	switch to {
	case GateOpen:
		g.opens.Add(1)
	case GateClosed:
		g.closes.Add(1)
	case GateRejecting:
		g.rejectings.Add(1)
	}
	return from, to, true
}

func (g *GatePolicy) notify(from, to GateState, changed bool, pressure float64) {
	if changed && g.cfg.OnChange != nil {
		g.cfg.OnChange(from, to, pressure)
	}
}
