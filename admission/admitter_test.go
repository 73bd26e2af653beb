package admission

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fakeQuota scripts a TenantQuota.
type fakeQuota struct {
	d     Decision
	err   error
	calls int
}

func (f *fakeQuota) AllowN(context.Context, time.Time, []byte, int64) (Decision, error) {
	f.calls++
	return f.d, f.err
}

// newTestAdmitter builds an Admitter with scripted memory and binds it to
// one loop, or to bind when given.
func newTestAdmitter(t *testing.T, cfg Config, bind ...Binding) (*Admitter, *int64) {
	t.Helper()
	mem := new(int64)
	cfg.MemoryBytes = func(time.Time) int64 { return *mem }
	a, err := NewAdmitter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := Binding{Loops: 1}
	if len(bind) > 0 {
		b = bind[0]
	}
	if err := a.Bind(b); err != nil {
		t.Fatal(err)
	}
	return a, mem
}

func TestAdmitterOrder(t *testing.T) {
	q := &fakeQuota{d: Decision{Allowed: true}}
	store, _ := NewMemoryStore(StoreConfig{})
	a, mem := newTestAdmitter(t, Config{
		MaxInflightReqs: 100, MemoryLimitBytes: 1000,
		Memory:         Watermark{High: 0.9, Low: 0.5},
		SampleInterval: 10 * ms,
		Tenants:        q,
		Conn:           ConnBudgets{MaxPipelinedReqs: 4},
		Idempotency:    store,
	})
	l := a.Loop(0)
	f := &Frame{Tenant: []byte("t"), Payload: []byte("p")}
	admit := func(when time.Duration) Verdict { return l.Admit(bg, at(when), f) }

	if v := admit(0); !v.Admit || q.calls != 1 {
		t.Fatalf("plain frame: %+v calls=%d", v, q.calls)
	}
	// 3. connection queue, after the tenant was charged.
	f.ConnPending = 4
	if v := admit(0); v.Admit || v.Reason != ReasonQueue || v.RetryAfter != 10*ms || q.calls != 2 {
		t.Fatalf("pipeline full: %+v calls=%d", v, q.calls)
	}
	f.ConnPending = 0
	// 2. tenant refusal carries the quota's exact retry-after, and the
	// store is not consulted.
	q.d = Decision{RetryAfter: 123 * ms}
	f.IdempotencyKey = []byte("idem")
	if v := admit(0); v.Admit || v.Reason != ReasonTenant || v.RetryAfter != 123*ms || f.Claimed {
		t.Fatalf("tenant: %+v claimed=%v", v, f.Claimed)
	}
	q.d = Decision{Allowed: true}
	// 4. idempotency hook.
	if v := admit(0); !v.Admit || !f.Claimed || f.Claim.State != ClaimNew {
		t.Fatalf("claim: %+v %+v", v, f.Claim)
	}
	if v := admit(0); !v.Admit || f.Claim.State != ClaimInProgress {
		t.Fatalf("duplicate: %+v %+v", v, f.Claim)
	}
	f.IdempotencyKey = nil
	// 1. global caps come first and cost nothing downstream.
	calls := q.calls
	l.Load.InflightReqs = 100
	l.Publish()
	a.Tick(at(10 * ms))
	if v := admit(10 * ms); v.Admit || v.Reason != ReasonGlobal || v.RetryAfter != 100*ms || q.calls != calls {
		t.Fatalf("global cap: %+v calls=%d/%d", v, q.calls, calls)
	}
	l.Load.InflightReqs = 0
	l.Publish()
	*mem = 950
	a.Tick(at(20 * ms))
	if v := admit(20 * ms); v.Reason != ReasonMemory || v.RetryAfter != time.Second {
		t.Fatalf("memory: %+v", v)
	}
	a.SetDraining(true)
	if v := admit(20 * ms); v.Reason != ReasonDraining || v.RetryAfter != 0 {
		t.Fatalf("draining: %+v", v)
	}
	a.SetDraining(false)
	*mem = 100
	a.Tick(at(25 * ms)) // within SampleInterval: nothing happens
	if v := admit(25 * ms); v.Reason != ReasonMemory {
		t.Fatalf("tick inside the interval changed state: %+v", v)
	}
	if q.calls != calls {
		t.Fatalf("quota consulted during global refusals")
	}
	a.Tick(at(30 * ms))
	if v := admit(30 * ms); !v.Admit {
		t.Fatalf("after memory recovered: %+v", v)
	}
	l.Publish()
	st := a.Stats()
	want := RejectCounts{ReasonNone: 4, ReasonQueue: 1, ReasonTenant: 1, ReasonGlobal: 1, ReasonMemory: 2, ReasonDraining: 1}
	if st.Decisions != want {
		t.Fatalf("decisions %v, want %v", st.Decisions, want)
	}
	if st.MemoryHot || st.Draining || st.Load.MemoryBytes != 100 {
		t.Fatalf("stats %+v", st)
	}
}

