package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol/envelope"
	"github.com/sluicenet/sluice/resilience"
)

// drawZero is a rand.Source whose every draw is 0: the throttle refuses
// whenever its probability is above 0.
type drawZero struct{}

func (drawZero) Uint64() uint64 { return 0 }

// manualClock is a Clock that moves only when the test advances it; its
// timers fire at once.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *manualClock) NewTimer(time.Duration) resilience.Timer {
	ch := make(chan time.Time, 1)
	ch <- c.Now()
	return firedTimer{ch}
}

type firedTimer struct{ ch chan time.Time }

func (t firedTimer) C() <-chan time.Time { return t.ch }
func (t firedTimer) Stop() bool          { return false }

func refusing(r *replier) { r.reject(envelope.StatusUnavailable, time.Millisecond, false) }

// TestThrottleOutcome: what the throttle counts as accepted, refused, or
// not at all.
func TestThrottleOutcome(t *testing.T) {
	status := func(st envelope.Status, rejected, noRetry bool) error {
		return &StatusError{Status: st, Rejected: rejected, NoRetry: noRetry}
	}
	cases := []struct {
		err               error
		counted, accepted bool
	}{
		{nil, true, true},
		{status(envelope.StatusUnavailable, true, false), true, false},
		{status(envelope.StatusTooManyRequests, true, false), true, false},
		{status(envelope.StatusUnavailable, false, false), true, false}, // a handler's 503
		{status(envelope.StatusInternal, false, true), true, false},     // no-retry: overloaded
		{status(envelope.StatusBadRequest, true, false), true, true},
		{status(envelope.StatusConflict, true, false), true, true},
		{status(envelope.StatusTimeout, false, false), true, true},
		{status(envelope.StatusInternal, false, false), true, true},
		{ErrTimeout, true, false},
		{syscall.ECONNREFUSED, true, false},
		{resilience.WithClass(syscall.ECONNRESET, resilience.ClassFailed, 0), true, false},
		{fmt.Errorf("%w: bad frame", ErrProtocol), true, false},
		{context.Canceled, false, false},
		{ErrClosed, false, false},
		{resilience.ErrBulkheadFull, false, false},
		{resilience.ErrBulkheadTimeout, false, false},
	}
	for _, tc := range cases {
		counted, accepted := throttleOutcome(tc.err)
		if counted != tc.counted || accepted != tc.accepted {
			t.Errorf("%v: counted %v accepted %v, want %v %v", tc.err, counted, accepted, tc.counted, tc.accepted)
		}
	}
}

// TestThrottleWindowSlidesClient: on the client's injected clock, the
// refusals leave the window after a window (30 s by default) and the next
// call goes to the server again.
func TestThrottleWindowSlidesClient(t *testing.T) {
	s := newEnvServer(t, refusing)
	clk := &manualClock{now: time.Now()}
	th, _ := resilience.NewThrottle(resilience.ThrottleConfig{Rand: drawZero{}})
	c := newClient(t, Config{Addr: s.addr(), Clock: clk, Throttle: th, Retry: resilience.RetryPolicy{MaxAttempts: 1}})
	for range 30 {
		_, _ = c.Do(context.Background(), &Request{Method: "GET"})
	}
	// drawZero refuses every attempt past the 20-request floor.
	if st := c.ThrottleStats(); st.Requests != 30 || st.LocalRefusals != 10 || len(s.requests()) != 20 {
		t.Fatalf("after 30 calls: %+v, server saw %d", st, len(s.requests()))
	}
	clk.Advance(resilience.DefaultThrottleWindow - time.Second)
	if _, err := c.Do(context.Background(), &Request{Method: "GET"}); !errors.Is(err, ErrThrottled) {
		t.Fatalf("within the window: %v, want ErrThrottled", err)
	}
	clk.Advance(time.Second)
	if st := c.ThrottleStats(); st != (resilience.ThrottleStats{Requests: 1, LocalRefusals: 1}) {
		t.Fatalf("a window on: %+v, want only the last refusal", st)
	}
	_, err := c.Do(context.Background(), &Request{Method: "GET"})
	var se *StatusError
	if !errors.As(err, &se) || len(s.requests()) != 21 {
		t.Fatalf("after the window slid: %v, server saw %d; want the call to reach it", err, len(s.requests()))
	}
}

// TestThrottleOff: NoThrottle sends every attempt and has no stats; a
// negative K counts without refusing.
func TestThrottleOff(t *testing.T) {
	s := newEnvServer(t, refusing)
	off := newClient(t, Config{Addr: s.addr(), NoThrottle: true, Retry: resilience.RetryPolicy{MaxAttempts: 1}})
	counting, _ := resilience.NewThrottle(resilience.ThrottleConfig{K: -1, Rand: drawZero{}})
	dry := newClient(t, Config{Addr: s.addr(), Throttle: counting, Retry: resilience.RetryPolicy{MaxAttempts: 1}})
	const n = 100
	for _, c := range []*Client{off, dry} {
		for range n {
			if _, err := c.Do(context.Background(), &Request{Method: "GET"}); errors.Is(err, ErrThrottled) {
				t.Fatalf("throttled with the throttle off: %v", err)
			}
		}
	}
	if got := len(s.requests()); got != 2*n {
		t.Fatalf("server saw %d, want %d", got, 2*n)
	}
	if off.Throttle() != nil || off.ThrottleStats() != (resilience.ThrottleStats{}) {
		t.Fatalf("NoThrottle: throttle %v stats %+v", off.Throttle(), off.ThrottleStats())
	}
	if st := dry.ThrottleStats(); st.Requests != n || st.Accepts != 0 || st.LocalRefusals != 0 || st.Probability != 0 {
		t.Fatalf("count-only stats %+v", st)
	}
	if dry.Throttle() != counting {
		t.Fatalf("Throttle() is not the configured one")
	}
}

