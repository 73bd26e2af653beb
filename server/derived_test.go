package server

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/protocol"
)

// TestDerivedCapsByPriority: with MaxQueueDelay zero the stage derives its
// caps from the service time (C = 4·S in [1 ms, 1 s], L = max(8·C,
// C + 2·RejectFlushDelay), CoDel's target C/2), applies L to every frame
// until CoDel sees a standing queue, and then C to normal frames, C/2 to
// best-effort ones and L to critical ones. A fixed MaxQueueDelay and Off
// keep the old meaning.
func TestDerivedCapsByPriority(t *testing.T) {
	newLoopStage := func(p AdmissionPolicy) *stage {
		t.Helper()
		e, err := New(Config{Loops: 1, Codec: protocol.Delimited{}, Admission: p}, HandlerFuncs{})
		if err != nil {
			t.Fatal(err)
		}
		return e.loops[0].stage
	}
	codel := func() *admission.Admitter {
		return newAdmitter(t, admission.Config{MemoryLimitBytes: -1, CoDel: &admission.CoDelConfig{Interval: 10 * time.Millisecond}})
	}
	s := newLoopStage(AdmissionPolicy{Admitter: codel()})
	if !s.auto || !s.timed || s.rejDelay != autoRejectFlushNanos || !s.slowReads {
		t.Fatalf("derived stage: auto %v timed %v rejDelay %v slowReads %v", s.auto, s.timed, s.rejDelay, s.slowReads)
	}
	ms := int64(time.Millisecond)
	check := func(p admission.Priority, want int64, wantReason admission.Reason) {
		t.Helper()
		if got, r := s.delayCap(p); got != want || r != wantReason {
			t.Errorf("%v: cap %v (%v), want %v (%v)", p, time.Duration(got), r, time.Duration(want), wantReason)
		}
	}
	// No measurement yet: C is the 1 ms floor, L = C + 2 × 10 ms.
	if s.capShort != ms || s.capLong != 21*ms || s.lp.Overloaded() {
		t.Fatalf("initial caps C %v L %v overloaded %v", time.Duration(s.capShort), time.Duration(s.capLong), s.lp.Overloaded())
	}
	check(admission.PriorityNormal, 21*ms, admission.ReasonQueue)
	// Handlers now take 2 ms: C follows to 8 ms, L to 64 ms.
	for i := 0; i < 200; i++ {
		s.admitAt = s.l.e.clock() - 2*ms
		s.afterFrame()
	}
	if c := s.capShort; c < 7*ms || c > 9*ms || s.capLong != autoLongCapFactor*c {
		t.Fatalf("after 2 ms handlers: C %v L %v", time.Duration(c), time.Duration(s.capLong))
	}
	// Three intervals in which every frame waited 20 ms: a standing queue.
	base := time.Now()
	for i := int64(0); i < 40; i++ {
		now := base.Add(time.Duration(i * ms))
		s.lp.ObserveDelay(now, now.Add(-20*time.Millisecond))
	}
	if !s.lp.Overloaded() {
		t.Fatal("CoDel did not judge 20 ms waits a standing queue")
	}
	c, l := s.capShort, s.capLong
	check(admission.PriorityCritical, l, admission.ReasonCoDel)
	check(admission.PriorityNormal, c, admission.ReasonCoDel)
	check(admission.PriorityBestEffort, c/2, admission.ReasonCoDel)
	// Handlers back to fast: C returns to the floor.
	for i := 0; i < 200; i++ {
		s.admitAt = s.l.e.clock()
		s.afterFrame()
	}
	if s.capShort != ms {
		t.Fatalf("after fast handlers C %v, want the 1 ms floor", time.Duration(s.capShort))
	}

	fixed := newLoopStage(AdmissionPolicy{Admitter: codel(), MaxQueueDelay: 3 * time.Millisecond})
	if fixed.auto || fixed.rejDelay != 0 || fixed.slowReads {
		t.Fatalf("fixed cap: auto %v rejDelay %v slowReads %v", fixed.auto, fixed.rejDelay, fixed.slowReads)
	}
	if got, r := fixed.delayCap(admission.PriorityCritical); got != 3*ms || r != admission.ReasonQueue {
		t.Errorf("fixed cap: %v %v", time.Duration(got), r)
	}
	off := newLoopStage(AdmissionPolicy{Admitter: codel(), MaxQueueDelay: Off, RejectFlushDelay: Off})
	if off.auto || off.rejDelay != 0 {
		t.Fatalf("Off: auto %v rejDelay %v", off.auto, off.rejDelay)
	}
	if got, _ := off.delayCap(admission.PriorityNormal); got != 0 {
		t.Errorf("Off: cap %v, want none", time.Duration(got))
	}
	if _, err := New(Config{Loops: 1, Admission: AdmissionPolicy{Admitter: codel(), MaxQueueDelay: -2}}, HandlerFuncs{}); err == nil {
		t.Error("MaxQueueDelay -2 accepted")
	}
}

