package server

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/admission/shed"
	"github.com/sluicenet/sluice/protocol"
)

// TestDerivedCapsByPriority: with MaxQueueDelay zero the stage derives its
// caps from the service time (C = 2·S in [0.7 ms, 1 s], L = max(8·C,
// C + 2·RejectFlushDelay), CoDel's target C/2), applies L to every frame
// until a window in which the loop was busy 95% of the time or more (a
// standing queue), and then C to normal frames, C/2 to best-effort ones and
// L to critical ones, until a window busy less than 85% of the time. A fixed MaxQueueDelay and Off
// keep the old meaning.
func TestDerivedCapsByPriority(t *testing.T) {
	newLoopStage := func(p AdmissionPolicy) *stage {
		t.Helper()
		e, err := New(Config{Loops: 1, Codec: protocol.Delimited{}, Admission: p}, HandlerFuncs{})
		if err != nil {
			t.Fatal(err)
		}
		return loopStage(e)
	}
	codel := func() *admission.Admitter {
		return newAdmitter(t, admission.Config{MemoryLimitBytes: -1, CoDel: &admission.CoDelConfig{Interval: 10 * time.Millisecond}})
	}
	s := newLoopStage(AdmissionPolicy{Admitter: codel()})
	if !s.auto || !s.timed || s.rejDelay != shed.DerivedRejectFlush || !s.slowReads {
		t.Fatalf("derived stage: auto %v timed %v rejDelay %v slowReads %v", s.auto, s.timed, s.rejDelay, s.slowReads)
	}
	if !s.longPark {
		t.Fatal("derived stage without Classify: no long parks")
	}
	if newLoopStage(AdmissionPolicy{Admitter: codel(), Classify: func(*Conn, []byte, *admission.Frame) {}}).longPark {
		t.Fatal("derived stage with Classify: long parks, which would hold critical frames past L")
	}
	if s.lazy[0].hold != shed.DerivedRejectFlush || s.lazy[1].hold != shed.LongHold {
		t.Fatalf("derived stage: refusals held %v or %v, want %v and %v",
			time.Duration(s.lazy[0].hold), time.Duration(s.lazy[1].hold),
			time.Duration(shed.DerivedRejectFlush), time.Duration(shed.LongHold))
	}
	ms := int64(time.Millisecond)
	noState := &Conn{fd: -1} // a connection the stage keeps no state for: never light
	check := func(p admission.Priority, want int64, wantReason admission.Reason) {
		t.Helper()
		if got, r := s.delayCap(noState, p); got != want || r != wantReason {
			t.Errorf("%v: cap %v (%v), want %v (%v)", p, time.Duration(got), r, time.Duration(want), wantReason)
		}
	}
	// No measurement yet: C is the floor, L = C + 2 × 10 ms.
	if s.caps.Short() != shed.LoopMinCap || s.caps.Long() != shed.LoopMinCap+20*ms || s.overloaded() {
		t.Fatalf("initial caps C %v L %v overloaded %v", time.Duration(s.caps.Short()), time.Duration(s.caps.Long()), s.overloaded())
	}
	check(admission.PriorityNormal, shed.LoopMinCap+20*ms, admission.ReasonQueue)
	// Handlers now take 2 ms: C follows to 2 × 2 ms, L to 8 × C.
	for i := 0; i < 200; i++ {
		s.admitAt = s.e.clock() - 2*ms
		s.afterFrame()
	}
	if c := s.caps.Short(); c < shed.CapPerService*2*ms*7/8 || c > shed.CapPerService*2*ms*9/8 || s.caps.Long() != shed.LongCapFactor*c {
		t.Fatalf("after 2 ms handlers: C %v L %v", time.Duration(c), time.Duration(s.caps.Long()))
	}
	// A window in which the loop never slept: a standing queue. Then one
	// in which it slept half the time: not overloaded any more.
	l0 := s.v
	l0.now = s.busy.WindowEnd()
	l0.slept = false
	s.noteIdle()
	if !s.overloaded() {
		t.Fatal("a window without sleep not judged overloaded")
	}
	c, l := s.caps.Short(), s.caps.Long()
	check(admission.PriorityCritical, l, admission.ReasonCoDel)
	check(admission.PriorityNormal, c, admission.ReasonCoDel)
	check(admission.PriorityBestEffort, c/2, admission.ReasonCoDel)
	// Hysteresis: a window asleep 10% of the time (clients that paused)
	// keeps an overloaded loop overloaded; it would not have made a loop
	// that was not overloaded so (below).
	asleep := func(frac int64) {
		l0.now = s.busy.WindowEnd()
		l0.slept, l0.turnEnd = true, l0.now-(shed.BusyWindow*frac/100)
		s.noteIdle()
	}
	asleep(10)
	if !s.overloaded() {
		t.Fatal("an overloaded loop judged not overloaded after a window asleep 10% of the time")
	}
	check(admission.PriorityNormal, c, admission.ReasonCoDel)
	asleep(50)
	if s.overloaded() {
		t.Fatal("a window asleep half the time judged overloaded")
	}
	check(admission.PriorityNormal, l, admission.ReasonQueue)
	// Not judged overloaded, but busy without a sleep for longer than L:
	// a standing queue all the same, until the loop sleeps again. The
	// reads' deferral still follows the window.
	woke := l0.now
	l0.now = woke + l
	check(admission.PriorityNormal, l, admission.ReasonQueue)
	l0.now = woke + l + 1
	check(admission.PriorityNormal, c, admission.ReasonCoDel)
	check(admission.PriorityCritical, l, admission.ReasonCoDel)
	if got, _ := s.capFor(admission.PriorityNormal, s.overloaded()); s.overloaded() || got != l {
		t.Fatalf("a long busy period: overloaded %v, the deferral's cap %v, want false and %v", s.overloaded(), time.Duration(got), time.Duration(l))
	}
	l0.slept, l0.turnEnd = true, l0.now
	l0.now++
	s.noteIdle()
	check(admission.PriorityNormal, l, admission.ReasonQueue)
	asleep(10)
	if s.overloaded() {
		t.Fatal("a loop not overloaded judged overloaded after a window asleep 10% of the time")
	}
	asleep(3)
	if !s.overloaded() {
		t.Fatal("a window asleep 3% of the time not judged overloaded")
	}
	asleep(50)
	// Handlers back to fast: C returns to the floor.
	for i := 0; i < 200; i++ {
		s.admitAt = s.e.clock()
		s.afterFrame()
	}
	if s.caps.Short() != shed.LoopMinCap {
		t.Fatalf("after fast handlers C %v, want the floor", time.Duration(s.caps.Short()))
	}

	fixed := newLoopStage(AdmissionPolicy{Admitter: codel(), MaxQueueDelay: 3 * time.Millisecond})
	if fixed.auto || fixed.rejDelay != 0 || fixed.slowReads {
		t.Fatalf("fixed cap: auto %v rejDelay %v slowReads %v", fixed.auto, fixed.rejDelay, fixed.slowReads)
	}
	if got, r := fixed.delayCap(noState, admission.PriorityCritical); got != 3*ms || r != admission.ReasonQueue {
		t.Errorf("fixed cap: %v %v", time.Duration(got), r)
	}
	off := newLoopStage(AdmissionPolicy{Admitter: codel(), MaxQueueDelay: Off, RejectFlushDelay: Off})
	if off.auto || off.rejDelay != 0 {
		t.Fatalf("Off: auto %v rejDelay %v", off.auto, off.rejDelay)
	}
	if got, _ := off.delayCap(noState, admission.PriorityNormal); got != 0 {
		t.Errorf("Off: cap %v, want none", time.Duration(got))
	}
	if _, err := New(Config{Loops: 1, Admission: AdmissionPolicy{Admitter: codel(), MaxQueueDelay: -2}}, HandlerFuncs{}); err == nil {
		t.Error("MaxQueueDelay -2 accepted")
	}
}

