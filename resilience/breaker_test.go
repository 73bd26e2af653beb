package resilience

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

type bop uint8

const (
	opCall   bop = iota // Allow at `at`, Record at at+lat with o
	opAllow             // Allow at `at`, keep the ticket
	opRecord            // Record the oldest kept ticket at `at` with o and lat
	opState             // only check the state
)

type bstep struct {
	at      time.Duration
	op      bop
	o       Outcome
	lat     time.Duration
	allowed bool // for opCall and opAllow
	state   State
}

func runBreakerSteps(t *testing.T, name string, cfg BreakerConfig, steps []bstep) []StateChange {
	t.Helper()
	var changes []StateChange
	cfg.OnStateChange = func(c StateChange) { changes = append(changes, c) }
	b, err := NewBreaker(cfg)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var kept []Ticket
	for i, s := range steps {
		switch s.op {
		case opCall, opAllow:
			tk, err := b.Allow(at(s.at))
			if (err == nil) != s.allowed {
				t.Fatalf("%s step %d at %v: Allow err = %v, want allowed=%v", name, i, s.at, err, s.allowed)
			}
			if err != nil && !errors.Is(err, ErrBreakerOpen) {
				t.Fatalf("%s step %d: err = %v", name, i, err)
			}
			if err == nil && s.op == opCall {
				b.Record(at(s.at+s.lat), tk, s.lat, s.o)
			}
			if err == nil && s.op == opAllow {
				kept = append(kept, tk)
			}
		case opRecord:
			b.Record(at(s.at), kept[0], s.lat, s.o)
			kept = kept[1:]
		}
		if got := b.State(); got != s.state {
			t.Fatalf("%s step %d at %v: state = %v, want %v", name, i, s.at, got, s.state)
		}
	}
	return changes
}

