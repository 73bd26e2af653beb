package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/admission/shed"
	"github.com/sluicenet/sluice/protocol"
)

// TestPoolCoDel: under a standing queue the pool sheds with reason
// "codel", cheaply, and every frame is answered.
func TestPoolCoDel(t *testing.T) {
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{},
		Pool: PoolConfig{Handler: &poolHandler{}, Workers: 1, QueueLen: 512, Unordered: true, // one connection fills the queue
			CoDel: &admission.CoDelConfig{Target: 2 * time.Millisecond, Interval: 20 * time.Millisecond}}}, newTestHandler())
	c := dial(t, e)
	c.SetDeadline(time.Now().Add(20 * time.Second))
	t0 := time.Now()
	served, shed := poolBurst(t, c)
	t.Logf("served %d, shed %d in %v", served, shed, time.Since(t0))
	if shed == 0 || served == 0 {
		t.Errorf("served %d, shed %d: want both", served, shed)
	}
}

// TestPoolDerivedCoDel: a pool CoDel with a zero Target follows the
// workers' service time (10 ms frames: the cap C = 2·S comes to about
// 20 ms), sheds a standing queue with reason "codel", and answers every
// frame.
func TestPoolDerivedCoDel(t *testing.T) {
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{},
		Pool: PoolConfig{Handler: &poolHandler{}, Workers: 1, QueueLen: 512, Unordered: true, // one connection fills the queue
			CoDel: &admission.CoDelConfig{Interval: 20 * time.Millisecond}}}, newTestHandler())
	if c, _ := e.pool.derived(); c != time.Duration(shed.PoolMinCap) {
		t.Fatalf("cap before any measurement %v, want the floor", c)
	}
	c := dial(t, e)
	c.SetDeadline(time.Now().Add(20 * time.Second))
	served, refused := poolBurst(t, c)
	a := e.Stats().Admission
	t.Logf("served %d, shed %d; cap %v, service %v", served, refused, a.QueueDelayCap, a.ServiceTime)
	if refused == 0 || served == 0 {
		t.Errorf("served %d, shed %d: want both", served, refused)
	}
	if a.ServiceTime < 5*time.Millisecond || a.QueueDelayCap < shed.CapPerService*a.ServiceTime*9/10 || a.QueueDelayCap > shed.CapPerService*a.ServiceTime*11/10+time.Millisecond {
		t.Errorf("service %v, cap %v: want about 10 ms and %d× it", a.ServiceTime, a.QueueDelayCap, shed.CapPerService)
	}
}

// poolBurst offers c 200 frames of 10 ms each at once (2 s of service
// without shedding) and counts the answers: served, or refused with reason
// "codel" (any other reason is an error).
func poolBurst(t *testing.T, c net.Conn) (served, shed int) {
	t.Helper()
	const n = 200 // 200 × 10 ms of service offered at once: 2 s without shedding
	var req bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&req, "1-%d\n", i)
	}
	c.Write(req.Bytes())
	r := bufio.NewReader(c)
	for i := 0; i < n; i++ {
		s, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if reason, _, ok := protocol.ParseRejectText([]byte(strings.TrimSpace(s))); ok {
			if reason != "codel" {
				t.Errorf("reason %q", reason)
			}
			shed++
		} else {
			served++
		}
	}
	return served, shed
}

// barePool returns a pool with CoDel cd and no workers, for take to be
// called directly, and its engine's clock reading.
func barePool(t *testing.T, cd *admission.CoDelConfig) (*pool, int64) {
	t.Helper()
	e := &Engine{start: time.Now()}
	e.cfg.Pool = PoolConfig{Handler: &poolHandler{}, QueueLen: 8, CoDel: cd}
	e.cfg.Pool = e.cfg.Pool.withDefaults()
	p, err := newPool(e)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.cancel)
	return p, e.clock()
}

// queueTasks appends tasks to p's queue as submit would, as normal frames.
func queueTasks(p *pool, tasks ...poolTask) {
	queueClass(p, admission.PriorityNormal, tasks...)
}

// queueClass appends tasks of priority prio to p's queue as submit would.
func queueClass(p *pool, prio admission.Priority, tasks ...poolTask) {
	r := &p.rings[prio]
	if r.q == nil {
		r.q = make([]poolTask, p.cfg.QueueLen)
	}
	for _, tk := range tasks {
		tk.prio = prio
		r.push(tk)
		p.n++
	}
}