// TestDerivedCapFollowsSlowdown: a handler that suddenly takes 100× longer
// (100 µs to 10 ms) under a burst is shed within a second with the derived
// caps alone (CoDel with its defaults, nothing else set: within the frames
// a second of the slow work would serve), the derived cap
// grows with the measured service time, and both come back when the
// handler is fast again. Every request is answered: served, or refused
// with a reason.
func TestDerivedCapFollowsSlowdown(t *testing.T) {
	adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1, CoDel: &admission.CoDelConfig{}})
	var work atomic.Int64
	work.Store(int64(100 * time.Microsecond))
	h := newTestHandler()
	h.frame = func(c *Conn, frame []byte) Action {
		busyFor(time.Duration(work.Load()))
		c.WriteFrame(frame)
		return None
	}
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{}, Admission: AdmissionPolicy{Admitter: adm}}, h)
	addr := e.Addr().String()

	// Closed loop, one request in flight per connection, n requests each;
	// returns served and refused (by reason) and when the first refusal came.
	type result struct {
		served, refused int
		reasons         map[string]int
		firstRefusal    time.Time
		servedFirst     int // served before the first refusal
	}
	drive := func(conns, n int, pipelined bool) result {
		var mu sync.Mutex
		res := result{reasons: map[string]int{}}
		var wg sync.WaitGroup
		for i := 0; i < conns; i++ {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := bufio.NewReader(c)
				var req bytes.Buffer
				send := func(j int) bool {
					req.Reset()
					fmt.Fprintf(&req, "%d\n", j)
					_, err := c.Write(req.Bytes())
					return err == nil
				}
				if pipelined {
					req.Reset()
					for j := 0; j < n; j++ {
						fmt.Fprintf(&req, "%d\n", j)
					}
					if _, err := c.Write(req.Bytes()); err != nil {
						t.Error(err)
						return
					}
				}
				for j := 0; j < n; j++ {
					if !pipelined && !send(j) {
						t.Error("write failed")
						return
					}
					line, err := r.ReadString('\n')
					if err != nil {
						t.Errorf("request %d: %v", j, err)
						return
					}
					line = strings.TrimSuffix(line, "\n")
					mu.Lock()
					if reason, _, ok := protocol.ParseRejectText([]byte(line)); ok {
						res.refused++
						res.reasons[reason]++
						if res.firstRefusal.IsZero() {
							res.firstRefusal = time.Now()
							res.servedFirst = res.served
						}
					} else if line == fmt.Sprint(j) {
						res.served++
					} else {
						t.Errorf("reply %q to request %d", line, j)
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return res
	}
	caps := func() (time.Duration, time.Duration) {
		a := e.Stats().Admission
		return a.QueueDelayCap, a.ServiceTime
	}

	// One connection, one request in flight: a frame waits behind none, so
	// its queueing delay is the turn's own, far below C's 0.7 ms floor at
	// any service time. (With two, the busy loop times a frame from the
	// previous turn's start, about 2·S, against CoDel's target C/2 = S: the
	// queue is judged standing, and a stall of the loop's thread of some
	// 0.4 ms on a shared CI machine under -race refused one frame of 200,
	// as C says it should; this is not the test of that.) A loop whose
	// core is taken by another process looks busy, and its frames wait:
	// with two CPU hogs beside it, one run in about 150 refused one frame
	// of the 200, and under make test's parallel packages on 2 vCPUs two
	// runs in a row refused one each on io_uring. So a run with refusals
	// is tried again, up to three runs, and the last must serve every
	// request.
	var fast result
	var capFast, svcFast time.Duration
	for try := 1; try <= 3; try++ {
		fast = drive(1, 200, false)
		capFast, svcFast = caps()
		t.Logf("fast (try %d): served %d refused %d %v; cap %v service %v", try, fast.served, fast.refused, fast.reasons, capFast, svcFast)
		if fast.refused == 0 {
			break
		}
	}
	if fast.refused != 0 || fast.served != 200 {
		t.Fatalf("closed loop at 100 µs: served %d refused %d %v, want every request served", fast.served, fast.refused, fast.reasons)
	}
	if svcFast <= 0 || capFast != min(max(shed.CapPerService*svcFast, time.Duration(shed.LoopMinCap)), time.Second) {
		t.Fatalf("cap %v for service time %v, want %d× it in [%v, 1s]", capFast, svcFast, shed.CapPerService, time.Duration(shed.LoopMinCap))
	}

	work.Store(int64(10 * time.Millisecond))
	switched := time.Now()
	slow := drive(8, 30, true) // 2.4 s of work offered at once
	t.Logf("slow: served %d refused %d %v in %v, first refusal after %v",
		slow.served, slow.refused, slow.reasons, time.Since(switched), slow.firstRefusal.Sub(switched))
	// The burst is shed within a few frames; requests one at a time then
	// give the service time average its samples of the slow handler.
	paced := drive(2, 10, false)
	capSlow, svcSlow := caps()
	t.Logf("slow, one at a time: served %d refused %d %v; cap %v service %v", paced.served, paced.refused, paced.reasons, capSlow, svcSlow)
	if slow.served+slow.refused != 240 || slow.refused == 0 || slow.served == 0 {
		t.Fatalf("burst at 10 ms: served %d refused %d, want both, 240 answers", slow.served, slow.refused)
	}
	if slow.servedFirst > 100 { // a second of the slow handler's work
		t.Errorf("%d frames served before the first refusal after the slowdown, want the burst shed within 100", slow.servedFirst)
	}
	if svcSlow < 2*time.Millisecond || capSlow < shed.CapPerService*svcSlow*9/10 {
		t.Errorf("after the slowdown: service %v cap %v, want the cap to follow a service time of several ms", svcSlow, capSlow)
	}

	work.Store(int64(100 * time.Microsecond))
	again := drive(2, 100, false)
	capAgain, svcAgain := caps()
	t.Logf("fast again: served %d refused %d; cap %v service %v", again.served, again.refused, capAgain, svcAgain)
	if capAgain >= capSlow || svcAgain >= svcSlow/4 {
		t.Errorf("after the handler sped up: cap %v service %v, want them back down from %v and %v", capAgain, svcAgain, capSlow, svcSlow)
	}
	if again.served < 190 {
		// The slow phase left the loop judged overloaded until a busy
		// window cools it (hysteresis), and a frame that waits behind the
		// other connection's and a turn may pass C meanwhile: with the
		// handlers' work scaled 2x (SLUICE_SPIN_SCALE=2), 12 of 200 were.
		// The judgement has cooled by a second run, which must serve them.
		again = drive(2, 100, false)
		t.Logf("fast again, second run: served %d refused %d %v", again.served, again.refused, again.reasons)
	}
	if again.served < 190 {
		t.Errorf("fast again: served %d of 200 (%v)", again.served, again.reasons)
	}
}

// TestShedOnQueueDelay: with a slow inline handler and a standing queue,
// CoDel on the loop (alone: MaxQueueDelay Off) refuses frames that waited too long (reason "codel")
// with cheap rejects, so the frames it does serve wait little.
func TestShedOnQueueDelay(t *testing.T) {
	adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1,
		CoDel: &admission.CoDelConfig{Target: 2 * time.Millisecond, Interval: 20 * time.Millisecond}})
	h := newTestHandler()
	h.frame = func(c *Conn, frame []byte) Action {
		busyFor(200 * time.Microsecond)
		c.WriteFrame(frame)
		return None
	}
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{}, MaxFramesPerTurn: 8,
		Admission: AdmissionPolicy{Admitter: adm, MaxQueueDelay: Off}}, h) // CoDel alone, not the derived caps
	const conns, per = 8, 400 // 3,200 frames × 200µs = 640 ms of work, sent at once
	var wg sync.WaitGroup
	var served, shed atomic.Int64
	for i := 0; i < conns; i++ {
		c := dialLine(t, e.Addr().String(), nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var req bytes.Buffer
			for j := 0; j < per; j++ {
				fmt.Fprintf(&req, "%d\n", j)
			}
			c.Write(req.Bytes())
			for j := 0; j < per; j++ {
				s := c.line(t)
				if reason, _, ok := protocol.ParseRejectText([]byte(s)); ok {
					if reason != "codel" {
						t.Errorf("reject reason %q", reason)
					}
					shed.Add(1)
				} else if s != fmt.Sprint(j) {
					t.Errorf("reply %q, want %d", s, j)
					return
				} else {
					served.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("served %d, shed %d (codel)", served.Load(), shed.Load())
	if shed.Load() == 0 || served.Load() == 0 {
		t.Errorf("served %d, shed %d: want both", served.Load(), shed.Load())
	}
}

// TestRejectsByPriority: the policy's refusals are counted by the frame's
// priority, which Classify sets.
func TestRejectsByPriority(t *testing.T) {
	tl, err := admission.NewTenantLimiter(admission.TenantConfig{Quota: admission.Quota{Count: 1, Per: time.Hour, Burst: 1}})
	if err != nil {
		t.Fatal(err)
	}
	adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1, Tenants: tl})
	classify := func(_ *Conn, frame []byte, f *admission.Frame) {
		if bytes.HasPrefix(frame, []byte("b")) {
			f.Priority = admission.PriorityBestEffort
		}
	}
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{}, Admission: AdmissionPolicy{Admitter: adm, Classify: classify}}, echoHandlerAlloc)
	c := dialLine(t, e.Addr().String(), nil)
	for _, req := range []string{"n1", "b1", "b2", "n2"} { // the first is admitted, the rest over the quota
		fmt.Fprintf(c, "%s\n", req)
		c.line(t)
	}
	want := [admission.NumPriorities]uint64{admission.PriorityNormal: 1, admission.PriorityBestEffort: 2}
	var got [admission.NumPriorities]uint64
	waitUntil(t, 5*time.Second, "refusals by priority", func() bool { // published at the end of the loop's turn
		got = e.Stats().Admission.RejectsByPriority
		return got == want
	})
}

