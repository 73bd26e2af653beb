package admission

import (
	"testing"
	"time"
)

func TestCoDelTable(t *testing.T) {
	// Target 5ms, interval 100ms. Each step dequeues one request at `at`
	// that waited `wait`, or (wait < 0) reports the queue empty.
	type step struct {
		at         time.Duration
		wait       time.Duration
		shed       bool
		overloaded bool
	}
	const empty = -1
	cases := []struct {
		name  string
		steps []step
	}{
		{"short waits never overload", []step{
			{0, 1 * ms, false, false}, {50 * ms, 4 * ms, false, false}, {100 * ms, 5 * ms, false, false}, {200 * ms, 5 * ms, false, false},
		}},
		{"a burst that drains is not a standing queue", []step{
			{0, 2 * ms, false, false}, {10 * ms, 40 * ms, false, false}, {20 * ms, 30 * ms, false, false},
			{50 * ms, 1 * ms, false, false}, // the minimum of the interval
			{100 * ms, 40 * ms, false, false},
		}},
		{"minimum above target for an interval: overloaded, shed > 2×target", []step{
			{0, 6 * ms, false, false}, {50 * ms, 8 * ms, false, false},
			{100 * ms, 11 * ms, true, true},  // interval [0,100) min 6ms > 5ms; 11ms > 10ms: shed
			{110 * ms, 10 * ms, false, true}, // exactly 2×target is served
			{120 * ms, 6 * ms, false, true},
			{200 * ms, 3 * ms, false, true},   // interval [100,200) min 6ms: still overloaded
			{300 * ms, 50 * ms, false, false}, // interval [200,300) min 3ms: recovered, not shed
		}},
		{"a clock stepped back does not keep the judgement until it catches up", []step{
			{0, 20 * ms, false, false}, {100 * ms, 20 * ms, true, true},
			{-time.Hour, 1 * ms, false, true},            // back an hour: a new interval starts here
			{-time.Hour + 100*ms, 1 * ms, false, false},  // and is judged after one interval
			{-time.Hour + 150*ms, 30 * ms, false, false}, // not shed: not overloaded
		}},
		{"a clock stepped forward closes the interval", []step{
			{0, 20 * ms, false, false}, {100 * ms, 20 * ms, true, true},
			{time.Hour, 1 * ms, false, true},            // interval [100ms, 200ms) min 20ms: still overloaded
			{time.Hour + 100*ms, 30 * ms, false, false}, // interval from the step, min 1ms: recovered
		}},
		{"an empty queue ends the overload", []step{
			{0, 20 * ms, false, false}, {100 * ms, 20 * ms, true, true},
			{150 * ms, empty, false, true},
			{200 * ms, 20 * ms, false, false}, // interval [100,200) saw an empty queue
		}},
	}
	for _, c := range cases {
		cd, err := NewCoDel(CoDelConfig{})
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range c.steps {
			shed := false
			if s.wait == empty {
				cd.Empty(at(s.at))
			} else {
				v := cd.Dequeue(at(s.at), at(s.at-s.wait))
				shed = !v.Admit
				if shed && (v.Reason != ReasonCoDel || v.RetryAfter != 100*ms) {
					t.Errorf("%s: step %d: verdict %+v", c.name, i, v)
				}
			}
			if shed != s.shed || cd.Overloaded() != s.overloaded || cd.ServeNewestFirst() != s.overloaded {
				t.Errorf("%s: step %d (t=%v wait=%v): shed=%v overloaded=%v, want %v %v",
					c.name, i, s.at, s.wait, shed, cd.Overloaded(), s.shed, s.overloaded)
			}
		}
	}
}

// TestCoDelStandingQueue simulates a FIFO queue served at 1 request per ms
// and fed at 2 per ms, and checks CoDel detects it within two intervals and
// then sheds every request that waited more than 10ms.
func TestCoDelStandingQueue(t *testing.T) {
	cd, _ := NewCoDel(CoDelConfig{Target: 5 * ms, Interval: 100 * ms})
	var queue []time.Duration // enqueue times
	firstShed := time.Duration(-1)
	served, shed := 0, 0
	for now := time.Duration(0); now < time.Second; now += ms {
		queue = append(queue, now, now)
		for len(queue) > 0 {
			enq := queue[0]
			queue = queue[1:]
			if v := cd.Dequeue(at(now), at(enq)); !v.Admit {
				shed++
				if firstShed < 0 {
					firstShed = now
				}
				continue
			}
			served++
			break
		}
	}
	if firstShed < 0 || firstShed > 200*ms {
		t.Fatalf("first shed at %v, want within two intervals", firstShed)
	}
	if served < 990 || shed == 0 {
		t.Fatalf("served %d shed %d", served, shed)
	}
	if n, intervals := cd.Shed(); n != uint64(shed) || intervals == 0 {
		t.Fatalf("counters %d %d", n, intervals)
	}
}

func TestCoDelConfigValidate(t *testing.T) {
	if _, err := NewCoDel(CoDelConfig{Interval: -1}); err == nil {
		t.Error("negative interval accepted")
	}
	if _, err := NewCoDel(CoDelConfig{Target: -1}); err == nil {
		t.Error("negative target accepted")
	}
}

// TestCoDelObserveAndSetTarget: Observe judges overload like Dequeue but
// never refuses; SetTarget moves the judgement (and Dequeue's threshold,
// twice the target) from the next request on, and ignores d ≤ 0.
func TestCoDelObserveAndSetTarget(t *testing.T) {
	cd, _ := NewCoDel(CoDelConfig{Target: 5 * ms, Interval: 100 * ms})
	for now := time.Duration(0); now <= 250*ms; now += ms {
		cd.Observe(at(now), at(now-3*ms)) // 3 ms sojourns: under the 5 ms target
	}
	if cd.Overloaded() {
		t.Fatal("3 ms sojourns judged overloaded against a 5 ms target")
	}
	cd.SetTarget(2 * ms)
	cd.SetTarget(0)
	cd.SetTarget(-ms)
	if cd.Target() != 2*ms {
		t.Fatalf("target %v, want 2ms", cd.Target())
	}
	for now := 251 * ms; now <= 500*ms; now += ms {
		cd.Observe(at(now), at(now-3*ms))
	}
	if !cd.Overloaded() {
		t.Fatal("3 ms sojourns not judged overloaded against a 2 ms target")
	}
	if n, _ := cd.Shed(); n != 0 {
		t.Fatalf("Observe shed %d requests", n)
	}
	if v := cd.Dequeue(at(501*ms), at(501*ms-5*ms)); v.Admit {
		t.Fatal("a 5 ms sojourn admitted while overloaded with a 2 ms target (threshold 4 ms)")
	}
	if v := cd.Dequeue(at(502*ms), at(502*ms-3*ms)); !v.Admit {
		t.Fatal("a 3 ms sojourn refused with a 2 ms target (threshold 4 ms)")
	}
}
