package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/admission/shed"
	"github.com/sluicenet/sluice/protocol"
)

// TestSlowReads: with MaxQueueDelay and RejectFlushDelay, a connection
// that became readable while the loop was busy for longer than
// MaxQueueDelay is not read in the next turn but from the slow list, and
// its frame is refused; the connection keeps working afterwards.
func TestSlowReads(t *testing.T) { slowReadsRun(t, false) }

// TestSlowReadsFirstFrame: a connection's first bytes, arriving while the
// loop is busy past MaxQueueDelay, are deferred like any others and, read
// off the slow list, keep the bound of the connection's accept: the frame
// is refused, not served as if it had just arrived. (The bound of a
// connection never read used to be the reading turn's, which a deferral
// made fresh.)
func TestSlowReadsFirstFrame(t *testing.T) { slowReadsRun(t, true) }

// slowFrameEngine starts a one-loop line echo with MaxQueueDelay 5 ms and
// RejectFlushDelay 20 ms whose handler spins 40 ms on the frame "slow",
// after a send on the returned channel; adjust may change the engine
// before it starts.
func slowFrameEngine(t *testing.T, adjust func(*Engine)) (*Engine, <-chan struct{}) {
	t.Helper()
	adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1,
		CoDel: &admission.CoDelConfig{Target: time.Second, Interval: 10 * time.Second}})
	started := make(chan struct{}, 1)
	h := newTestHandler()
	h.frame = func(c *Conn, frame []byte) Action {
		if string(frame) == "slow" {
			started <- struct{}{}
			busyFor(40 * time.Millisecond)
		}
		c.WriteFrame(frame)
		return None
	}
	e := startWith(t, Config{Loops: 1, Codec: protocol.Delimited{}, Admission: AdmissionPolicy{Admitter: adm,
		MaxQueueDelay: 5 * time.Millisecond, RejectFlushDelay: 20 * time.Millisecond}}, h, adjust)
	return e, started
}

// slowReadsRun is TestSlowReads, with b's first frame the one that arrives
// while the loop spins when firstFrame is set (b is only accepted before),
// else its second (b0 is served before).
func slowReadsRun(t *testing.T, firstFrame bool) {
	e, started := slowFrameEngine(t, nil)
	a := dialLine(t, e.Addr().String(), nil)
	b := dialLine(t, e.Addr().String(), nil)
	if firstFrame {
		for deadline := time.Now().Add(5 * time.Second); e.Stats().Accepted < 2; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("accepted %d connections, want 2", e.Stats().Accepted)
			}
		}
	} else {
		fmt.Fprint(b, "b0\n")
		if got := b.line(t); got != "b0" {
			t.Fatalf("b0: %q", got)
		}
	}
	fmt.Fprint(a, "slow\n")
	<-started
	fmt.Fprint(b, "b1\n") // arrives while the loop spins for 40 ms
	if got := a.line(t); got != "slow" {
		t.Fatalf("slow: %q", got)
	}
	got := b.line(t)
	if reason, _, ok := protocol.ParseRejectText([]byte(got)); !ok || reason != admission.ReasonQueue.String() {
		t.Fatalf("b1: %q, want a queue reject", got)
	}
	if s := e.Stats(); s.SlowReads == 0 {
		t.Errorf("SlowReads = 0, want b's read deferred")
	}
	time.Sleep(10 * time.Millisecond)
	fmt.Fprint(b, "b2\n") // the loop is idle again: served
	if got := b.line(t); got != "b2" {
		t.Fatalf("b2: %q", got)
	}
}