// spinEchoEngine starts one loop with derived shedding and nothing else
// set (an Admitter with CoDel's defaults, no tenant quota) whose handler
// spins 500 µs per line and echoes it: capacity about 2,000 frames/s.
func spinEchoEngine(t *testing.T) *Engine { return spinEchoEngineClassify(t, nil) }

// spinEchoEngineClassify is spinEchoEngine with AdmissionPolicy.Classify.
func spinEchoEngineClassify(t *testing.T, classify func(*Conn, []byte, *admission.Frame)) *Engine {
	t.Helper()
	return spinEchoEnginePolicy(t, func(p *AdmissionPolicy) { p.Classify = classify })
}

// spinEchoEnginePolicy is spinEchoEngine with its AdmissionPolicy set by
// opt.
func spinEchoEnginePolicy(t *testing.T, opt func(*AdmissionPolicy)) *Engine {
	t.Helper()
	adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1, CoDel: &admission.CoDelConfig{}})
	h := newTestHandler()
	h.frame = func(c *Conn, frame []byte) Action {
		busyFor(500 * time.Microsecond)
		c.WriteFrame(frame)
		return None
	}
	// final refusals off: the hammers of these tests stay connected
	// (TestGoAway turns them on)
	pol := AdmissionPolicy{Admitter: adm, GoAwayAfter: Off}
	opt(&pol)
	return start(t, Config{Loops: 1, Codec: protocol.Delimited{}, Admission: pol}, h)
}