func TestBreakerTable(t *testing.T) {
	s, ms := time.Second, time.Millisecond
	F, S, I := OutcomeFailure, OutcomeSuccess, OutcomeIgnored
	C, O, H := StateClosed, StateOpen, StateHalfOpen
	base := BreakerConfig{
		Window: 10 * s, Buckets: 10, MinCalls: 4, MaxFailureRatio: 0.5,
		OpenTimeout: s, MaxOpenTimeout: 4 * s, OpenJitter: -1,
		HalfOpenProbes: 2, MinProbeSuccessRatio: 1, HalfOpenTimeout: 3 * s,
	}
	slow := base
	slow.SlowCallLatency, slow.MaxSlowRatio = 100*ms, 0.5
	tests := []struct {
		name  string
		cfg   BreakerConfig
		steps []bstep
		trans []State // sequence of To states
	}{
		{"trips after MinCalls, recovers through half-open", base, []bstep{
			{0, opCall, F, ms, true, C},
			{100 * ms, opCall, F, ms, true, C},
			{200 * ms, opCall, F, ms, true, C}, // 3 calls < MinCalls
			{300 * ms, opCall, S, ms, true, O}, // 4 calls, 75% failed
			{800 * ms, opCall, S, ms, false, O},
			{1300 * ms, opCall, S, 0, false, O}, // tripped at 301 ms: open until 1301 ms
			{1301 * ms, opAllow, 0, 0, true, H}, // open timeout passed: probe 1
			{1301 * ms, opAllow, 0, 0, true, H}, // probe 2
			{1301 * ms, opCall, S, 0, false, H}, // no third probe
			{1310 * ms, opRecord, S, 10 * ms, false, H},
			{1320 * ms, opRecord, S, 10 * ms, false, C},
			{1400 * ms, opCall, F, ms, true, C}, // fresh window: one failure is not enough
		}, []State{O, H, C}},
		{"failed probe reopens with a doubled timeout", base, []bstep{
			{0, opCall, F, 0, true, C}, {0, opCall, F, 0, true, C}, {0, opCall, F, 0, true, C}, {0, opCall, F, 0, true, O},
			{s, opCall, F, 0, true, O}, // probe fails: back to open until 1s+2s
			{2900 * ms, opCall, S, 0, false, O},
			{3 * s, opCall, F, 0, true, O}, // fails again: open until 3s+4s
			{6900 * ms, opCall, S, 0, false, O},
			{7 * s, opCall, F, 0, true, O},  // capped at 4s: open until 11s
			{11 * s, opCall, S, 0, true, H}, // probe 1 ok
			{11 * s, opCall, S, 0, true, C}, // probe 2 ok: closed, trips reset
			{11 * s, opCall, F, 0, true, C}, // new window
			{11 * s, opCall, F, 0, true, C}, //
			{11 * s, opCall, F, 0, true, C}, //
			{11 * s, opCall, F, 0, true, O}, // trip 1 again: 1 s
			{12 * s, opCall, S, 0, true, H}, //
		}, []State{O, H, O, H, O, H, O, H, C, O, H}},
		{"old failures slide out of the window", base, []bstep{
			{0, opCall, F, 0, true, C}, {0, opCall, F, 0, true, C}, {0, opCall, F, 0, true, C},
			{10 * s, opCall, S, 0, true, C}, // the 0 s bucket has slid out: 1 call
			{10 * s, opCall, S, 0, true, C},
			{10 * s, opCall, F, 0, true, C},
			{10 * s, opCall, F, 0, true, O}, // 4 calls, 2 failed
		}, []State{O}},
		{"time running backwards lands in the newest bucket", base, []bstep{
			{5 * s, opCall, F, 0, true, C}, {4 * s, opCall, F, 0, true, C}, {3 * s, opCall, S, 0, true, C},
			{5 * s, opCall, F, 0, true, O},
		}, []State{O}},
		{"late result from an old generation is ignored", base, []bstep{
			{0, opAllow, 0, 0, true, C}, // kept: generation 0
			{0, opCall, F, 0, true, C}, {0, opCall, F, 0, true, C}, {0, opCall, F, 0, true, C}, {0, opCall, S, 0, true, O},
			{s, opCall, S, 0, true, H},
			{s, opRecord, F, 0, false, H}, // generation 0 failure arrives late: ignored
			{s, opCall, S, 0, true, C},
		}, []State{O, H, C}},
		{"ignored outcomes: not counted, free the probe slot", base, []bstep{
			{0, opCall, I, 0, true, C}, {0, opCall, I, 0, true, C}, {0, opCall, I, 0, true, C}, {0, opCall, I, 0, true, C},
			{0, opCall, F, 0, true, C}, {0, opCall, F, 0, true, C}, {0, opCall, S, 0, true, C}, {0, opCall, F, 0, true, O},
			{s, opAllow, 0, 0, true, H}, {s, opAllow, 0, 0, true, H},
			{s, opCall, S, 0, false, H},
			{s, opRecord, I, 0, false, H}, // canceled probe: slot freed
			{s, opCall, S, 0, true, H},
			{s, opRecord, S, 0, false, C},
		}, []State{O, H, C}},
		{"lost probes: half-open gives up after its timeout", base, []bstep{
			{0, opCall, F, 0, true, C}, {0, opCall, F, 0, true, C}, {0, opCall, F, 0, true, C}, {0, opCall, F, 0, true, O},
			{s, opAllow, 0, 0, true, H}, {s, opAllow, 0, 0, true, H},
			{3900 * ms, opCall, S, 0, false, H},
			{4 * s, opCall, S, 0, false, O}, // 3 s in half-open without a verdict
			{5900 * ms, opCall, S, 0, false, O},
			{6 * s, opCall, S, 0, true, H}, // second trip: 2 s
		}, []State{O, H, O, H}},
		{"slow calls trip the breaker", slow, []bstep{
			{0, opCall, S, 150 * ms, true, C}, {0, opCall, S, 10 * ms, true, C},
			{0, opCall, S, 150 * ms, true, C}, {0, opCall, S, 10 * ms, true, O}, // 2 of 4 slow
			{2 * s, opCall, S, 150 * ms, true, O}, // slow probe counts as failed: open until 2.15 s + 2 s
			{4100 * ms, opCall, S, 10 * ms, false, O},
			{4150 * ms, opCall, S, 10 * ms, true, H},
			{4150 * ms, opCall, S, 99 * ms, true, C},
		}, []State{O, H, O, H, C}},
	}
	for _, tt := range tests {
		changes := runBreakerSteps(t, tt.name, tt.cfg, tt.steps)
		var got []State
		for i, c := range changes {
			got = append(got, c.To)
			if c.Generation != uint64(i+1) {
				t.Errorf("%s: change %d has generation %d", tt.name, i, c.Generation)
			}
			if i > 0 && c.From != changes[i-1].To {
				t.Errorf("%s: change %d from %v, previous went to %v", tt.name, i, c.From, changes[i-1].To)
			}
		}
		if !slices.Equal(got, tt.trans) {
			t.Errorf("%s: transitions %v, want %v", tt.name, got, tt.trans)
		}
	}
}

