package admission

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestHysteresisTable(t *testing.T) {
	w := Watermark{High: 0.9, Low: 0.7, MinDwell: 100 * ms}
	type step struct {
		at      time.Duration
		v       float64
		hot     bool
		changed bool
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"stays cold below high", []step{{0, 0.5, false, false}, {10 * ms, 0.89, false, false}, {20 * ms, 0.8, false, false}}},
		{"hot at high immediately", []step{{0, 0.9, true, true}, {1 * ms, 0.95, true, false}}},
		{"band keeps hot", []step{{0, 1, true, true}, {500 * ms, 0.8, true, false}, {900 * ms, 0.71, true, false}}},
		{"cold only after dwell below low", []step{
			{0, 1, true, true}, {10 * ms, 0.5, true, false}, {109 * ms, 0.5, true, false}, {110 * ms, 0.5, false, true}, {120 * ms, 0.6, false, false},
		}},
		{"excursion above low restarts dwell", []step{
			{0, 1, true, true}, {10 * ms, 0.5, true, false}, {90 * ms, 0.75, true, false}, {100 * ms, 0.5, true, false},
			{150 * ms, 0.5, true, false}, {199 * ms, 0.6, true, false}, {200 * ms, 0.7, false, true},
		}},
		{"NaN is ignored", []step{{0, 1, true, true}, {10 * ms, math.NaN(), true, false}, {500 * ms, math.NaN(), true, false}}},
		{"backwards time counts as none", []step{{0, 1, true, true}, {50 * ms, 0.1, true, false}, {40 * ms, 0.1, true, false}, {150 * ms, 0.1, false, true}}},
	}
	for _, c := range cases {
		h, err := NewHysteresis(w)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range c.steps {
			hot, changed := h.Update(at(s.at), s.v)
			if hot != s.hot || changed != s.changed {
				t.Errorf("%s: step %d (t=%v v=%v): got hot=%v changed=%v, want %v %v", c.name, i, s.at, s.v, hot, changed, s.hot, s.changed)
			}
		}
	}
}

// TestHysteresisCannotFlap drives a value that crosses both thresholds every
// millisecond for ten seconds and checks the transition count is bounded by
// two per dwell.
func TestHysteresisCannotFlap(t *testing.T) {
	w := Watermark{High: 0.9, Low: 0.7, MinDwell: 250 * ms}
	h, _ := NewHysteresis(w)
	transitions := 0
	for i := range 10_000 {
		v := 0.0
		if i%2 == 0 {
			v = 1
		}
		if _, changed := h.Update(at(time.Duration(i)*ms), v); changed {
			transitions++
		}
	}
	if transitions != 1 {
		// The value never stays low for a whole dwell, so the only
		// transition is the first one into hot.
		t.Fatalf("transitions = %d, want 1", transitions)
	}
	// A square wave slower than the dwell: low for 300ms, high for 300ms.
	h, _ = NewHysteresis(w)
	transitions = 0
	for i := range 10_000 {
		v := 1.0
		if (i/300)%2 == 1 {
			v = 0
		}
		if _, changed := h.Update(at(time.Duration(i)*ms), v); changed {
			transitions++
		}
	}
	if max := 2 * (10_000 / 250); transitions > max || transitions < 2 {
		t.Fatalf("transitions = %d, want 2..%d", transitions, max)
	}
}

func TestWatermarkValidate(t *testing.T) {
	bad := []Watermark{
		{High: 0.5, Low: 0.6},
		{High: math.NaN(), Low: 0},
		{High: math.Inf(1), Low: 0},
		{High: 1, Low: 0, MinDwell: -1},
	}
	for i, w := range bad {
		if err := w.Validate(); !errors.Is(err, ErrBadWatermark) {
			t.Errorf("%d: %+v: err = %v, want ErrBadWatermark", i, w, err)
		}
		if _, err := NewHysteresis(w); err == nil {
			t.Errorf("%d: NewHysteresis accepted %+v", i, w)
		}
	}
	if err := (Watermark{High: 1, Low: 1}).Validate(); err != nil {
		t.Errorf("equal High and Low: %v", err)
	}
}
