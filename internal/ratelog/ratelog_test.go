package ratelog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a fake clock safe for concurrent use.
type clock struct{ ns atomic.Int64 }

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func (c *clock) now() time.Time          { return t0.Add(time.Duration(c.ns.Load())) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func TestLimiterTable(t *testing.T) {
	type step struct {
		at         time.Duration
		key        string
		ok         bool
		suppressed uint64
	}
	tests := []struct {
		name     string
		burst    int
		interval time.Duration
		steps    []step
	}{
		{"burst then steady rate", 3, 3 * time.Second, []step{
			{0, "a", true, 0}, {0, "a", true, 0}, {0, "a", true, 0},
			{0, "a", false, 0}, {0, "a", false, 0},
			{500 * time.Millisecond, "a", false, 0}, // next token at 1 s
			{time.Second, "a", true, 3},             // reports the three drops
			{time.Second, "a", false, 0},
			{2 * time.Second, "a", true, 1},
			{10 * time.Second, "a", true, 0}, // refilled to the full burst
			{10 * time.Second, "a", true, 0},
			{10 * time.Second, "a", true, 0},
			{10 * time.Second, "a", false, 0},
		}},
		{"keys are independent", 1, time.Second, []step{
			{0, "a", true, 0}, {0, "b", true, 0}, {0, "a", false, 0}, {0, "b", false, 0}, {0, "b", false, 0},
			{time.Second, "b", true, 2}, {time.Second, "a", true, 1},
		}},
		{"one per interval", 1, time.Minute, []step{
			{0, "x", true, 0},
			{59 * time.Second, "x", false, 0},
			{time.Minute, "x", true, 1},
			{time.Minute + time.Nanosecond, "x", false, 0},
			{2 * time.Minute, "x", true, 1},
		}},
		{"a clock that goes back only prolongs the wait", 1, time.Second, []step{
			{10 * time.Second, "x", true, 0},
			{5 * time.Second, "x", false, 0},
			{11 * time.Second, "x", true, 1},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c clock
			l, err := NewLimiter(Options{Burst: tc.burst, Interval: tc.interval, Now: c.now})
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tc.steps {
				ok, n := l.Allow(s.key, t0.Add(s.at))
				if ok != s.ok || n != s.suppressed {
					t.Fatalf("step %d (t=%v key %q): Allow = %v, %d; want %v, %d", i, s.at, s.key, ok, n, s.ok, s.suppressed)
				}
			}
		})
	}
}

func TestOptions(t *testing.T) {
	bad := []Options{{Burst: -1}, {Interval: -time.Second}, {MaxKeys: -1}, {Burst: 10, Interval: 5 * time.Nanosecond}}
	for i, o := range bad {
		if _, err := New(slog.DiscardHandler, o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%d: New(%+v) err = %v, want ErrInvalidOptions", i, o, err)
		}
		if _, err := NewLimiter(o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%d: NewLimiter(%+v) err = %v, want ErrInvalidOptions", i, o, err)
		}
	}
	// The zero Options: DefaultBurst at once, then one per Interval/Burst.
	var c clock
	l, err := NewLimiter(Options{Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range DefaultBurst {
		if ok, _ := l.Allow("k", c.now()); !ok {
			t.Fatalf("record %d of the default burst dropped", i)
		}
	}
	if ok, _ := l.Allow("k", c.now()); ok {
		t.Fatal("record past the default burst passed")
	}
	c.advance(DefaultInterval / DefaultBurst)
	if ok, n := l.Allow("k", c.now()); !ok || n != 1 {
		t.Fatalf("after one emission interval: %v, %d", ok, n)
	}
}

// TestMaxKeys: distinct messages beyond MaxKeys share overflow buckets, so
// memory stays bounded and a flood of distinct messages is still limited.
func TestMaxKeys(t *testing.T) {
	var c clock
	const maxKeys = 32
	l, err := NewLimiter(Options{Burst: 1, Interval: time.Minute, MaxKeys: maxKeys, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	passed := 0
	for i := range 10000 {
		if ok, _ := l.Allow(fmt.Sprintf("msg %d", i), c.now()); ok {
			passed++
		}
	}
	if k := l.Keys(); k > maxKeys {
		t.Fatalf("%d keys tracked, limit %d", k, maxKeys)
	}
	// Each shard tracks maxKeys/16 keys and lets one more record through
	// its shared overflow bucket.
	if limit := maxKeys + shardCount; passed > limit {
		t.Fatalf("%d of 10000 distinct records passed, want at most %d", passed, limit)
	}
	if got := l.Suppressed(); got != uint64(10000-passed) {
		t.Fatalf("Suppressed() = %d, want %d", got, 10000-passed)
	}
	ps := l.TakePending()
	overflow := 0
	for _, p := range ps {
		if p.Overflow {
			overflow++
		}
	}
	if overflow == 0 {
		t.Fatalf("no overflow bucket reported in %+v", ps)
	}
	// Once the buckets refill, idle keys are swept and new ones tracked.
	c.advance(time.Minute)
	if ok, n := l.Allow("fresh", c.now()); !ok || n != 0 {
		t.Fatalf("fresh key after refill: %v, %d", ok, n)
	}
	if l.Keys() > maxKeys {
		t.Fatalf("%d keys tracked after sweep", l.Keys())
	}
}

// recorder is a slog.Handler that keeps what it is given.
type recorder struct {
	mu     *sync.Mutex
	recs   *[]string
	prefix string
	level  slog.Level
	err    error
}

func newRecorder() *recorder {
	return &recorder{mu: &sync.Mutex{}, recs: new([]string)}
}

func (r *recorder) Enabled(_ context.Context, l slog.Level) bool { return l >= r.level }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	var sb strings.Builder
	sb.WriteString(r.prefix + rec.Level.String() + " " + rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		sb.WriteString(" " + a.String())
		return true
	})
	r.mu.Lock()
	*r.recs = append(*r.recs, sb.String())
	r.mu.Unlock()
	return r.err
}

func (r *recorder) WithAttrs(as []slog.Attr) slog.Handler {
	c := *r
	for _, a := range as {
		c.prefix += a.String() + " "
	}
	return &c
}

func (r *recorder) WithGroup(name string) slog.Handler {
	c := *r
	c.prefix += name + ": "
	return &c
}

func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), *r.recs...)
}