// TestDerivedCapFollowsSlowdown: a handler that suddenly takes 100× longer
// (100 µs to 10 ms) under a burst is shed within a second with the derived
// caps alone (CoDel with its defaults, nothing else set), the derived cap
// grows with the measured service time, and both come back when the
// handler is fast again. Every request is answered: served, or refused
// with a reason.
func TestDerivedCapFollowsSlowdown(t *testing.T) {
	adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1, CoDel: &admission.CoDelConfig{}})
	var work atomic.Int64
	work.Store(int64(100 * time.Microsecond))
	h := newTestHandler()
	h.frame = func(c *Conn, frame []byte) Action {
		spin(time.Duration(work.Load()))
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

	fast := drive(4, 50, false)
	capFast, svcFast := caps()
	t.Logf("fast: served %d refused %d; cap %v service %v", fast.served, fast.refused, capFast, svcFast)
	if fast.refused != 0 || fast.served != 200 {
		t.Fatalf("closed loop at 100 µs: served %d refused %d %v, want every request served", fast.served, fast.refused, fast.reasons)
	}
	if svcFast <= 0 || capFast != min(max(4*svcFast, time.Millisecond), time.Second) {
		t.Fatalf("cap %v for service time %v, want 4× it in [1ms, 1s]", capFast, svcFast)
	}

	work.Store(int64(10 * time.Millisecond))
	switched := time.Now()
	slow := drive(8, 30, true) // 2.4 s of work offered at once
	capSlow, svcSlow := caps()
	t.Logf("slow: served %d refused %d %v in %v, first refusal after %v; cap %v service %v",
		slow.served, slow.refused, slow.reasons, time.Since(switched), slow.firstRefusal.Sub(switched), capSlow, svcSlow)
	if slow.served+slow.refused != 240 || slow.refused == 0 || slow.served == 0 {
		t.Fatalf("burst at 10 ms: served %d refused %d, want both, 240 answers", slow.served, slow.refused)
	}
	if d := slow.firstRefusal.Sub(switched); d > time.Second {
		t.Errorf("first refusal %v after the slowdown, want within a second", d)
	}
	if svcSlow < 2*time.Millisecond || capSlow < 4*svcSlow*9/10 {
		t.Errorf("after the slowdown: service %v cap %v, want the cap to follow a service time of several ms", svcSlow, capSlow)
	}

	work.Store(int64(100 * time.Microsecond))
	again := drive(4, 50, false)
	capAgain, svcAgain := caps()
	t.Logf("fast again: served %d refused %d; cap %v service %v", again.served, again.refused, capAgain, svcAgain)
	if capAgain >= capSlow || svcAgain >= svcSlow/4 {
		t.Errorf("after the handler sped up: cap %v service %v, want them back down from %v and %v", capAgain, svcAgain, capSlow, svcSlow)
	}
	if again.served < 190 {
		t.Errorf("fast again: served %d of 200 (%v)", again.served, again.reasons)
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