// overloadCoDel has p's CoDel see an interval whose minimum sojourn
// (30 ms) is above its target, ending before now.
func overloadCoDel(t *testing.T, p *pool, now int64) {
	t.Helper()
	ms := int64(time.Millisecond)
	p.codel.Dequeue(p.e.timeAt(now-60*ms), p.e.timeAt(now-90*ms))
	p.codel.Dequeue(p.e.timeAt(now-40*ms), p.e.timeAt(now-70*ms))
	if !p.codel.ServeNewestFirst() {
		t.Fatal("CoDel not overloaded")
	}
}

// TestPoolNewestFirst: while CoDel reports a standing queue, a worker takes
// the newest frame; otherwise the oldest.
func TestPoolNewestFirst(t *testing.T) {
	cd := &admission.CoDelConfig{Target: time.Millisecond, Interval: 10 * time.Millisecond}
	p, now := barePool(t, cd)
	queueTasks(p, poolTask{fd: 1, enq: now}, poolTask{fd: 2, enq: now})
	if tk, _, _ := p.take(); tk.fd != 1 {
		t.Fatalf("not overloaded: took %d, want the oldest (1)", tk.fd)
	}
	// a fresh pool whose CoDel saw an interval with a minimum sojourn (30 ms)
	// above the target
	p, now = barePool(t, cd)
	overloadCoDel(t, p, now)
	now = p.e.clock()
	queueTasks(p, poolTask{fd: 1, enq: now}, poolTask{fd: 2, enq: now}, poolTask{fd: 3, enq: now})
	for _, want := range []int32{3, 2, 1} {
		if tk, _, _ := p.take(); tk.fd != want {
			t.Fatalf("overloaded: took %d, want the newest (%d)", tk.fd, want)
		}
	}
}

// TestPoolNewestFirstExpiresOldest: while CoDel reports a standing queue,
// the oldest frame is taken first once it has waited past CoDel's
// threshold (twice the target), and refused (adaptive LIFO's short
// timeout), before the newest is served.
func TestPoolNewestFirstExpiresOldest(t *testing.T) {
	p, now := barePool(t, &admission.CoDelConfig{Target: time.Millisecond, Interval: 10 * time.Millisecond})
	overloadCoDel(t, p, now)
	ms := int64(time.Millisecond)
	queueTasks(p, poolTask{fd: 1, enq: now - 50*ms}, poolTask{fd: 2, enq: now}, poolTask{fd: 3, enq: now})
	tk, v, _ := p.take()
	if tk.fd != 1 || v.Admit || v.Reason != admission.ReasonCoDel {
		t.Fatalf("took %d (admit %v, reason %v), want the stale oldest (1) refused for codel", tk.fd, v.Admit, v.Reason)
	}
	if tk, v, _ = p.take(); tk.fd != 3 || !v.Admit {
		t.Fatalf("took %d (admit %v), want the newest (3) admitted", tk.fd, v.Admit)
	}
}

// TestPoolOrderedSheds: the ordered pool under a standing queue (one
// worker, 10 ms per frame, four connections offering 40 frames each at
// once: 1.6 s of work) refuses frames for codel instead of serving them
// all, answers every frame once and in request order, and its backlog
// count (connections holding input behind a frame in the pool) returns to
// zero once they are done.
func TestPoolOrderedSheds(t *testing.T) {
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{},
		Pool: PoolConfig{Handler: &poolHandler{}, Workers: 1,
			CoDel: &admission.CoDelConfig{Target: 2 * time.Millisecond, Interval: 20 * time.Millisecond}}}, newTestHandler())
	const conns, n = 4, 40
	var wg sync.WaitGroup
	var served, shed atomic.Int64
	t0 := time.Now()
	for k := 0; k < conns; k++ {
		c := dial(t, e)
		c.SetDeadline(time.Now().Add(20 * time.Second))
		var req bytes.Buffer
		for i := 0; i < n; i++ {
			fmt.Fprintf(&req, "1-%d\n", i)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Write(req.Bytes())
			r := bufio.NewReader(c)
			last := -1
			for i := 0; i < n; i++ {
				s, err := r.ReadString('\n')
				if err != nil {
					t.Errorf("answer %d: %v", i, err)
					return
				}
				s = strings.TrimSpace(s)
				if reason, _, ok := protocol.ParseRejectText([]byte(s)); ok {
					if reason != "codel" {
						t.Errorf("reason %q", reason)
					}
					shed.Add(1)
					continue
				}
				var j int
				if _, err := fmt.Sscanf(s, "1-%d", &j); err != nil || j <= last {
					t.Errorf("answer %d: %q after frame %d: out of order or unknown", i, s, last)
				}
				last = j
				served.Add(1)
			}
		}()
	}
	wg.Wait()
	t.Logf("served %d, shed %d in %v", served.Load(), shed.Load(), time.Since(t0))
	if served.Load() == 0 || shed.Load() == 0 || served.Load()+shed.Load() != conns*n {
		t.Errorf("served %d, shed %d of %d: want both, every frame answered once", served.Load(), shed.Load(), conns*n)
	}
	if served.Load() >= conns*n/2 { // 1.6 s of work against a 2 ms target: most frames wait far past it
		t.Errorf("served %d of %d: the standing queue was not shed", served.Load(), conns*n)
	}
	waitUntil(t, 5*time.Second, "pool backlog back to zero", func() bool { return e.pool.backlog.Load() == 0 })
}