func TestAdmitterTenantErrors(t *testing.T) {
	q := &fakeQuota{err: errors.New("redis down")}
	a, _ := newTestAdmitter(t, Config{Tenants: q})
	f := &Frame{Tenant: []byte("t")}
	if v := a.Loop(0).Admit(bg, t0, f); v.Admit || v.Reason != ReasonTenant || f.Err == nil {
		t.Fatalf("fail closed: %+v %v", v, f.Err)
	}
	a, _ = newTestAdmitter(t, Config{Tenants: q, TenantFailOpen: true})
	if v := a.Loop(0).Admit(bg, t0, f); !v.Admit || f.Err != nil {
		t.Fatalf("fail open: %+v %v", v, f.Err)
	}
	if a.Stats().TenantErrors != 1 {
		t.Fatal("tenant errors not counted")
	}
	q.err = ErrCostExceedsBurst
	if v := a.Loop(0).Admit(bg, t0, f); v.Admit || v.RetryAfter != 0 || !errors.Is(f.Err, ErrCostExceedsBurst) {
		t.Fatalf("cost above burst: %+v %v", v, f.Err)
	}
	// No tenant key: the quota is skipped.
	q.calls = 0
	if v := a.Loop(0).Admit(bg, t0, &Frame{}); !v.Admit || q.calls != 0 {
		t.Fatalf("no tenant: %+v %d", v, q.calls)
	}
}

func TestAdmitterCPUShedsBestEffortOnly(t *testing.T) {
	cpu := time.Duration(0)
	a, _ := newTestAdmitter(t, Config{
		CPU:     &CPUConfig{Watermark: Watermark{High: 0.9, Low: 0.5}, Procs: 1, MinInterval: 10 * ms},
		CPUTime: func() (time.Duration, error) { return cpu, nil },
	})
	l := a.Loop(0)
	a.Tick(t0)
	cpu = 10 * ms // 100% of one core over 10ms
	a.Tick(at(10 * ms))
	if v := l.Admit(bg, at(10*ms), &Frame{Priority: PriorityBestEffort}); v.Reason != ReasonCPU {
		t.Fatalf("best effort while CPU hot: %+v", v)
	}
	if v := l.Admit(bg, at(10*ms), &Frame{Priority: PriorityNormal}); !v.Admit {
		t.Fatalf("normal while CPU hot: %+v", v)
	}
	if !a.Hot().Hot() || !a.Stats().CPUHot || a.Stats().CPUUtilisation != 1 {
		t.Fatalf("hot switch / stats: %+v", a.Stats())
	}
	a.Hot().SetMode(HotForceOff)
	if a.Hot().Hot() {
		t.Fatal("operator override ignored")
	}
}