// TestFairShareBetweenTenants: ten tenants (peer addresses 127.0.0.2-11)
// on an overloaded loop with derived shedding and no tenant quota, one of
// them sending ten times more than each of the others: the heavy tenant
// gets no more than about the others' goodput (its fair share), where
// first come, first served would give it about half of the capacity.
func TestFairShareBetweenTenants(t *testing.T) {
	if testing.Short() {
		t.Skip("2 s of load")
	}
	tenantShares(t, spinEchoEngine(t), false, func(e *Engine) uint64 { // capacity about 2,000 frames/s
		return e.Stats().Admission.Rejects[admission.ReasonFair]
	})
}

// TestHammerCannotStarve: a client that ignores every refusal and writes
// as fast as the loop takes its frames, up to a window of its own (from
// its own address, so its own tenant), does not starve well-behaved
// clients (closed loop, one frame in flight, waiting out each
// retry-after) with derived shedding and nothing else set: each of them
// is served goodServedFrames frames while the hammer still writes, and the
// hammer is refused; a loop that refusing costs too much rations its
// reads (docs/OVERLOAD.md#rationed-reads). The hammer stops once every
// client has been served, so the test asserts counts, not a rate a slower
// machine may miss; a starved client fails it at the deadline.
func TestHammerCannotStarve(t *testing.T) {
	if testing.Short() {
		t.Skip("a hammering client")
	}
	// The hammer keeps at most hammerWindow frames unanswered: enough to
	// fill its socket buffers and the loop's input many times over, and a
	// backlog the loop refuses within the test's margin once it stops
	// (with four CPU hogs beside it, 680,000 frames sent and not yet read
	// outlasted a 10 s margin).
	const good, goodServedFrames, hammerWindow, deadline = 4, 20, 100_000, 60 * time.Second
	e := spinEchoEngine(t)
	var wg sync.WaitGroup
	var clientsDone atomic.Int32 // clients served goodServedFrames, or failed
	hammering := func() bool { return clientsDone.Load() < good }

	hammer := dialLine(t, e.Addr().String(), net.IPv4(127, 0, 0, 2))
	hammer.SetDeadline(time.Now().Add(deadline + 10*time.Second))
	var hSent, hServed, hRefused atomic.Int64
	batch := bytes.Repeat([]byte("h\n"), 64)
	wg.Add(2)
	var servedDuring atomic.Int64 // client frames served while the hammer was writing
	var writing atomic.Bool
	writing.Store(true)
	go func() { // writes as fast as the socket takes them, until every client is served
		defer wg.Done()
		defer writing.Store(false)
		for hammering() {
			if hSent.Load()-hServed.Load()-hRefused.Load() >= hammerWindow {
				time.Sleep(100 * time.Microsecond) // its own window is full
				continue
			}
			if _, err := hammer.Write(batch); err != nil {
				t.Error(err)
				break
			}
			hSent.Add(int64(len(batch) / 2))
		}
		doneSending(&hSent)
	}()
	go func() {
		defer wg.Done()
		readAnswers(t, "hammer", hammer, &hSent, &hServed, &hRefused)
	}()

	stop := time.Now().Add(deadline)
	var served, refused [good]atomic.Int64
	for i := 0; i < good; i++ {
		c := dialLine(t, e.Addr().String(), net.IPv4(127, 0, 0, byte(3+i)))
		c.SetDeadline(time.Now().Add(deadline + 10*time.Second))
		wg.Add(1)
		go func() { // closed loop: one frame, its answer, the retry-after if refused
			defer wg.Done()
			defer clientsDone.Add(1)
			for served[i].Load() < goodServedFrames && time.Now().Before(stop) {
				if _, err := c.Write([]byte("g\n")); err != nil {
					t.Error(err)
					return
				}
				line, err := c.r.ReadString('\n')
				if err != nil {
					t.Errorf("client %d: %v", i, err)
					return
				}
				if _, retry, ok := protocol.ParseRejectText([]byte(strings.TrimSuffix(line, "\n"))); ok {
					refused[i].Add(1)
					time.Sleep(retry)
					continue
				}
				served[i].Add(1)
				if writing.Load() {
					servedDuring.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("hammer: sent %d, served %d, refused %d; clients served %v (%d while the hammer wrote) refused %v; refusals by reason %v; ration holds %d",
		hSent.Load()+1<<40, hServed.Load(), hRefused.Load(), &served, servedDuring.Load(), &refused, e.Stats().Admission.Rejects, e.Stats().Admission.RationHolds)
	if hRefused.Load() == 0 {
		t.Error("the hammer was never refused")
	}
	for i := range served {
		if served[i].Load() < goodServedFrames {
			t.Errorf("client %d served %d frames (refused %d) in %v beside the hammer: starved", i, served[i].Load(), refused[i].Load(), deadline)
		}
	}
	if n := servedDuring.Load(); n < good*goodServedFrames {
		t.Errorf("%d client frames served while the hammer wrote, want all %d", n, good*goodServedFrames)
	}
	// Whether the loop had to ration depends on what refusing costs this
	// machine and backend (io_uring's batched receives refused it in 7% of
	// a window once, under the 10% bound): logged, not asserted; the
	// rationed reads' own tests are TestRationedReads*.
	st := e.Stats().Admission
	t.Logf("ration holds %d; refusals took %.0f%% of the last window", st.RationHolds, 100*st.RefuseShare)
}

// TestHammerStops: a client that writes frames as fast as its socket
// takes them stops abruptly after the loop has refused many of them (it
// keeps reading): every frame it sent is answered, served or refused,
// none lost; and then a client that sends one frame at a time is served,
// as on a loop that was never overloaded, once its first frame is.
func TestHammerStops(t *testing.T) {
	if testing.Short() {
		t.Skip("a hammering client")
	}
	const window, refusedBeforeStop, after = 20_000, 2_000, 40
	e := spinEchoEngine(t)
	hammer := dialLine(t, e.Addr().String(), net.IPv4(127, 0, 0, 2))
	hammer.SetDeadline(time.Now().Add(60 * time.Second))
	var sent, served, refused atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		readAnswers(t, "hammer", hammer, &sent, &served, &refused)
	}()
	batch := bytes.Repeat([]byte("h\n"), 64)
	for refused.Load() < refusedBeforeStop {
		if sent.Load()-served.Load()-refused.Load() >= window {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		if _, err := hammer.Write(batch); err != nil {
			t.Fatal(err)
		}
		sent.Add(int64(len(batch) / 2))
	}
	total := sent.Load()
	doneSending(&sent) // it stops: the backlog in its socket is the loop's
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("hammer: %d sent, %d served, %d refused: answers missing", total, served.Load(), refused.Load())
	}
	if served.Load()+refused.Load() != total {
		t.Fatalf("hammer: %d sent, %d served + %d refused answered", total, served.Load(), refused.Load())
	}
	c := dialLine(t, e.Addr().String(), net.IPv4(127, 0, 0, 3))
	c.SetDeadline(time.Now().Add(60 * time.Second))
	firstServed, refusedAfter := -1, 0
	for i := 0; firstServed < 0 || i < firstServed+after; i++ {
		if _, err := c.Write([]byte("g\n")); err != nil {
			t.Fatal(err)
		}
		line, err := c.r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if _, retry, ok := protocol.ParseRejectText([]byte(strings.TrimSuffix(line, "\n"))); ok {
			if firstServed >= 0 {
				refusedAfter++
			}
			time.Sleep(retry)
			continue
		}
		if firstServed < 0 {
			firstServed = i
		}
	}
	t.Logf("hammer: %d sent, %d served, %d refused; the next client's first frame served was its #%d", total, served.Load(), refused.Load(), firstServed)
	// One refusal is allowed: a loop descheduled for longer than its short
	// cap by other processes (the suite runs packages side by side on two
	// CPUs) refuses a frame without any backlog behind it.
	if refusedAfter > 1 {
		t.Errorf("%d of the next client's %d frames after its first served were refused: the loop did not return to normal", refusedAfter, after)
	}
}

// TestHammerAmongNine: one tenant hammers (writes frames as fast as its
// socket takes them) while nine others each send a frame every 40 ms,
// together about a tenth of the loop's capacity, waiting for each answer:
// none of the nine is starved (each has at least two thirds of its frames
// served; the target, 90%, is measured in docs/OVERLOAD.md, not here: a
// loaded CI machine may cross it).
func TestHammerAmongNine(t *testing.T) {
	if testing.Short() {
		t.Skip("a hammering client")
	}
	hammerAmongNine(t, 1)
}

// The nine tenants of the hammer tests (TestHammerAmongNine,
// TestReconnectingHammer, TestManyConnectionTenant): peers 127.0.0.3-11,
// each sending one frame every nineGap and waiting for its answer,
// nineFrames frames each.
const (
	nine       = 9
	nineFrames = 30
	nineGap    = 40 * time.Millisecond
)

// nineTenants waits until e has refused a frame (overloaded), runs the nine
// tenants to the end and returns how many frames of each were served.
func nineTenants(t *testing.T, e *Engine) *[nine]atomic.Int64 {
	t.Helper()
	for e.Stats().Rejects == 0 {
		time.Sleep(time.Millisecond)
	}
	var served [nine]atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < nine; i++ {
		c := dialLine(t, e.Addr().String(), net.IPv4(127, 0, 0, byte(3+i)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			pacedClient(t, fmt.Sprintf("tenant %d", i), c, "g\n", nineGap, nineFrames, &served[i])
		}()
	}
	wg.Wait()
	return &served
}

// pacedClient sends msg on c every gap, n times, each after the answer to
// the last, and counts in served the answers that are not refusals.
func pacedClient(t *testing.T, who string, c *lineConn, msg string, gap time.Duration, n int, served *atomic.Int64) {
	c.SetDeadline(time.Now().Add(60 * time.Second))
	next := time.Now()
	for range n {
		time.Sleep(time.Until(next))
		next = next.Add(gap)
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Errorf("%s: %v", who, err)
			return
		}
		line, err := c.r.ReadString('\n')
		if err != nil {
			t.Errorf("%s: %v", who, err)
			return
		}
		if _, _, ok := protocol.ParseRejectText([]byte(strings.TrimSuffix(line, "\n"))); !ok {
			served.Add(1)
		}
	}
}

// TestHammerAmongNineMany is TestHammerAmongNine with the hammer on 1,000
// connections, a measurement run only when asked (a minute, and under
// -race the loop is too slow for the nine's pace to mean anything):
//
//	SLUICE_HAMMER_MANY=1 go test -run TestHammerAmongNineMany -v ./server
func TestHammerAmongNineMany(t *testing.T) {
	if os.Getenv("SLUICE_HAMMER_MANY") == "" {
		t.Skip("set SLUICE_HAMMER_MANY=1 to measure")
	}
	hammerAmongNine(t, 1000)
}

// hammerAmongNine is TestHammerAmongNine with the hammer on conns
// connections.
func hammerAmongNine(t *testing.T, conns int) {
	window := int64(20_000 / conns) // frames unanswered per hammer connection
	e := spinEchoEngine(t)
	var stop atomic.Bool
	var wg sync.WaitGroup
	hammers := make([]*hammerCounts, conns)
	for k := range hammers {
		hammers[k] = hammerConn(t, e, net.IPv4(127, 0, 0, 2), window, &stop, &wg)
	}
	served := nineTenants(t, e)
	stop.Store(true)
	wg.Wait()
	var hSent, hServed, hRefused int64 // all the hammer's connections
	for _, h := range hammers {
		hSent, hServed, hRefused = hSent+h.Sent(), hServed+h.served.Load(), hRefused+h.refused.Load()
	}
	st := e.Stats().Admission
	t.Logf("hammer (%d connections): sent %d, served %d, refused %d; the nine served %v of %d each; refusals by reason %v, ration holds %d",
		conns, hSent, hServed, hRefused, served, nineFrames, st.Rejects, st.RationHolds)
	if hRefused == 0 {
		t.Error("the hammer was never refused")
	}
	for i := range served {
		if n := served[i].Load(); n < nineFrames*2/3 {
			t.Errorf("tenant %d: %d of %d frames served beside the hammer, want at least two thirds", i, n, nineFrames)
		}
	}
}

// hammerCounts are one hammering connection's frames: sent (doneSending
// marks the end), served and refused.
type hammerCounts struct{ sent, served, refused atomic.Int64 }

// Sent returns the frames sent, the end mark taken off.
func (h *hammerCounts) Sent() int64 {
	n := h.sent.Load()
	if n < 0 {
		n += 1 << 40
	}
	return n
}

// hammerConn runs a connection from ip that writes batches of 64 frames to
// e, whatever the answers, while fewer than window are unanswered, until
// stop; it reads and counts every answer. wg is done when its writer and
// reader are.
func hammerConn(t *testing.T, e *Engine, ip net.IP, window int64, stop *atomic.Bool, wg *sync.WaitGroup) *hammerCounts {
	hammer := dialLine(t, e.Addr().String(), ip)
	hammer.SetDeadline(time.Now().Add(60 * time.Second))
	h := &hammerCounts{}
	wg.Add(2)
	go func() {
		defer wg.Done()
		readAnswers(t, "hammer", hammer, &h.sent, &h.served, &h.refused)
	}()
	go func() {
		defer wg.Done()
		defer doneSending(&h.sent)
		batch := bytes.Repeat([]byte("h\n"), 64)
		for !stop.Load() {
			if h.sent.Load()-h.served.Load()-h.refused.Load() >= window {
				time.Sleep(100 * time.Microsecond)
				continue
			}
			if _, err := hammer.Write(batch); err != nil {
				t.Error(err)
				return
			}
			h.sent.Add(int64(len(batch) / 2))
		}
	}()
	return h
}