// TestPoolLongCap: with a derived CoDel target the pool refuses a frame
// that waited past the long cap (8 × the pool's C) with
// reason queue, though CoDel has not judged the queue overloaded, and
// admits a fresh one; with a fixed target it has no long cap, and before
// the pool has served a frame neither (TestPoolFirstFrameNoLongCap).
func TestPoolLongCap(t *testing.T) {
	for _, derived := range []bool{true, false} {
		cd := &admission.CoDelConfig{Interval: 100 * time.Millisecond}
		if !derived {
			cd.Target = 750 * time.Microsecond // what the derived one starts at
		}
		p, now := barePool(t, cd)
		if derived { // as after serving frames of 100 µs: C at the floor (0.7 ms), long cap 8·C
			p.caps.Observe(int64(100 * time.Microsecond))
			p.deriveLocked()
		}
		ms := int64(time.Millisecond)
		queueTasks(p, poolTask{fd: 1, enq: now - 50*ms}, poolTask{fd: 2, enq: now})
		tk, v, _ := p.take()
		if p.codel.Overloaded() {
			t.Fatal("CoDel judged one sojourn overloaded")
		}
		switch {
		case tk.fd != 1:
			t.Fatalf("derived %v: took %d, want the oldest (1)", derived, tk.fd)
		case derived && (v.Admit || v.Reason != admission.ReasonQueue):
			t.Errorf("derived: 50 ms in the queue against a long cap of %v: admit %v, reason %v; want refused for queue", time.Duration(p.capLong()), v.Admit, v.Reason)
		case !derived && !v.Admit:
			t.Errorf("fixed target: refused (%v) without a standing queue", v.Reason)
		}
		if tk, v, _ = p.take(); tk.fd != 2 || !v.Admit {
			t.Errorf("derived %v: took %d (admit %v), want the fresh frame (2) admitted", derived, tk.fd, v.Admit)
		}
	}
}

// TestPoolFirstFrameNoLongCap: before the pool has served a frame (no
// service time measured) a frame that waited through a long start-up
// stall is not refused for the long cap.
func TestPoolFirstFrameNoLongCap(t *testing.T) {
	p, now := barePool(t, &admission.CoDelConfig{Interval: 100 * time.Millisecond})
	queueTasks(p, poolTask{fd: 1, enq: now - int64(200*time.Millisecond)})
	if tk, v, _ := p.take(); tk.fd != 1 || !v.Admit {
		t.Errorf("took %d (admit %v, reason %v), want the first frame admitted", tk.fd, v.Admit, v.Reason)
	}
}