func TestAdmitterGateFromLoops(t *testing.T) {
	var changes []string
	a, _ := newTestAdmitter(t, Config{
		Gate: GateConfig{Watermark: Watermark{High: 0.9, Low: 0.5, MinDwell: 100 * ms},
			OnChange: func(from, to GateState, _ float64) { changes = append(changes, from.String()+">"+to.String()) }},
		SampleInterval: ms,
	}, Binding{Loops: 2, MaxConns: 100})
	l0, l1 := a.Loop(0), a.Loop(1)
	if a.Loop(2) != nil || a.Loop(-1) != nil {
		t.Fatal("out-of-range loop handle")
	}
	// A connection flood on both loops: each loop counts its own conns and
	// publishes once per turn.
	type turn struct {
		at     time.Duration
		c0, c1 int64
		want   GateState
	}
	turns := []turn{
		{0, 10, 10, GateOpen},
		{ms, 45, 44, GateOpen},
		{2 * ms, 45, 45, GateClosed},   // 90%
		{3 * ms, 30, 30, GateClosed},   // band
		{4 * ms, 25, 24, GateClosed},   // below Low, dwell starts
		{50 * ms, 40, 40, GateClosed},  // back in the band: dwell restarts
		{60 * ms, 20, 20, GateClosed},  // dwell starts at 60ms
		{159 * ms, 20, 20, GateClosed}, // 99ms
		{160 * ms, 20, 20, GateOpen},   // 100ms below Low
		{161 * ms, 60, 60, GateClosed}, // flood again
	}
	for i, tn := range turns {
		l0.Load.Conns, l1.Load.Conns = tn.c0, tn.c1
		l0.Publish()
		l1.Publish()
		if s, _ := a.Tick(at(tn.at)); s != tn.want || a.Gate().State() != tn.want {
			t.Errorf("turn %d (t=%v conns=%d): gate %v, want %v", i, tn.at, tn.c0+tn.c1, s, tn.want)
		}
	}
	st := a.Stats()
	if st.Gate.Closes != 2 || st.Gate.Opens != 1 || st.Gate.Transitions != 3 || st.Load.Conns != 120 || st.Worst != ResourceConns {
		t.Fatalf("stats %+v", st)
	}
	if len(changes) != 3 {
		t.Fatalf("changes %v", changes)
	}
	// EMFILE on any loop pauses the gate.
	if pause, ok := a.Gate().AcceptError(at(200*ms), errEMFILE()); !ok || pause != 100*ms || a.Gate().State() != GatePaused {
		t.Fatalf("EMFILE: %v %v %v", pause, ok, a.Gate().State())
	}
}

func TestAdmitterCoDelAndLag(t *testing.T) {
	a, _ := newTestAdmitter(t, Config{
		CoDel: &CoDelConfig{},
		Lag:   &LagConfig{High: 50 * ms, Low: 10 * ms, MinDwell: 100 * ms, Window: 10 * ms},
	})
	l := a.Loop(0)
	l.Dequeue(at(0), at(-20*ms))
	if v := l.Dequeue(at(100*ms), at(80*ms)); v.Admit || v.Reason != ReasonCoDel || !l.ServeNewestFirst() {
		t.Fatalf("codel: %+v", v)
	}
	l.ObserveLag(at(0), 60*ms)
	l.ObserveLag(at(10*ms), 0)
	l.Count(ReasonConcurrency)
	l.Publish()
	a.Tick(at(10 * ms))
	st := a.Stats()
	if !st.LagHot || !st.CoDelHot || !st.Hot || st.Decisions[ReasonCoDel] != 1 || st.Decisions[ReasonConcurrency] != 1 {
		t.Fatalf("stats %+v", st)
	}
	l.QueueEmpty(at(150 * ms))
	l.Dequeue(at(200*ms), at(199*ms))
	if l.ServeNewestFirst() {
		t.Fatal("still LIFO after the queue drained")
	}
	// Without CoDel configured Dequeue admits.
	b, _ := newTestAdmitter(t, Config{})
	if v := b.Loop(0).Dequeue(at(time.Hour), t0); !v.Admit || b.Loop(0).ServeNewestFirst() {
		t.Fatal("Dequeue without CoDel")
	}
}