// TestLongPark: a sparse connection (a frame per 40 ms or more) whose
// refusals wait on the long hold and that is deferred again is read when
// its refusals are written, not as soon as the loop idles (it is not
// judged overloaded): what it sent meanwhile is refused in the same write,
// for one read instead of one per refused frame.
func TestLongPark(t *testing.T) {
	const hold = 600 * time.Millisecond
	e, started := slowFrameEngine(t, func(e *Engine) { // as when derived: a long hold, and no Classify
		s := loopStage(e)
		s.lazy[1].hold, s.longPark = int64(hold), true
	})
	a := dialLine(t, e.Addr().String(), nil)
	b := dialLine(t, e.Addr().String(), nil)
	fmt.Fprint(b, "b0\n")
	if got := b.line(t); got != "b0" {
		t.Fatalf("b0: %q", got)
	}
	// busy sends b's frame while the loop spins: it is deferred, and refused
	busy := func(frame string) (readsBefore uint64) {
		t.Helper()
		readsBefore = e.Stats().Reads // published by the idle loop
		fmt.Fprint(a, "slow\n")
		<-started
		fmt.Fprint(b, frame)
		if got := a.line(t); got != "slow" {
			t.Fatalf("slow: %q", got)
		}
		return readsBefore
	}
	busy("b1\n") // b's first refusal starts a batch on the long hold
	t0 := time.Now()
	for e.Stats().Rejects == 0 {
		if time.Since(t0) > 5*time.Second {
			t.Fatal("b1 not refused")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	r0 := busy("b2\n")
	time.Sleep(100 * time.Millisecond)
	// With io_uring the recv armed before the park still brings b2 (see
	// the package doc, Backends): only epoll's reads wait.
	if got := e.Stats().Reads - r0; got != 1 && e.Backend() == BackendEpoll {
		t.Errorf("%d reads while b2 waited and the loop idled, want 1 (a's): b is read with its refusals", got)
	}
	for i := 1; i <= 2; i++ {
		if reason, _, ok := protocol.ParseRejectText([]byte(b.line(t))); !ok || reason != admission.ReasonQueue.String() {
			t.Fatalf("b%d: want a queue reject", i)
		}
	}
	if waited := time.Since(t0); waited < hold-100*time.Millisecond {
		t.Errorf("b's refusals after %v, want the long hold, %v", waited, hold)
	}
	time.Sleep(20 * time.Millisecond) // for the loop to publish its counters
	s := e.Stats()
	if s.SlowReads < 2 || s.Rejects != 2 {
		t.Errorf("SlowReads %d, Rejects %d: want both of b's frames deferred and refused", s.SlowReads, s.Rejects)
	}
	fmt.Fprint(b, "b3\n") // the loop is idle again: served
	if got := b.line(t); got != "b3" {
		t.Fatalf("b3: %q", got)
	}
}

// TestLongParksDueFirst: an idle loop judged overloaded, with only long
// parks on the slow list, reads the shed.IdleParkReads of them due first
// (longParksDueFirst gives the due time of the last of those); one not
// judged overloaded sleeps until they are due.
func TestLongParksDueFirst(t *testing.T) {
	adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1, CoDel: &admission.CoDelConfig{Interval: 10 * time.Millisecond}})
	e, err := New(Config{Loops: 1, Codec: protocol.Delimited{}, Admission: AdmissionPolicy{Admitter: adm}}, HandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	s := loopStage(e)
	if !s.longPark {
		t.Fatal("derived stage without Classify: no long parks")
	}
	ms := int64(time.Millisecond)
	// 12 long parks due at 1..12 ms, in a shuffled order, and one short park
	for _, i := range []int64{7, 3, 12, 1, 9, 5, 11, 2, 8, 4, 10, 6} {
		s.park(&connStage{c: &Conn{}, flags: sLongPark}, i*ms, false)
	}
	if s.slowLong != 12 || s.slowEarly != 0 {
		t.Fatalf("slowLong %d slowEarly %d, want 12 and 0", s.slowLong, s.slowEarly)
	}
	if got := s.longParksDueFirst(); got != shed.IdleParkReads*ms {
		t.Errorf("the %d due first end at %v, want %v", shed.IdleParkReads, time.Duration(got), time.Duration(shed.IdleParkReads*ms))
	}
	s.busy.Set(false)
	if s.idle() {
		t.Error("a loop not judged overloaded reads long parks early")
	}
	s.busy.Set(true)
	if !s.idle() || !s.slowFirst || s.slowNow {
		t.Errorf("overloaded, only long parks: idle must read the ones due first (slowFirst %v slowNow %v)", s.slowFirst, s.slowNow)
	}
	// fewer than shed.IdleParkReads: all of them
	s.slow, s.slowLong, s.slowDue = nil, 0, 0
	for _, i := range []int64{3, 1, 2} {
		s.park(&connStage{c: &Conn{}, flags: sLongPark}, i*ms, false)
	}
	if got := s.longParksDueFirst(); got != 3*ms {
		t.Errorf("all 3 end at %v, want 3ms", time.Duration(got))
	}
}

// TestDeferKeepsEdgeBound: with classes, a connection deferred on an edge
// keeps the arrival bound the edge proved (the previous wait), not the
// start of its last draining read, for the frames read off the slow list.
// A sparse connection's last draining read is its whole gap ago: with that
// bound, a critical frame deferred once on an overloaded loop was aged by
// the gap and refused past L (critical frames at 2 ms of work, 5x: 49%
// served, the same as normal ones). Without classes the deferral has
// decided its normal frames' refusal, and the older bound stays.
func TestDeferKeepsEdgeBound(t *testing.T) {
	for _, classes := range []bool{true, false} {
		pol := AdmissionPolicy{Admitter: newAdmitter(t, admission.Config{MemoryLimitBytes: -1, CoDel: &admission.CoDelConfig{Interval: 10 * time.Millisecond}})}
		if classes {
			pol.Classify = func(*Conn, []byte, *admission.Frame) {}
		}
		e, err := New(Config{Loops: 1, Codec: protocol.Delimited{}, Admission: pol}, HandlerFuncs{})
		if err != nil {
			t.Fatal(err)
		}
		s := loopStage(e)
		l := e.loops[0]
		ms := int64(time.Millisecond)
		now := e.clock()
		l.now = now
		s.busy.Set(true) // overloaded: reads are deferred past C
		// c's last draining read was 200 ms ago; this turn's events report
		// it, and the previous wait returned 5 ms ago (the loop was busy
		// since).
		c := &Conn{loop: l, fd: 7}
		a := &connStage{drainedAt: now - 200*ms, flags: sFresh}
		s.track(c, a)
		s.evBound = now - 5*ms
		if s.beforeRead(c, true) || a.flags&sSlow == 0 || c.flags&fDeferred == 0 {
			t.Fatalf("classes %v: a connection whose bytes may be %v old (C %v) was not deferred", classes, 5*time.Millisecond, time.Duration(s.caps.Short()))
		}
		want := now - 5*ms
		if !classes {
			want = now - 200*ms
		}
		if got := s.arrivalBound(a, false); got != want {
			t.Errorf("classes %v: after the deferral the bound is %v ago, want %v ago",
				classes, time.Duration(now-got), time.Duration(now-want))
		}
		if !classes {
			continue
		}
		if age, limit := now+s.rejDelay-s.arrivalBound(a, false), s.caps.Long(); age > limit {
			t.Errorf("read off the slow list, a critical frame is %v old, past L %v", time.Duration(age), time.Duration(limit))
		}
	}
}

// TestNoLongParksInRecvMode: with derived shedding, the stage's long parks
// are on with epoll and off in io_uring's recv mode, where the recv armed
// before a park brings the connection's bytes anyway (a park saves no
// read) and bytes the kernel kept during a long park were judged fresh
// when the recv was armed again.
func TestNoLongParksInRecvMode(t *testing.T) {
	for _, b := range []Backend{BackendEpoll, BackendIOURing} {
		t.Run(b.String(), func(t *testing.T) {
			adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1, CoDel: &admission.CoDelConfig{}})
			e := start(t, Config{Loops: 1, Backend: b, Codec: protocol.Delimited{}, Admission: AdmissionPolicy{Admitter: adm}}, newTestHandler())
			c := dialLine(t, e.Addr().String(), nil)
			fmt.Fprint(c, "x\n")
			if got := c.line(t); got != "x" { // the loop runs: its backend is attached
				t.Fatalf("echo: %q", got)
			}
			recv := e.Backend() == BackendIOURing
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := e.Shutdown(ctx); err != nil { // the loop has exited: its stage may be read
				t.Fatal(err)
			}
			if got := loopStage(e).parksLong(); got == recv {
				t.Errorf("%v backend: long parks %v, want %v", e.Backend(), got, !recv)
			}
		})
	}
}