// TestPoolPredictedWait: with a derived target, a frame whose time in the
// pool would pass the pool's cap C (twice the target) by Little's law, its
// wait (the frames queued ahead of it and one in service, times the
// service time, over the workers) plus its own service, is refused at
// submit (predictedLong); an empty queue always takes one; a fixed
// target, or no service time yet, predicts nothing. A frame held on its
// loop past C gives way to a newer one of its connection (heldLong).
func TestPoolPredictedWait(t *testing.T) {
	p, now := barePool(t, &admission.CoDelConfig{Interval: 100 * time.Millisecond})
	p.cfg.Workers = 1
	if p.predictedLong(admission.PriorityNormal) {
		t.Fatal("predicted a long wait before any frame was served")
	}
	// Frames of S = C/5, C at the floor: with one worker a frame's time in
	// the pool is (n+1)·S + S behind n queued frames and one in service.
	svc := shed.PoolMinCap / 5
	p.caps.Observe(svc)
	p.deriveLocked()
	if c := int64(p.shedAfter()); c != shed.PoolMinCap {
		t.Fatalf("C %v for S %v, want the floor %v", time.Duration(c), time.Duration(svc), time.Duration(shed.PoolMinCap))
	}
	for n := int64(0); n <= 6; n++ {
		want := n > 0 && (n+1)*svc+svc > shed.PoolMinCap // in the pool against C: from n = 4 on
		if got := p.predictedLong(admission.PriorityNormal); got != want {
			t.Errorf("%d queued of C/5, one worker: predictedLong %v, want %v", n, got, want)
		}
		queueTasks(p, poolTask{fd: int32(n), enq: now})
	}
	p.cfg.Workers = 2 // twice the workers: the same queue waits half as long
	if p.predictedLong(admission.PriorityNormal) {
		t.Errorf("7 queued of C/5 over 2 workers (0.8·C of wait, C in the pool) predicted past C")
	}
	queueTasks(p, poolTask{fd: 7, enq: now})
	if !p.predictedLong(admission.PriorityNormal) {
		t.Errorf("8 queued of C/5 over 2 workers (0.9·C of wait, 1.1·C in the pool) not predicted past C")
	}
	// A frame held on its loop past C yields to a newer one (heldLong).
	lo, hi := shed.PoolMinCap*14/15, shed.PoolMinCap*16/15
	if p.heldLong(lo) || !p.heldLong(hi) {
		t.Errorf("heldLong at %v %v, at %v %v; want false, true (C = %v)", time.Duration(lo), p.heldLong(lo), time.Duration(hi), p.heldLong(hi), time.Duration(shed.PoolMinCap))
	}
	fixed, _ := barePool(t, &admission.CoDelConfig{Target: 750 * time.Microsecond, Interval: 100 * time.Millisecond})
	fixed.caps.Observe(int64(time.Millisecond))
	queueTasks(fixed, poolTask{fd: 1}, poolTask{fd: 2}, poolTask{fd: 3})
	if fixed.predictedLong(admission.PriorityNormal) || fixed.heldLong(int64(time.Second)) {
		t.Error("a fixed target predicted a long wait, or judged a held frame")
	}
}

// TestPoolRejectFlushDelay: a loop whose worker pool derives its CoDel
// target holds refusals back (RejectFlushDelay's 10 ms default), as a loop
// with the derived queueing-delay cap does; with a fixed pool target, or
// Off, it writes them at once.
func TestPoolRejectFlushDelay(t *testing.T) {
	stageOf := func(pool *admission.CoDelConfig, rfd time.Duration) *stage {
		t.Helper()
		adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1})
		e, err := New(Config{Loops: 1, Codec: protocol.Delimited{},
			Admission: AdmissionPolicy{Admitter: adm, RejectFlushDelay: rfd},
			Pool:      PoolConfig{Handler: &poolHandler{}, CoDel: pool}}, HandlerFuncs{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.pool.cancel)
		return loopStage(e)
	}
	if s := stageOf(&admission.CoDelConfig{}, 0); s.rejDelay != shed.DerivedRejectFlush || !s.perConn {
		t.Errorf("derived pool target: rejDelay %v perConn %v, want %v and per-connection state",
			time.Duration(s.rejDelay), s.perConn, time.Duration(shed.DerivedRejectFlush))
	}
	if s := stageOf(&admission.CoDelConfig{}, 30*time.Millisecond); s.rejDelay != int64(30*time.Millisecond) ||
		s.lazy[0].hold != s.rejDelay || s.lazy[1].hold != s.rejDelay {
		t.Errorf("RejectFlushDelay 30ms: reads deferred %v, refusals held %v or %v, want 30ms for all",
			time.Duration(s.rejDelay), time.Duration(s.lazy[0].hold), time.Duration(s.lazy[1].hold))
	}
	if s := stageOf(&admission.CoDelConfig{Target: time.Millisecond}, 0); s.rejDelay != 0 {
		t.Errorf("fixed pool target: rejDelay %v, want 0", time.Duration(s.rejDelay))
	}
	if s := stageOf(&admission.CoDelConfig{}, Off); s.rejDelay != 0 {
		t.Errorf("Off: rejDelay %v, want 0", time.Duration(s.rejDelay))
	}
}