func TestAdmitterConfigValidate(t *testing.T) {
	for i, cfg := range []Config{
		{MaxInflightReqs: -1},
		{Gate: GateConfig{Watermark: Watermark{High: 0.1, Low: 0.5}}},
		{Conn: ConnBudgets{MaxPipelinedReqs: -1}},
		{CPU: &CPUConfig{Procs: -1}},
		{Lag: &LagConfig{High: ms, Low: 2 * ms}},
		{CoDel: &CoDelConfig{Interval: -1}},
	} {
		if _, err := NewAdmitter(cfg); err == nil {
			t.Errorf("%d: accepted %+v", i, cfg)
		}
	}
}

// TestAdmitterBind: the engine's loop count and caps arrive through Bind,
// once; a Binding without loops or with a negative cap is refused.
func TestAdmitterBind(t *testing.T) {
	a, err := NewAdmitter(Config{MaxInflightReqs: 7, MemoryLimitBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	if a.Loop(0) != nil {
		t.Fatal("a loop handle before Bind")
	}
	for i, b := range []Binding{{Loops: 0}, {Loops: -1}, {Loops: 1, MaxConns: -1}, {Loops: 1, MaxQueuedBytes: -1}} {
		if err := a.Bind(b); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%d: Bind(%+v) = %v, want ErrBadConfig", i, b, err)
		}
	}
	if err := a.Bind(Binding{Loops: 3, MaxConns: 10, MaxQueuedBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if a.Loop(2) == nil || a.Loop(3) != nil {
		t.Error("Bind(Loops: 3) did not make exactly 3 loop handles")
	}
	if b := a.Budgets(); b != (GlobalBudgets{MaxConns: 10, MaxInflightReqs: 7, MaxQueuedBytes: 1 << 20, MemoryLimitBytes: -1}) {
		t.Errorf("budgets %+v", b)
	}
	if err := a.Bind(Binding{Loops: 1}); !errors.Is(err, ErrBound) {
		t.Errorf("second Bind: %v, want ErrBound", err)
	}
}

// TestAdmitNoAlloc pins the per-frame path at zero allocations with a real
// tenant limiter (existing tenant) and the connection check.
func TestAdmitNoAlloc(t *testing.T) {
	tl, _ := NewTenantLimiter(TenantConfig{Quota: Quota{Count: 1e9, Per: time.Second, Burst: 1e6}})
	a, _ := newTestAdmitter(t, Config{Tenants: tl, Conn: ConnBudgets{MaxPipelinedReqs: 16}})
	l := a.Loop(0)
	key := AppendIPKey(make([]byte, 0, 32), netipMustParse("192.0.2.1"))
	f := &Frame{Tenant: key, ConnPending: 3}
	ctx := context.Background()
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		i++
		l.Admit(ctx, at(time.Duration(i)*time.Microsecond), f)
	}); n != 0 {
		t.Fatalf("Admit allocates %v per frame", n)
	}
}

func BenchmarkAdmitFrame(b *testing.B) {
	tl, _ := NewTenantLimiter(TenantConfig{Quota: Quota{Count: 1e9, Per: time.Second, Burst: 1e6}})
	a, err := NewAdmitter(Config{
		MaxInflightReqs: 10000,
		Tenants:         tl,
		Conn:            ConnBudgets{MaxPipelinedReqs: 16},
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := a.Bind(Binding{Loops: 1, MaxConns: 10000, MaxQueuedBytes: 1 << 30}); err != nil {
		b.Fatal(err)
	}
	l := a.Loop(0)
	keyf := KeyByTenantOr(KeyByIP())
	peer := netipMustParseAddrPort("192.0.2.1:4000")
	buf := make([]byte, 0, 64)
	f := &Frame{ConnPending: 3}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now := at(time.Duration(i) * time.Microsecond)
		buf = keyf(buf[:0], peer, nil)
		f.Tenant = buf
		if v := l.Admit(ctx, now, f); !v.Admit {
			b.Fatalf("refused: %+v", v)
		}
		if i&1023 == 0 { // once per "turn"
			l.Publish()
			a.Tick(now)
		}
	}
}