// TestChargeReadBytes: with ChargeReadBytes a tenant's bytes are charged
// as they are read; the read that passes the quota has its frames refused
// with reason tenant and a retry-after, the connection is not read again
// before that has passed (the loop sleeping meanwhile), and then it is
// served again.
func TestChargeReadBytes(t *testing.T) {
	tl, err := admission.NewTenantLimiter(admission.TenantConfig{
		Quota: admission.Quota{Count: 100, Per: time.Second, Burst: 100}}) // 100 bytes/s, burst 100
	if err != nil {
		t.Fatal(err)
	}
	adm := newAdmitter(t, admission.Config{Tenants: tl, MemoryLimitBytes: -1})
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{}, Admission: AdmissionPolicy{Admitter: adm, ChargeReadBytes: true}}, newTestHandler())
	c := dialLine(t, e.Addr().String(), nil)
	for i := 0; i < 10; i++ { // 10 × 10 bytes: the whole burst, in one or more reads
		fmt.Fprintf(c, "frame%04d\n", i)
		if got := c.line(t); got != fmt.Sprintf("frame%04d", i) {
			t.Fatalf("within the burst: %q", got)
		}
	}
	t0 := time.Now()
	fmt.Fprint(c, "over00000\n") // 10 more bytes: over the quota
	got := c.line(t)
	reason, retry, ok := protocol.ParseRejectText([]byte(got))
	if !ok || reason != "tenant" || retry <= 0 || retry > time.Second {
		t.Fatalf("over the quota: %q, want a tenant reject with a retry-after in (0, 1s]", got)
	}
	turns0 := e.Stats().Turns
	fmt.Fprint(c, "later0000\n") // read only once the quota has room for it again
	if got := c.line(t); got != "later0000" {
		t.Fatalf("after the retry-after: %q", got)
	}
	if waited := time.Since(t0); waited < retry-20*time.Millisecond {
		t.Errorf("served again after %v, before the retry-after %v", waited, retry)
	}
	// parked for the quota with nothing else to do, the loop sleeps until
	// the park is due (it spun before: 198,169 turns in 100 ms)
	if turns, waited := e.Stats().Turns-turns0, time.Since(t0); turns > 1000 {
		t.Errorf("%d turns in the %v the connection was parked for its quota, want the loop asleep", turns, waited)
	}
	if s := e.Stats(); s.Admission.Rejects[admission.ReasonTenant] == 0 {
		t.Error("no tenant rejects counted")
	}
	if _, err := New(Config{Loops: 1, Admission: AdmissionPolicy{Admitter: adm, ChargeReadBytes: true, CostBytes: true}}, HandlerFuncs{}); err == nil {
		t.Error("New accepted ChargeReadBytes with CostBytes")
	}
}
