package kv

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/protocol/envelope"
	"github.com/sluicenet/sluice/resilience"
)

// req describes a request frame for the envelope tables.
type req struct {
	id       uint64
	method   string
	payload  []byte
	key      string        // idempotency key
	timeout  time.Duration // relative deadline when set (or zeroDeadline)
	deadline time.Time     // absolute deadline when set
	zero     bool          // relative deadline of 0 ms
	typ      envelope.Type // default TypeRequest
}

func (r req) frame(t testing.TB) []byte {
	t.Helper()
	m := envelope.Message{Type: envelope.TypeRequest, RequestID: r.id, Method: []byte(r.method), Payload: r.payload}
	if r.typ != 0 {
		m.Type = r.typ
		m.Method = nil
	}
	if r.key != "" {
		m.IdempotencyKey = []byte(r.key)
	}
	switch {
	case r.zero:
		m.SetTimeout(0)
	case r.timeout > 0:
		m.SetTimeout(r.timeout)
	case !r.deadline.IsZero():
		m.SetDeadline(r.deadline)
	}
	b, err := m.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reply is what a reply frame says, for comparisons.
type reply struct {
	typ        envelope.Type
	status     envelope.Status
	payload    string
	replayed   bool
	retryAfter bool // has a retry-after hint
}

func parseReply(t testing.TB, b []byte, wantID uint64) (reply, time.Duration) {
	t.Helper()
	var m envelope.Message
	if err := envelope.Parse(b, &m); err != nil {
		t.Fatalf("reply %x does not parse: %v", b, err)
	}
	if m.RequestID != wantID {
		t.Fatalf("reply to request %d, want %d", m.RequestID, wantID)
	}
	ra, has := m.RetryAfter()
	return reply{typ: m.Type, status: m.Status, payload: string(m.Payload),
		replayed: m.Flags&envelope.FlagReplayed != 0, retryAfter: has}, ra
}

func ok(payload string) reply { return reply{typ: envelope.TypeResponse, payload: payload} }

func failed(st envelope.Status, payload string) reply {
	return reply{typ: envelope.TypeResponse, status: st, payload: payload}
}

func rejected(st envelope.Status, reason string, retry bool) reply {
	return reply{typ: envelope.TypeReject, status: st, payload: reason, retryAfter: retry}
}

func newTestEnvelope(t testing.TB, cfg EnvelopeConfig) (*EnvelopeHandler, *admission.MemoryStore) {
	t.Helper()
	if cfg.Store == nil {
		cfg.Store = newTestStore(t, Config{})
	}
	var ms *admission.MemoryStore
	if cfg.Idempotency == nil {
		var err error
		if ms, err = admission.NewMemoryStore(admission.StoreConfig{}); err != nil {
			t.Fatal(err)
		}
		cfg.Idempotency = ms
	}
	if cfg.Clock == nil {
		cfg.Clock = func() time.Time { return t0 }
	}
	h, err := NewEnvelopeHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h, ms
}

func TestEnvelopeHandleTable(t *testing.T) {
	put := func(k, v string) []byte { return AppendPut(nil, []byte(k), []byte(v)) }
	steps := []struct {
		r    req
		want reply
	}{
		{req{id: 1, method: "GET", payload: []byte("k")}, failed(envelope.StatusBadRequest, reasonNoSuchKey)},
		{req{id: 2, method: "PUT", payload: put("k", "v1")}, ok("")},
		{req{id: 3, method: "GET", payload: []byte("k")}, ok("v1")},
		{req{id: 4, method: "PUT", payload: []byte{9, 'x'}}, failed(envelope.StatusBadRequest, ErrBadPayload.Error())},
		{req{id: 5, method: "DELETE", payload: []byte("k")}, ok("1")},
		{req{id: 6, method: "DELETE", payload: []byte("k")}, ok("0")},
		{req{id: 7, method: "INCR", payload: []byte("n")}, ok("1")},
		{req{id: 8, method: "INCR", payload: []byte("n")}, ok("2")},
		{req{id: 9, method: "PUT", payload: put("s", "abc")}, ok("")},
		{req{id: 10, method: "INCR", payload: []byte("s")}, failed(envelope.StatusBadRequest, ErrNotInteger.Error())},
		{req{id: 11, method: "PING"}, ok("PONG")},
		{req{id: 12, method: "get", payload: []byte("k")}, rejected(envelope.StatusBadRequest, reasonUnknownMethod, false)},
		{req{id: 13, typ: envelope.TypeResponse}, rejected(envelope.StatusBadRequest, reasonNotRequest, false)},
		{req{id: 14, method: "GET", payload: []byte("n"), zero: true}, rejected(envelope.StatusTimeout, reasonExpired, false)},
		{req{id: 15, method: "INCR", payload: []byte("n"), deadline: t0.Add(-time.Millisecond)}, rejected(envelope.StatusTimeout, reasonExpired, false)},
		{req{id: 16, method: "GET", payload: []byte("n"), deadline: t0.Add(time.Second)}, ok("2")},
		{req{id: 17, method: "GET", payload: []byte("n"), timeout: time.Millisecond}, ok("2")},
	}
	h, _ := newTestEnvelope(t, EnvelopeConfig{})
	for i, s := range steps {
		out, worker := h.Handle(nil, s.r.frame(t), t0)
		if worker {
			t.Fatalf("step %d: needs a worker, want inline", i)
		}
		if got, _ := parseReply(t, out, s.r.id); got != s.want {
			t.Fatalf("step %d (%s): got %+v, want %+v", i, s.r.method, got, s.want)
		}
	}
	out, _ := h.Handle(nil, []byte("\x00\x00\x00\x02xx"), t0)
	if got, _ := parseReply(t, out, 0); got.typ != envelope.TypeReject || got.status != envelope.StatusBadRequest {
		t.Fatalf("garbage frame: %+v, want a bad-request reject", got)
	}
	st := h.Stats()
	if st.Expired != 2 || st.BadRequests != 3 || st.Effects != 6 {
		t.Fatalf("stats %+v: want 2 expired, 3 bad requests, 6 effects", st)
	}
}

// TestEnvelopeIdempotency: a retried INCR increments once and replays its
// answer; the same key with another payload is a conflict without retry
// hint; a key in progress is a conflict with one; a deterministic failure
// is replayed too.
func TestEnvelopeIdempotency(t *testing.T) {
	h, ms := newTestEnvelope(t, EnvelopeConfig{})
	steps := []struct {
		r    req
		want reply
	}{
		{req{id: 1, method: "INCR", payload: []byte("n"), key: "op-1"}, ok("1")},
		{req{id: 2, method: "INCR", payload: []byte("n"), key: "op-1"}, reply{typ: envelope.TypeResponse, payload: "1", replayed: true}},
		{req{id: 3, method: "INCR", payload: []byte("n"), key: "op-1"}, reply{typ: envelope.TypeResponse, payload: "1", replayed: true}},
		{req{id: 4, method: "INCR", payload: []byte("other"), key: "op-1"}, rejected(envelope.StatusConflict, reasonMismatch, false)},
		{req{id: 5, method: "PUT", payload: AppendPut(nil, []byte("n"), nil), key: "op-1"}, rejected(envelope.StatusConflict, reasonMismatch, false)},
		{req{id: 6, method: "GET", payload: []byte("n"), key: "op-1"}, ok("1")}, // reads ignore keys
		{req{id: 7, method: "INCR", payload: []byte("n"), key: "op-2"}, ok("2")},
		{req{id: 8, method: "PUT", payload: []byte{5}, key: "op-3"}, failed(envelope.StatusBadRequest, ErrBadPayload.Error())},
		{req{id: 9, method: "PUT", payload: []byte{5}, key: "op-3"}, reply{typ: envelope.TypeResponse, status: envelope.StatusBadRequest, payload: ErrBadPayload.Error(), replayed: true}},
		{req{id: 10, method: "INCR", payload: []byte("n")}, ok("3")}, // no key: runs every time
		{req{id: 11, method: "INCR", payload: []byte("n")}, ok("4")},
	}
	for i, s := range steps {
		out, _ := h.Handle(nil, s.r.frame(t), t0)
		if got, _ := parseReply(t, out, s.r.id); got != s.want {
			t.Fatalf("step %d: got %+v, want %+v", i, got, s.want)
		}
	}
	// a claim held by someone else: in progress
	fp := admission.FingerprintOf([]byte("INCR"), []byte("n"))
	if c, err := ms.Claim(context.Background(), t0, []byte("op-busy"), fp); err != nil || c.State != admission.ClaimNew {
		t.Fatalf("claim: %+v %v", c, err)
	}
	r := req{id: 20, method: "INCR", payload: []byte("n"), key: "op-busy"}
	out, _ := h.Handle(nil, r.frame(t), t0)
	got, ra := parseReply(t, out, 20)
	if want := rejected(envelope.StatusConflict, reasonInProgress, true); got != want || ra <= 0 {
		t.Fatalf("in progress: got %+v retry-after %v, want %+v", got, ra, want)
	}
	if st := h.Stats(); st.Effects != 4 || st.Replays != 3 || st.Conflicts != 3 {
		t.Fatalf("stats %+v: want 4 effects, 3 replays, 3 conflicts", st)
	}
}

func TestEnvelopeNeedsWorker(t *testing.T) {
	dep := &Dependency{Latency: time.Millisecond}
	h, _ := newTestEnvelope(t, EnvelopeConfig{Dependency: dep})
	for _, r := range []req{
		{id: 1, method: "PUT", payload: AppendPut(nil, []byte("k"), nil)},
		{id: 2, method: "INCR", payload: []byte("k"), key: "x"},
		{id: 3, method: "DELETE", payload: []byte("k")},
	} {
		if out, w := h.Handle(nil, r.frame(t), t0); !w || len(out) != 0 {
			t.Fatalf("%s with a dependency: worker %v out %x, want the worker", r.method, w, out)
		}
	}
	if _, w := h.Handle(nil, req{id: 4, method: "GET", payload: []byte("k")}.frame(t), t0); w {
		t.Fatal("GET went to the worker")
	}
	if _, w := h.Handle(nil, req{id: 4, method: "INCR", payload: []byte("k"), zero: true}.frame(t), t0); w {
		t.Fatal("an expired INCR went to the worker")
	}
	hb, _ := newTestEnvelope(t, EnvelopeConfig{IdempotencyBlocks: true})
	if _, w := hb.Handle(nil, req{id: 5, method: "INCR", payload: []byte("k"), key: "x"}.frame(t), t0); !w {
		t.Fatal("keyed INCR with a blocking store ran inline")
	}
	if _, w := hb.Handle(nil, req{id: 6, method: "INCR", payload: []byte("k")}.frame(t), t0); w {
		t.Fatal("INCR without a key went to the worker")
	}
}

// TestEnvelopeAnswerTask covers the worker side on a table of pick-up
// times: deadline passed while queued, waited too long, served.
func TestEnvelopeAnswerTask(t *testing.T) {
	h, _ := newTestEnvelope(t, EnvelopeConfig{MaxQueueWait: 100 * time.Millisecond, BusyRetryAfter: 30 * time.Millisecond})
	tests := []struct {
		r        req
		deadline time.Time
		pickup   time.Duration
		want     reply
		ra       time.Duration
	}{
		{req{id: 1, method: "INCR", payload: []byte("n")}, t0.Add(50 * time.Millisecond), 50 * time.Millisecond, rejected(envelope.StatusTimeout, reasonExpired, false), 0},
		{req{id: 2, method: "INCR", payload: []byte("n")}, time.Time{}, 101 * time.Millisecond, rejected(envelope.StatusUnavailable, reasonQueueWait, true), 30 * time.Millisecond},
		{req{id: 3, method: "INCR", payload: []byte("n")}, t0.Add(time.Second), 100 * time.Millisecond, ok("1"), 0},
		{req{id: 4, method: "INCR", payload: []byte("n"), key: "k"}, time.Time{}, 0, ok("2"), 0},
		{req{id: 5, method: "INCR", payload: []byte("n"), key: "k"}, time.Time{}, 0, reply{typ: envelope.TypeResponse, payload: "2", replayed: true}, 0},
	}
	for i, tt := range tests {
		task, err := newTask(nil, tt.r.frame(t), t0, tt.deadline)
		if err != nil {
			t.Fatal(err)
		}
		out := h.answerTask(task, t0.Add(tt.pickup))
		got, ra := parseReply(t, out, tt.r.id)
		if got != tt.want || ra != tt.ra {
			t.Fatalf("%d: got %+v retry-after %v, want %+v %v", i, got, ra, tt.want, tt.ra)
		}
		task.free()
	}
}

// TestEnvelopeDependencyFailures: a failing dependency refuses the
// mutation with no effect (and abandons its key, so a retry runs); a
// tripped breaker answers with its remaining open time; an expired
// context is a timeout.
func TestEnvelopeDependencyFailures(t *testing.T) {
	dep := &Dependency{ErrorRate: 1}
	br, err := resilience.NewBreaker(resilience.BreakerConfig{MinCalls: 2, OpenTimeout: 10 * time.Second, OpenJitter: -1})
	if err != nil {
		t.Fatal(err)
	}
	store := newTestStore(t, Config{})
	h, _ := newTestEnvelope(t, EnvelopeConfig{Store: store, Dependency: dep,
		Retrier: &resilience.Retrier{Policy: resilience.RetryPolicy{MaxAttempts: 1}, Breaker: br}})
	serve := func(r req, ctx context.Context) (reply, time.Duration) {
		var m envelope.Message
		f := r.frame(t)
		if err := envelope.Parse(f, &m); err != nil {
			t.Fatal(err)
		}
		var scratch []byte
		return parseReply(t, h.serve(ctx, nil, &scratch, &m, methodOf(m.Method), time.Now()), r.id)
	}
	incr := req{id: 1, method: "INCR", payload: []byte("n"), key: "retry-me"}
	got, _ := serve(incr, context.Background())
	if want := rejected(envelope.StatusUnavailable, reasonDepFailed, true); got != want {
		t.Fatalf("failing dependency: %+v, want %+v", got, want)
	}
	if _, ok := store.Get(nil, []byte("n"), t0.UnixNano(), nil); ok {
		t.Fatal("a refused INCR had an effect")
	}
	opened := time.Now() // before the failure that opens the breaker
	got, _ = serve(req{id: 2, method: "PUT", payload: AppendPut(nil, []byte("k"), nil)}, context.Background())
	if got.status != envelope.StatusUnavailable {
		t.Fatalf("second failure: %+v", got)
	}
	got, ra := serve(incr, context.Background()) // the breaker has seen 2 failures of 2 calls
	// 10 s open, less at most the time since the breaker opened.
	if want := rejected(envelope.StatusUnavailable, reasonDepOpen, true); got != want || ra < 10*time.Second-time.Since(opened) || ra > 10*time.Second {
		t.Fatalf("open breaker: %+v retry-after %v, want %+v 10s less at most %v", got, ra, want, time.Since(opened))
	}

	// a healthy dependency: the abandoned key runs now
	dep2 := &Dependency{}
	h2, _ := newTestEnvelope(t, EnvelopeConfig{Store: store, Dependency: dep2, Idempotency: h.cfg.Idempotency})
	var m envelope.Message
	f := incr.frame(t)
	_ = envelope.Parse(f, &m)
	var scratch []byte
	if got, _ := parseReply(t, h2.serve(context.Background(), nil, &scratch, &m, mIncr, time.Now()), 1); got != ok("1") {
		t.Fatalf("retry after abandon: %+v, want ok 1", got)
	}

	slow := &Dependency{Latency: time.Minute}
	h3, _ := newTestEnvelope(t, EnvelopeConfig{Dependency: slow})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	f = req{id: 3, method: "INCR", payload: []byte("n")}.frame(t)
	_ = envelope.Parse(f, &m)
	if got, _ := parseReply(t, h3.serve(ctx, nil, &scratch, &m, mIncr, time.Now()), 3); got != rejected(envelope.StatusTimeout, reasonDepTimeout, false) {
		t.Fatalf("slow dependency past the deadline: %+v", got)
	}
	if calls, fails := slow.Calls(); calls != 1 || fails != 1 {
		t.Fatalf("slow dependency: %d calls %d failures, want 1 and 1", calls, fails)
	}
}

func TestEnvelopeConfigValidate(t *testing.T) {
	store := newTestStore(t, Config{})
	bad := []EnvelopeConfig{
		{},
		{Store: store, Workers: -1},
		{Store: store, MaxQueueWait: -1},
		{Store: store, Dependency: &Dependency{ErrorRate: 1.5}},
		{Store: store, Retrier: &resilience.Retrier{Policy: resilience.RetryPolicy{MaxAttempts: -1}}},
	}
	for i, c := range bad {
		if err := c.Validate(); err == nil {
			t.Errorf("%d: %+v validated", i, c)
		} else if i < 4 && !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%d: %v does not wrap ErrInvalidConfig", i, err)
		}
	}
}

