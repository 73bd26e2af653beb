package server

import (
	"fmt"
	"testing"
)

// TestWaterLevel: the max-min fair share of a capacity among demands.
func TestWaterLevel(t *testing.T) {
	for _, c := range []struct {
		demands  []uint32
		capacity uint32
		want     uint32
	}{
		{[]uint32{10, 10, 10}, 30, 0},                     // everyone served: no limit
		{[]uint32{10, 10, 10}, 100, 0},                    // idle capacity
		{[]uint32{10, 10, 10}, 15, 5},                     // equal demands: equal shares
		{[]uint32{1, 1, 1, 1, 1, 1, 1, 1, 1, 10}, 12, 3},  // light tenants all served, the heavy one gets the rest
		{[]uint32{2, 2, 2, 2, 2, 2, 2, 2, 2, 100}, 10, 1}, // overloaded by everyone: one each
		{[]uint32{0, 0, 5, 0, 50}, 20, 15},                // empty slots do not count
		{[]uint32{3, 100, 100}, 50, 24},                   // 3 + 24 + 24 ≥ 50, rounded up
		{[]uint32{1000, 1000, 1000, 1000}, 1, 1},          // at least 1
		{[]uint32{0, 0}, 0, 0},                            // nothing offered
	} {
		got := waterLevel(c.demands, c.capacity, make([]uint32, 0, len(c.demands)))
		if got != c.want {
			t.Errorf("waterLevel(%v, %d) = %d, want %d", c.demands, c.capacity, got, c.want)
		}
		if got > 0 { // the level fills the capacity: Σ min(d, L) ≥ capacity, and L-1 would not
			var at, below uint64
			for _, d := range c.demands {
				at += uint64(min(d, got))
				below += uint64(min(d, got-1))
			}
			if at < uint64(c.capacity) || below >= uint64(c.capacity) {
				t.Errorf("waterLevel(%v, %d) = %d: fills %d at L, %d at L-1", c.demands, c.capacity, got, at, below)
			}
		}
	}
}

// TestFairShareWindows: within a window no tenant is limited until a
// window closes with more offered than admitted; then each slot may have
// at most the max-min share of the last window's admissions, the heavy
// tenant is refused beyond it and the light ones are not.
func TestFairShareWindows(t *testing.T) {
	var f fairShare
	heavy, light := fairSlot([]byte("heavy")), fairSlot([]byte("light-0"))
	lights := make([]int, 9)
	for i := range lights {
		lights[i] = fairSlot([]byte(fmt.Sprintf("light-%d", i)))
	}
	now := int64(1)
	f.roll(now)
	// Window 1: the heavy tenant offers 100, nine light ones 5 each; the
	// loop admits 60 in all: 15 of the heavy one's and every light frame.
	for i := 0; i < 100; i++ {
		if f.over(heavy) {
			t.Fatal("limited in the first window")
		}
		if i < 15 {
			f.admit(heavy)
		}
	}
	for _, s := range lights {
		for i := 0; i < 5; i++ {
			f.over(s)
			f.admit(s)
		}
	}
	now += fairWindowNanos
	f.roll(now)
	// demands: 100 and nine 5s; capacity 60: the light ones get 5 each (45), the heavy one 15.
	if f.level != 15 {
		t.Fatalf("level %d, want 15", f.level)
	}
	served := 0
	for i := 0; i < 100; i++ {
		if !f.over(heavy) {
			f.admit(heavy)
			served++
		}
	}
	if served != 15 {
		t.Errorf("heavy tenant admitted %d in the second window, want its share 15", served)
	}
	for i := 0; i < 5; i++ {
		if f.over(light) {
			t.Errorf("light tenant refused at its frame %d", i)
		}
		f.admit(light)
	}
}