func TestBreakerOpenJitter(t *testing.T) {
	cfg := BreakerConfig{MinCalls: 1, OpenTimeout: 10 * time.Second, OpenJitter: 0.2, Rand: randHigh}
	b, _ := NewBreaker(cfg)
	tk, _ := b.Allow(t0)
	b.Record(t0, tk, 0, OutcomeFailure)
	snap := b.Snapshot(t0)
	if got := snap.OpenUntil.Sub(t0); got < 8*time.Second-time.Millisecond || got > 8*time.Second+time.Millisecond {
		t.Fatalf("open timeout with the highest jitter draw = %v, want about 8s", got)
	}
	cfg.Rand = randLow
	b, _ = NewBreaker(cfg)
	tk, _ = b.Allow(t0)
	b.Record(t0, tk, 0, OutcomeFailure)
	if got := b.Snapshot(t0).OpenUntil.Sub(t0); got != 10*time.Second {
		t.Fatalf("open timeout with the lowest jitter draw = %v, want 10s", got)
	}
}

func TestBreakerSnapshot(t *testing.T) {
	b, _ := NewBreaker(BreakerConfig{Window: 4 * time.Second, Buckets: 4, SlowCallLatency: time.Second})
	for i := range 6 {
		tk, _ := b.Allow(at(time.Duration(i) * time.Second))
		o := OutcomeSuccess
		if i%2 == 0 {
			o = OutcomeFailure
		}
		b.Record(at(time.Duration(i)*time.Second), tk, time.Duration(i)*300*time.Millisecond, o)
	}
	// Window now holds seconds 2..5: calls 2,3,4,5; failures 2,4; slow 4,5 (1.2 s, 1.5 s).
	got := b.Snapshot(at(5 * time.Second))
	if got.Calls != 4 || got.Failures != 2 || got.SlowCalls != 2 || got.State != StateClosed {
		t.Fatalf("snapshot = %+v", got)
	}
	if got := b.Snapshot(at(20 * time.Second)); got.Calls != 0 {
		t.Fatalf("window did not empty: %+v", got)
	}
}

func TestBreakerValidate(t *testing.T) {
	bad := []BreakerConfig{
		{Window: -1}, {Buckets: 2000}, {MinCalls: -1}, {MaxFailureRatio: 1.5}, {MaxSlowRatio: -0.5},
		{OpenBackoff: 0.5}, {OpenJitter: 1}, {OpenTimeout: time.Minute, MaxOpenTimeout: time.Second},
		{Window: 5, Buckets: 10},
	}
	for i, c := range bad {
		if _, err := NewBreaker(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%d: NewBreaker(%+v) = %v", i, c, err)
		}
	}
	if _, err := NewBreaker(BreakerConfig{OpenTimeout: 2 * time.Minute}); err != nil {
		t.Errorf("long OpenTimeout with default max: %v", err)
	}
}

// dependency is a simulated dependency's behaviour over time.
type dependency func(now time.Duration, r *rand.Rand) (Outcome, time.Duration)