func TestHandler(t *testing.T) {
	var c clock
	rec := newRecorder()
	h, err := New(rec, Options{Burst: 2, Interval: 2 * time.Second, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(h)
	connLog := log.With("conn", 7) // shares the limits
	for range 5 {
		log.Warn("accept paused", "errno", "EMFILE")
	}
	connLog.Warn("accept paused", "errno", "EMFILE") // the 6th: dropped too
	log.Info("gate closed")
	c.advance(time.Second)
	connLog.Warn("accept paused", "errno", "EMFILE")
	want := []string{
		"WARN accept paused errno=EMFILE",
		"WARN accept paused errno=EMFILE",
		"INFO gate closed",
		"conn=7 WARN accept paused errno=EMFILE suppressed=4",
	}
	if got := rec.lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if h.Suppressed() != 4 {
		t.Fatalf("Suppressed() = %d, want 4", h.Suppressed())
	}

	// A flood that stops: Flush reports it once, then nothing.
	for range 3 {
		log.Error("write stall")
	}
	log.Debug("hidden") // below the recorder's level: never reaches Handle
	c.advance(time.Second)
	if err := h.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := rec.lines()[len(want):]
	if len(got) != 3 || got[2] != "ERROR write stall suppressed=1" {
		t.Fatalf("after flush: %q", got)
	}
	if err := h.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.lines()); n != len(want)+3 {
		t.Fatalf("second Flush emitted %d more records", n-len(want)-3)
	}
}

func TestHandlerGroupAndEnabled(t *testing.T) {
	var c clock
	rec := newRecorder()
	rec.level = slog.LevelInfo
	h, err := New(rec, Options{Burst: 1, Interval: time.Second, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	if h.Enabled(context.Background(), slog.LevelDebug) || !h.Enabled(context.Background(), slog.LevelInfo) {
		t.Fatal("Enabled does not follow the wrapped handler")
	}
	g := slog.New(h.WithGroup("loop"))
	g.Info("turn slow")
	g.Info("turn slow")
	c.advance(time.Second)
	g.Info("turn slow")
	want := "loop: INFO turn slow suppressed=1"
	if got := rec.lines(); len(got) != 2 || got[1] != want {
		t.Fatalf("records %q, want the second to be %q", got, want)
	}
}

func TestHandlerErrors(t *testing.T) {
	var c clock
	rec := newRecorder()
	rec.err = errors.New("sink broken")
	h, err := New(rec, Options{Burst: 1, Interval: time.Second, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	r := slog.NewRecord(c.now(), slog.LevelInfo, "m", 0)
	if err := h.Handle(context.Background(), r); err == nil || err.Error() != "sink broken" {
		t.Fatalf("Handle err = %v", err)
	}
	if err := h.Handle(context.Background(), r); err != nil {
		t.Fatalf("a dropped record returned %v", err)
	}
	if err := h.Flush(context.Background()); err == nil {
		t.Fatal("Flush hid the wrapped handler's error")
	}
}

// TestConcurrent: many goroutines, a frozen clock: exactly Burst records per
// message pass, and every other one is counted as suppressed. Run with -race.
func TestConcurrent(t *testing.T) {
	var c clock
	rec := newRecorder()
	const burst, goroutines, perG, keys = 5, 8, 500, 4
	h, err := New(rec, Options{Burst: burst, Interval: time.Hour, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(h)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := log.With("g", g)
			for i := range perG {
				l.Warn(fmt.Sprintf("event %d", i%keys))
			}
		}()
	}
	wg.Wait()
	if got := len(rec.lines()); got != burst*keys {
		t.Fatalf("%d records passed, want %d", got, burst*keys)
	}
	if got, want := h.Suppressed(), uint64(goroutines*perG-burst*keys); got != want {
		t.Fatalf("Suppressed() = %d, want %d", got, want)
	}
	var sum uint64
	for _, p := range h.lim.TakePending() {
		sum += p.Suppressed
	}
	if sum != uint64(goroutines*perG-burst*keys) {
		t.Fatalf("pending suppressed %d", sum)
	}
}

// TestSuppressedPathAllocs: dropping a record allocates nothing.
func TestSuppressedPathAllocs(t *testing.T) {
	var c clock
	h, err := New(slog.DiscardHandler, Options{Burst: 1, Interval: time.Hour, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := slog.NewRecord(c.now(), slog.LevelWarn, "accept paused", 0)
	r.AddAttrs(slog.String("errno", "EMFILE"))
	if err := h.Handle(ctx, r); err != nil { // takes the one token
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if err := h.Handle(ctx, r); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("suppressed path: %v allocs per record, want 0", allocs)
	}
}

func TestJSONOutput(t *testing.T) {
	var c clock
	var buf bytes.Buffer
	h, err := New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: dropTime}), Options{Burst: 1, Interval: time.Second, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(h)
	log.Warn("emfile", "fd", 3)
	log.Warn("emfile", "fd", 4)
	c.advance(time.Second)
	log.Warn("emfile", "fd", 5)
	want := `{"level":"WARN","msg":"emfile","fd":3}` + "\n" + `{"level":"WARN","msg":"emfile","fd":5,"suppressed":1}` + "\n"
	if buf.String() != want {
		t.Fatalf("got\n%swant\n%s", buf.String(), want)
	}
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

func BenchmarkHandleSuppressed(b *testing.B) {
	var c clock
	h, err := New(slog.DiscardHandler, Options{Burst: 1, Interval: time.Hour, Now: c.now})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	r := slog.NewRecord(c.now(), slog.LevelWarn, "accept paused", 0)
	b.ReportAllocs()
	for b.Loop() {
		_ = h.Handle(ctx, r)
	}
}

func BenchmarkHandleSuppressedParallel(b *testing.B) {
	var c clock
	h, err := New(slog.DiscardHandler, Options{Burst: 1, Interval: time.Hour, Now: c.now})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	msgs := []string{"accept paused", "gate closed", "write stall", "frame timeout"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			r := slog.NewRecord(t0, slog.LevelWarn, msgs[i%len(msgs)], 0)
			_ = h.Handle(ctx, r)
			i++
		}
	})
}

// BenchmarkLoggerSuppressed goes through slog.Logger (which builds the
// record) to an enabled handler that would format text.
func BenchmarkLoggerSuppressed(b *testing.B) {
	h, err := New(slog.NewTextHandler(io.Discard, nil), Options{Burst: 1, Interval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(h)
	b.ReportAllocs()
	for b.Loop() {
		log.Warn("accept paused", "errno", "EMFILE")
	}
}