// TestPoolPriorities: with a derived target the pool serves the most
// urgent class first and caps each class as the loop does: under a
// standing queue a critical frame is refused only past the long cap, a
// best-effort one past C/2, a normal one past C; a frame's predicted wait
// counts only its class and the more urgent ones, against its own cap; a
// less urgent frame past its cap is taken first, to be refused, rather
// than left waiting behind the more urgent ones.
func TestPoolPriorities(t *testing.T) {
	crit, norm, be := admission.PriorityCritical, admission.PriorityNormal, admission.PriorityBestEffort
	derivedPool := func() (*pool, int64) {
		p, _ := barePool(t, &admission.CoDelConfig{Interval: 10 * time.Millisecond})
		p.cfg.Workers = 1
		p.caps.Observe(shed.PoolMinCap / 5) // C at its floor, the long cap 8·C
		p.deriveLocked()
		return p, p.e.clock()
	}
	p, now := derivedPool()
	queueClass(p, be, poolTask{fd: 1, enq: now})
	queueClass(p, norm, poolTask{fd: 2, enq: now})
	queueClass(p, crit, poolTask{fd: 3, enq: now})
	for _, want := range []int32{3, 2, 1} {
		if tk, v, _ := p.take(); tk.fd != want || !v.Admit {
			t.Fatalf("took %d (admit %v), want %d: the most urgent class first", tk.fd, v.Admit, want)
		}
	}

	p, now = derivedPool()
	c := int64(p.shedAfter())
	capLong := p.capLong()
	overloadCoDel(t, p, now)
	now = p.e.clock()
	for _, tc := range []struct {
		prio  admission.Priority
		wait  int64
		admit bool
	}{
		{crit, 2 * c, true},        // past C, within the long cap
		{crit, capLong + c, false}, // past the long cap
		{norm, c / 2, true},
		{norm, 2 * c, false}, // past C
		{be, c / 4, true},
		{be, c * 3 / 4, false}, // past C/2
		{norm, capLong + c, false},
		{be, capLong + c, false},
		{be, 0, true},
	} {
		if v := p.judge(now, now-tc.wait, tc.prio); v.Admit != tc.admit {
			t.Errorf("%v frame that waited %v under a standing queue (C %v, long cap %v): admit %v, want %v",
				tc.prio, time.Duration(tc.wait), time.Duration(c), time.Duration(capLong), v.Admit, tc.admit)
		}
		if p.stale(tc.wait, tc.prio) == tc.admit {
			t.Errorf("%v frame that waited %v: stale %v, want %v", tc.prio, time.Duration(tc.wait), !tc.admit, !tc.admit)
		}
	}

	// predicted waits: S = C/5 and one worker, so a frame's time in the
	// pool behind n frames ahead is (n+1)·S + S
	p, now = derivedPool()
	queueClass(p, norm, poolTask{fd: 1, enq: now}, poolTask{fd: 2, enq: now}, poolTask{fd: 3, enq: now}, poolTask{fd: 4, enq: now})
	if !p.predictedLong(norm) {
		t.Error("normal frame behind 4 normal ones (6·S against C = 5·S) not predicted past C")
	}
	if p.predictedLong(crit) {
		t.Error("critical frame predicted past its cap behind normal frames only")
	}
	p, now = derivedPool()
	queueClass(p, norm, poolTask{fd: 1, enq: now})
	if !p.predictedLong(be) {
		t.Error("best-effort frame behind a normal one (3·S against C/2) not predicted past its cap")
	}
	if p.predictedLong(norm) {
		t.Error("normal frame behind a normal one (3·S against C = 5·S) predicted past C")
	}
	queueClass(p, be, poolTask{fd: 2, enq: now}, poolTask{fd: 3, enq: now}, poolTask{fd: 4, enq: now}, poolTask{fd: 5, enq: now})
	if p.predictedLong(norm) {
		t.Error("normal frame predicted past C behind best-effort frames, which it goes before")
	}

	// a best-effort frame past C/2 behind a normal one is taken first, and refused
	p, now = derivedPool()
	overloadCoDel(t, p, now)
	now = p.e.clock()
	queueClass(p, norm, poolTask{fd: 1, enq: now})
	queueClass(p, be, poolTask{fd: 2, enq: now - c})
	if tk, v, _ := p.take(); tk.fd != 2 || v.Admit {
		t.Errorf("took %d (admit %v), want the stale best-effort frame (2) refused", tk.fd, v.Admit)
	}
	if tk, v, _ := p.take(); tk.fd != 1 || !v.Admit {
		t.Errorf("took %d (admit %v), want the normal frame (1) admitted", tk.fd, v.Admit)
	}
}

// spinPoolHandler burns work of CPU per frame on a worker, then echoes it.
type spinPoolHandler struct{ work time.Duration }