// TestEnvelopeInlineZeroAlloc: an inline GET with a connection's scratch
// space does not allocate.
func TestEnvelopeInlineZeroAlloc(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	h, _ := newTestEnvelope(t, EnvelopeConfig{Idempotency: nopStore{}})
	put := req{id: 1, method: "PUT", payload: AppendPut(nil, []byte("key"), []byte("value"))}.frame(t)
	get := req{id: 2, method: "GET", payload: []byte("key")}.frame(t)
	incr := req{id: 3, method: "INCR", payload: []byte("n")}.frame(t)
	out := make([]byte, 0, 256)
	scratch := make([]byte, 0, 64)
	out, _ = h.handle(out[:0], &scratch, nil, put, t0)
	for name, f := range map[string][]byte{"PUT": put, "GET": get, "INCR": incr} {
		if n := testing.AllocsPerRun(200, func() { out, _ = h.handle(out[:0], &scratch, nil, f, t0) }); n != 0 {
			t.Errorf("%s: %v allocs per run, want 0", name, n)
		}
	}
}

// nopStore is an idempotency store that is never consulted (no keys).
type nopStore struct{}

func (nopStore) Claim(context.Context, time.Time, []byte, admission.Fingerprint) (admission.Claim, error) {
	return admission.Claim{}, errors.New("unexpected")
}
func (nopStore) Finish(context.Context, time.Time, []byte, uint64, int, []byte) error { return nil }
func (nopStore) Abandon(context.Context, time.Time, []byte, uint64) error             { return nil }

func BenchmarkEnvelopeGet(b *testing.B) {
	h, _ := newTestEnvelope(b, EnvelopeConfig{})
	put := req{id: 1, method: "PUT", payload: AppendPut(nil, []byte("key"), []byte("value"))}.frame(b)
	get := req{id: 2, method: "GET", payload: []byte("key")}.frame(b)
	out := make([]byte, 0, 256)
	scratch := make([]byte, 0, 64)
	out, _ = h.handle(out[:0], &scratch, nil, put, t0)
	b.ReportAllocs()
	for b.Loop() {
		out, _ = h.handle(out[:0], &scratch, nil, get, t0)
	}
}

func BenchmarkEnvelopeIdempotentIncr(b *testing.B) {
	h, _ := newTestEnvelope(b, EnvelopeConfig{})
	f := req{id: 1, method: "INCR", payload: []byte("n"), key: "same-key"}.frame(b)
	out := make([]byte, 0, 256)
	scratch := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() { // the first runs, the rest replay
		out, _ = h.handle(out[:0], &scratch, nil, f, t0)
	}
}