// simulateBreaker drives a breaker with one call every interval from 0 to
// end against dep, and returns the transitions and the calls that reached
// the dependency between from and to. Records are delivered in time order, interleaved with
// later Allows when latency exceeds the interval.
func simulateBreaker(cfg BreakerConfig, dep dependency, interval, end, from, to time.Duration, seed uint64) ([]StateChange, int) {
	var changes []StateChange
	cfg.OnStateChange = func(c StateChange) { changes = append(changes, c) }
	cfg.Rand = rand.NewPCG(seed, 1)
	b, _ := NewBreaker(cfg)
	r := rand.New(rand.NewPCG(seed, 2))
	type pending struct {
		at  time.Duration
		tk  Ticket
		lat time.Duration
		o   Outcome
	}
	var queue []pending
	flush := func(now time.Duration) {
		slices.SortStableFunc(queue, func(a, b pending) int { return int(a.at - b.at) })
		for len(queue) > 0 && queue[0].at <= now {
			p := queue[0]
			queue = queue[1:]
			b.Record(at(p.at), p.tk, p.lat, p.o)
		}
	}
	reached := 0
	for now := time.Duration(0); now < end; now += interval {
		flush(now)
		tk, err := b.Allow(at(now))
		if err != nil {
			continue
		}
		if now >= from && now < to {
			reached++
		}
		o, lat := dep(now, r)
		queue = append(queue, pending{now + lat, tk, lat, o})
	}
	flush(end + time.Hour)
	return changes, reached
}

// TestBreakerScenarios injects failures and slowness into a simulated
// dependency (100 calls/s, simulated time) and measures how long the breaker
// takes to open after the fault starts and to close after it ends.
func TestBreakerScenarios(t *testing.T) {
	s, ms := time.Second, time.Millisecond
	faultFrom, faultTo := 20*s, 60*s
	failing := func(share float64) dependency {
		return func(now time.Duration, r *rand.Rand) (Outcome, time.Duration) {
			if now >= faultFrom && now < faultTo && r.Float64() < share {
				return OutcomeFailure, 5 * ms
			}
			return OutcomeSuccess, 5 * ms
		}
	}
	slowDep := func(now time.Duration, r *rand.Rand) (Outcome, time.Duration) {
		if now >= faultFrom && now < faultTo {
			return OutcomeSuccess, 300 * ms
		}
		return OutcomeSuccess, 5 * ms
	}
	fast := BreakerConfig{Window: 2 * s, Buckets: 20, OpenTimeout: 500 * ms, MaxOpenTimeout: 5 * s}
	fastSlow := fast
	fastSlow.SlowCallLatency, fastSlow.MaxSlowRatio = 100*ms, 0.5
	tests := []struct {
		name              string
		cfg               BreakerConfig
		dep               dependency
		maxOpen, maxClose time.Duration // generous bounds from the configuration
	}{
		{"default config, 100% failures", BreakerConfig{}, failing(1), 10 * s, 60*s + 5*s},
		{"default config, 80% failures", BreakerConfig{}, failing(0.8), 10 * s, 60*s + 5*s},
		{"2 s window, 100% failures", fast, failing(1), 2 * s, 5*s + s},
		{"2 s window, 80% failures", fast, failing(0.8), 2 * s, 5*s + s},
		{"2 s window, slow calls (300 ms > 100 ms)", fastSlow, slowDep, 2 * s, 5*s + s},
	}
	for i, tt := range tests {
		changes, reached := simulateBreaker(tt.cfg, tt.dep, 10*ms, 120*s, faultFrom, faultTo, uint64(i+1))
		var opened, closed time.Duration = -1, -1
		trips := 0
		for _, c := range changes {
			when := c.At.Sub(t0)
			if c.To == StateOpen {
				trips++
				if opened < 0 && when >= faultFrom {
					opened = when - faultFrom
				}
			}
			if c.To == StateClosed && when >= faultTo && closed < 0 {
				closed = when - faultTo
			}
		}
		if opened < 0 || opened > tt.maxOpen {
			t.Errorf("%s: time to open %v, want within %v", tt.name, opened, tt.maxOpen)
		}
		if closed < 0 || closed > tt.maxClose {
			t.Errorf("%s: time to close after recovery %v, want within %v", tt.name, closed, tt.maxClose)
		}
		if len(changes) > 0 && changes[len(changes)-1].To != StateClosed {
			t.Errorf("%s: breaker ended %v", tt.name, changes[len(changes)-1].To)
		}
		for _, c := range changes {
			if c.At.Sub(t0) < faultFrom {
				t.Errorf("%s: transition %v→%v at %v before the fault", tt.name, c.From, c.To, c.At.Sub(t0))
			}
		}
		outage := int((faultTo - faultFrom) / (10 * ms))
		t.Logf("%s: opened %v after the fault began, closed %v after it ended, %d trips; %d of the %d calls made during the 40 s fault reached the dependency",
			tt.name, opened, closed, trips, reached, outage)
	}
}