func (h spinPoolHandler) ServeFrame(_ context.Context, c *Conn, frame []byte) Action {
	busyFor(h.work)
	c.WriteFrame(frame)
	return None
}

// TestPoolCriticalFirst: the worker pool under overload, with a derived
// CoDel target and Classify, serves a critical connection within capacity
// while two best-effort ones offer four times it; every frame is answered,
// and the pool counts its refusals by priority. Served alike, the critical
// frames would get about the best-effort ones' share (20-25% at 5x by
// hand).
func TestPoolCriticalFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("1 s of load")
	}
	adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1})
	classify := func(_ *Conn, frame []byte, f *admission.Frame) {
		if bytes.HasPrefix(frame, []byte("c")) {
			f.Priority = admission.PriorityCritical
		} else {
			f.Priority = admission.PriorityBestEffort
		}
	}
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{},
		Admission: AdmissionPolicy{Admitter: adm, Classify: classify},
		Pool:      PoolConfig{Handler: spinPoolHandler{500 * time.Microsecond}, Workers: 1, QueueLen: 64, CoDel: &admission.CoDelConfig{}}},
		newTestHandler()) // capacity about 2,000 frames/s
	const run = time.Second
	type client struct {
		frame                 string
		every                 time.Duration
		sent, served, refused atomic.Int64
	}
	clients := []*client{
		{frame: "c\n", every: 2500 * time.Microsecond}, // 400/s
		{frame: "b\n", every: 250 * time.Microsecond},  // 4,000/s each
		{frame: "b\n", every: 250 * time.Microsecond},
	}
	stop := time.Now().Add(run)
	var wg sync.WaitGroup
	for i, cl := range clients {
		c := dialLine(t, e.Addr().String(), nil)
		c.SetDeadline(time.Now().Add(run + 10*time.Second))
		wg.Add(2)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(cl.every)
			defer tick.Stop()
			for time.Now().Before(stop) {
				<-tick.C
				if _, err := c.Write([]byte(cl.frame)); err != nil {
					t.Error(err)
					break
				}
				cl.sent.Add(1)
			}
			doneSending(&cl.sent)
		}()
		go func() {
			defer wg.Done()
			readAnswers(t, fmt.Sprintf("client %d", i), c, &cl.sent, &cl.served, &cl.refused)
		}()
	}
	wg.Wait()
	share := func(cl *client) float64 {
		return float64(cl.served.Load()) / float64(max(1, cl.served.Load()+cl.refused.Load()))
	}
	crit, be := share(clients[0]), (share(clients[1])+share(clients[2]))/2
	ps := e.Stats().Admission.Pool
	t.Logf("critical served %.0f%% of %d, best-effort %.0f%%; pool refusals by reason %v, by priority %v",
		100*crit, clients[0].served.Load()+clients[0].refused.Load(), 100*be, ps.Rejects, ps.RejectsByPriority)
	if crit < 0.5 || crit < 3*be {
		t.Errorf("critical frames served %.0f%%, best-effort %.0f%%: want critical first", 100*crit, 100*be)
	}
	var byReason, byPrio uint64
	for _, n := range ps.Rejects {
		byReason += n
	}
	for _, n := range ps.RejectsByPriority {
		byPrio += n
	}
	if ps.RejectsByPriority[admission.PriorityBestEffort] == 0 || byPrio != byReason {
		t.Errorf("pool refusals by priority %v (%d), by reason %v (%d): want best-effort ones, the same total", ps.RejectsByPriority, byPrio, ps.Rejects, byReason)
	}
}

// TestPoolFairShare: TestFairShareBetweenTenants with the work on the
// worker pool (one worker, unordered, a derived CoDel target) and no CoDel
// on the loops: the pool shares what it serves by tenant. The light
// tenants' ticks are spread over their period: the pool's queue holds
// about C = 2·S of work, and nine frames at once left it refusing most of
// them while its worker idled 60% of the time (in 2 runs of 3).
func TestPoolFairShare(t *testing.T) {
	if testing.Short() {
		t.Skip("2 s of load")
	}
	adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1})
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{}, Admission: AdmissionPolicy{Admitter: adm},
		Pool: PoolConfig{Handler: spinPoolHandler{500 * time.Microsecond}, Workers: 1, QueueLen: 64, Unordered: true, CoDel: &admission.CoDelConfig{}}},
		newTestHandler()) // capacity about 2,000 frames/s
	tenantShares(t, e, true, func(e *Engine) uint64 { return e.Stats().Admission.Pool.Rejects[admission.ReasonFair] })
}