// TestThrottleRetryBudget: a retry the throttle refuses ends the call (it
// is not retried), is counted by the retry budget as a local refusal that
// cost a token, and is not recorded by the breaker; the same through the
// retry path and the hedging path.
func TestThrottleRetryBudget(t *testing.T) {
	for _, hedged := range []bool{false, true} {
		t.Run(fmt.Sprintf("hedged=%v", hedged), func(t *testing.T) {
			s := newEnvServer(t, refusing)
			// No floor and every draw 0: the first attempt finds an empty
			// window and goes; the retry faces (1 - 0)/(1 + 1) and is refused.
			th, _ := resilience.NewThrottle(resilience.ThrottleConfig{MinRequests: -1, Rand: drawZero{}})
			budget, _ := resilience.NewBudget(resilience.BudgetConfig{})
			br, _ := resilience.NewBreaker(resilience.BreakerConfig{MinCalls: 2, MaxFailureRatio: 0.5})
			cfg := Config{Addr: s.addr(), Throttle: th, Budget: budget, Breaker: br, Retry: fast}
			if hedged {
				cfg.Hedge = &resilience.HedgeConfig{InitialDelay: time.Hour}
			}
			c := newClient(t, cfg)
			_, err := c.Do(context.Background(), &Request{Method: "GET", Idempotent: true})
			var re *resilience.RetryError
			if !errors.As(err, &re) || re.Attempts != 2 || !errors.Is(err, ErrThrottled) || !errors.Is(err, resilience.ErrOverloaded) {
				t.Fatalf("err = %v, want the retry refused locally after 2 attempts", err)
			}
			if n := budget.LocalRefusals(); n != 1 {
				t.Fatalf("budget LocalRefusals %d, want 1", n)
			}
			if tok := budget.Tokens(); tok != resilience.DefaultMaxTokens-2 {
				t.Fatalf("tokens %v, want %v: the server's refusal and the local one each cost one, nothing earned", tok, resilience.DefaultMaxTokens-2)
			}
			// A second call: its first attempt is refused locally too.
			if _, err := c.Do(context.Background(), &Request{Method: "GET", Idempotent: true}); !errors.Is(err, ErrThrottled) {
				t.Fatalf("second call: %v, want ErrThrottled", err)
			}
			if n := budget.LocalRefusals(); n != 2 || c.ThrottleStats().LocalRefusals != 2 {
				t.Fatalf("budget LocalRefusals %d, throttle %+v; want 2 and 2", n, c.ThrottleStats())
			}
			// The breaker saw one failure (the server's) of one call: had
			// it recorded the local refusals it would have tripped.
			if st := br.State(); st != resilience.StateClosed {
				t.Fatalf("breaker %v: it recorded the local refusals", st)
			}
			if n := len(s.requests()); n != 1 {
				t.Fatalf("server saw %d requests, want 1", n)
			}
		})
	}
}

// TestThrottleAccountingAllocs pins the client's per-attempt throttle
// accounting (ask, classify the result, record it) at zero allocations.
func TestThrottleAccountingAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates; make allocs runs this without it")
	}
	th, _ := resilience.NewThrottle(resilience.ThrottleConfig{Rand: rand.NewPCG(1, 2)})
	c, err := New(Config{Addr: "127.0.0.1:1", Throttle: th}) // dials on first use: never here
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	errs := []error{nil, &StatusError{Status: envelope.StatusUnavailable, Rejected: true}, ErrTimeout, context.Canceled}
	i := 0
	n := testing.AllocsPerRun(1000, func() {
		if c.admit() == nil {
			c.account(errs[i%len(errs)])
		}
		i++
	})
	if n != 0 {
		t.Fatalf("throttle accounting allocates %v times per attempt", n)
	}
	if p := c.ThrottleStats().Probability; math.IsNaN(p) || p <= 0 {
		t.Fatalf("probability %v after mostly refused attempts", p)
	}
}

// BenchmarkThrottleAccounting is the throttle's cost per attempt in the
// client: ask, classify, record.
func BenchmarkThrottleAccounting(b *testing.B) {
	c, err := New(Config{Addr: "127.0.0.1:1"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	refused := &StatusError{Status: envelope.StatusUnavailable, Rejected: true}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		if c.admit() == nil {
			if i%4 == 0 {
				c.account(refused)
			} else {
				c.account(nil)
			}
		}
		i++
	}
}
