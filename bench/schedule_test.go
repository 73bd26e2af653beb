package bench

import (
	"math"
	"testing"
)

func TestOpenScheduleTable(t *testing.T) {
	const ms = int64(1_000_000)
	s := NewOpenSchedule(10*ms, 1000) // one send per millisecond from t=10ms
	steps := []struct {
		now       int64
		due       int64 // Due before Take
		first, n  int64 // Take
		nextAfter int64 // Next after Take
	}{
		{now: 0, due: 0, first: 0, n: 0, nextAfter: 10 * ms},
		{now: 10*ms - 1, due: 0, first: 0, n: 0, nextAfter: 10 * ms},
		{now: 10 * ms, due: 1, first: 0, n: 1, nextAfter: 11 * ms},         // send 0 exactly on time
		{now: 10*ms + 999_999, due: 0, first: 1, n: 0, nextAfter: 11 * ms}, // nothing new
		{now: 15*ms + 500, due: 5, first: 1, n: 5, nextAfter: 16 * ms},     // sends 1..5, late
		{now: 15*ms + 600, due: 0, first: 6, n: 0, nextAfter: 16 * ms},
		{now: 16 * ms, due: 1, first: 6, n: 1, nextAfter: 17 * ms},
	}
	for i, st := range steps {
		if d := s.Due(st.now); d != st.due {
			t.Fatalf("%d: Due(%d) = %d, want %d", i, st.now, d, st.due)
		}
		first, n := s.Take(st.now)
		if first != st.first || n != st.n {
			t.Fatalf("%d: Take(%d) = (%d, %d), want (%d, %d)", i, st.now, first, n, st.first, st.n)
		}
		if nx := s.Next(); nx != st.nextAfter {
			t.Fatalf("%d: Next() = %d, want %d", i, nx, st.nextAfter)
		}
	}
	if got := s.Intended(5); got != 15*ms {
		t.Fatalf("Intended(5) = %d, want %d", got, 15*ms)
	}
	if s.Taken() != 7 {
		t.Fatalf("Taken() = %d, want 7", s.Taken())
	}
}

func TestOpenScheduleStopAt(t *testing.T) {
	const ms = int64(1_000_000)
	s := NewOpenSchedule(0, 1000)
	s.StopAt(5 * ms) // sends at 0,1,2,3,4 ms only
	if _, n := s.Take(100 * ms); n != 5 {
		t.Fatalf("took %d sends before the stop, want 5", n)
	}
	if s.Next() != math.MaxInt64 {
		t.Fatalf("Next after the stop = %d, want MaxInt64", s.Next())
	}
	if d := s.Due(200 * ms); d != 0 {
		t.Fatalf("Due after the stop = %d", d)
	}
}

func TestOpenScheduleFractionalRate(t *testing.T) {
	// 3 sends a second: intended times are floor(k * 333333333.33) ns; Due and
	// Intended must agree at every edge.
	s := NewOpenSchedule(0, 3)
	for k := int64(0); k < 1000; k++ {
		at := s.Intended(k)
		if got := s.dueBy(at); got != k+1 {
			t.Fatalf("dueBy(Intended(%d)=%d) = %d, want %d", k, at, got, k+1)
		}
		if at > 0 {
			if got := s.dueBy(at - 1); got != k {
				t.Fatalf("dueBy(Intended(%d)-1) = %d, want %d", k, got, k)
			}
		}
	}
}

func TestOpenScheduleInvalidRate(t *testing.T) {
	for _, r := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		s := NewOpenSchedule(0, r)
		if _, n := s.Take(math.MaxInt64 / 2); n != 0 {
			t.Fatalf("rate %v: took %d sends", r, n)
		}
		if s.Next() != math.MaxInt64 {
			t.Fatalf("rate %v: Next %d", r, s.Next())
		}
	}
}
