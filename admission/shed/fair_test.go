package shed

import (
	"fmt"
	"testing"
	"time"
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
	var f Fair
	heavy, light := Slot([]byte("heavy")), Slot([]byte("light-0"))
	lights := make([]int, 9)
	for i := range lights {
		lights[i] = Slot([]byte(fmt.Sprintf("light-%d", i)))
	}
	now := int64(1)
	f.Roll(now)
	// Window 1: the heavy tenant offers 100, nine light ones 5 each; the
	// loop admits 65 in all: 20 of the heavy one's and every light frame.
	for i := 0; i < 100; i++ {
		if f.Over(heavy) {
			t.Fatal("limited in the first window")
		}
		if i < 20 {
			f.Admit(heavy)
		}
	}
	for _, s := range lights {
		for i := 0; i < 5; i++ {
			f.Over(s)
			f.Admit(s)
		}
	}
	now += fairWindowNanos
	f.Roll(now)
	// demands: 100 and nine 5s; capacity 65: the light ones get 5 each (45), the heavy one 20.
	if f.level != 20 {
		t.Fatalf("level %d, want 20", f.level)
	}
	served := 0
	for i := 0; i < 100; i++ {
		if !f.Over(heavy) {
			f.Admit(heavy)
			served++
		}
	}
	if served != 20 {
		t.Errorf("heavy tenant admitted %d in the second window, want its share 20", served)
	}
	for i := 0; i < 5; i++ {
		if f.Over(light) {
			t.Errorf("light tenant refused at its frame %d", i)
		}
		f.Admit(light)
	}
}

// TestFairShareWorkConserving: with every tenant over the share, a window
// admits at most the tenants times the share; the next share comes from
// what the loop could have admitted, its admissions scaled by the part of
// the window it was not asleep with every limited tenant at its share (at
// most twice them). So a loop that slept with every tenant at its share
// gets a larger share, one awake the whole window keeps the share its
// admissions give, and a sleep while a tenant is short of its share counts
// for nothing. A coarse share (under fairMinShare per 100 ms) stretches
// the next window to about fairMinShare, within fairMaxWindowNanos.
func TestFairShareWorkConserving(t *testing.T) {
	var f Fair
	slots := make([]int, 10)
	for i := range slots {
		slots[i] = Slot([]byte(fmt.Sprintf("tenant-%d", i)))
	}
	now := int64(1)
	f.Roll(now)
	// window runs a window in which each tenant offers n frames and at
	// most k are admitted (the first tenant at most first), then the loop
	// sleeps for idle, counted as stage.noteIdle counts it; it returns the
	// next window's share.
	window := func(n, k, first int, idle int64) uint32 {
		for j, s := range slots {
			for i := 0; i < n; i++ {
				if !f.Over(s) && i < k && (j > 0 || i < first) {
					f.Admit(s)
				}
			}
		}
		if f.AllFull() {
			f.idleNs += idle
		}
		now = f.until
		f.Roll(now)
		return f.level
	}
	if got := window(100, 40, 100, 0); got != 40 { // 400 admitted, no limit yet
		t.Fatalf("share %d after the first window, want 40", got)
	}
	if got := window(100, 100, 100, fairWindowNanos/5); got != 50 { // 40 each, asleep a fifth with all at it: room for 500
		t.Errorf("share %d after a window asleep for a fifth, want 50", got)
	}
	if got := window(300, 100, 100, 0); got != 50 { // 50 each, awake throughout
		t.Errorf("share %d after a window awake throughout, want 50", got)
	}
	if got := window(300, 100, 100, fairWindowNanos*9/10); got != 100 { // 50 each, awake 10%: at most twice 500
		t.Errorf("share %d after a window asleep for 90%%, want 100 (twice the admissions)", got)
	}
	if f.idleNs != 0 {
		t.Errorf("idle time %d carried into the next window", f.idleNs)
	}
	// the first tenant stays short of its share: its frames may not have
	// come yet, so the sleep is not room the share left
	if got := window(300, 100, 10, fairWindowNanos/2); got != 91 { // 10 + 9·100 admitted, demands 300
		t.Errorf("share %d after a window asleep while a tenant was short of its share, want 91 (of the admissions alone)", got)
	}
	// a coarse share: 40 admitted of 100 offered in 100 ms is 4 each, so
	// the next window is 400 ms, with a share of 16
	if got := window(10, 4, 10, 0); got != 16 {
		t.Errorf("share %d after a coarse window, want 16 (4 each over 400 ms)", got)
	}
	if w := f.until - f.start; w != 4*fairWindowNanos {
		t.Errorf("window %v after a coarse share, want 400 ms", time.Duration(w))
	}
	if got := window(40, 16, 40, 0); got != 16 || f.until-f.start != 4*fairWindowNanos {
		t.Errorf("share %d over %v, want 16 over 400 ms again", got, time.Duration(f.until-f.start))
	}
	// at most fairMaxWindowNanos: 2 each in 400 ms would need 3.2 s (with
	// 1 each, 10 admitted, the window is too thin to judge: see
	// TestFairShareThinWindow)
	if got := window(40, 2, 40, 0); got != 10 || f.until-f.start != fairMaxWindowNanos {
		t.Errorf("share %d over %v, want 10 over %v", got, time.Duration(f.until-f.start), time.Duration(fairMaxWindowNanos))
	}
}

// TestFairShareThinWindow: a window that admitted fewer than fairMinShare
// frames sets no share; it goes on with no limit, 100 ms at a time, until
// it has admitted that many or lasted fairMaxWindowNanos, and is judged
// then as one window.
func TestFairShareThinWindow(t *testing.T) {
	var f Fair
	slots := make([]int, 10)
	for i := range slots {
		slots[i] = Slot([]byte(fmt.Sprintf("tenant-%d", i)))
	}
	offer := func(n, k int) { // each tenant offers n frames, k are admitted
		for _, s := range slots {
			for i := 0; i < n; i++ {
				if !f.Over(s) && i < k {
					f.Admit(s)
				}
			}
		}
	}
	f.Roll(1)
	offer(100, 40)
	f.Roll(f.until)
	if f.level != 40 {
		t.Fatalf("share %d after a full window, want 40", f.level)
	}
	start := f.start
	offer(5, 1) // 10 admitted: too thin
	end := f.until
	f.Roll(end)
	if f.level != 0 || f.limited != 0 || f.start != start || f.until != end+fairWindowNanos || f.total != 10 {
		t.Fatalf("after a thin window: share %d, %d limited, start %d (want %d), until %d (want %d), total %d (want 10 kept)",
			f.level, f.limited, f.start, start, f.until, end+fairWindowNanos, f.total)
	}
	for _, s := range slots { // no limit while it goes on
		if f.Over(s) {
			t.Fatalf("a tenant limited in the window's extension")
		}
	}
	offer(5, 1) // 20 admitted over 200 ms (with the frames over() just counted): judged
	f.Roll(f.until)
	if f.level == 0 || f.start == start {
		t.Fatalf("share %d, window from %d: want a share from the 200 ms window", f.level, f.start)
	}
	// a loop that stays thin is judged after fairMaxWindowNanos anyway
	start = f.start
	for f.start == start {
		offer(1, 0)
		f.Roll(f.until)
		if f.until-start > 2*fairMaxWindowNanos {
			t.Fatalf("a thin window went on past %v", time.Duration(fairMaxWindowNanos))
		}
	}
	if span := f.start - start; span < fairMaxWindowNanos {
		t.Errorf("thin window judged after %v, want %v", time.Duration(span), time.Duration(fairMaxWindowNanos))
	}
}

// TestFairSharePaced: overPaced lets a slot have, at each point of the
// window, its share's part for the time gone by plus an eighth of the
// share (at least 2), and never more than the share.
func TestFairSharePaced(t *testing.T) {
	var f Fair
	a, b := Slot([]byte("a")), Slot([]byte("b"))
	f.Roll(1)
	for i := 0; i < 100; i++ { // a asks for 100, b for 10; 50 admitted
		f.Over(a)
		if i < 40 {
			f.Admit(a)
		}
	}
	for i := 0; i < 10; i++ {
		f.Over(b)
		f.Admit(b)
	}
	f.Roll(1 + fairWindowNanos)
	if f.level != 40 {
		t.Fatalf("share %d, want 40", f.level)
	}
	admitted := func(at int64) int {
		n := 0
		for !f.OverPaced(a, f.start+at) {
			f.Admit(a)
			n++
		}
		return n
	}
	for _, c := range []struct {
		at   int64
		want int // admitted at that point of the window, in all
	}{
		{0, 5},                         // the burst: an eighth of 40
		{fairWindowNanos / 4, 15},      // 10 + 5
		{fairWindowNanos / 2, 25},      // 20 + 5
		{fairWindowNanos * 9 / 10, 40}, // 36 + 5, at most the share
		{fairWindowNanos - 1, 40},
	} {
		admitted(c.at)
		if got := int(f.admitted[a]); got != c.want {
			t.Errorf("at %v of the window: %d admitted, want %d", time.Duration(c.at), got, c.want)
		}
	}
	if f.OverPaced(b, f.start) {
		t.Error("a slot under its share refused at the start of the window")
	}
}

// TestFairShareUnoffer: frames taken back with Unoffer are not demand: a
// tenant whose offered frames were all taken back does not limit another
// whose frames were all admitted, where the same frames left offered do.
func TestFairShareUnoffer(t *testing.T) {
	flooder, light := Slot([]byte("flooder")), Slot([]byte("light"))
	for _, unoffer := range []bool{false, true} {
		var f Fair
		now := int64(1)
		f.Roll(now)
		for i := 0; i < 1000; i++ { // refused too old, after Over counted them
			f.Over(flooder)
			if unoffer {
				f.Unoffer(flooder)
			}
		}
		for i := 0; i < 20; i++ {
			f.Over(light)
			f.Admit(light)
		}
		now += fairWindowNanos
		f.Roll(now)
		limited := 0
		for i := 0; i < 40; i++ { // the window may be stretched to 200 ms (coarse): twice the frames
			if f.Over(light) {
				limited++
				continue
			}
			f.Admit(light)
		}
		if unoffer && limited > 0 || !unoffer && limited == 0 {
			t.Errorf("unoffer %v: the light tenant was refused %d of 40 frames in the next window", unoffer, limited)
		}
	}
	var f Fair
	f.Unoffer(flooder) // nothing offered: stays at zero
	if f.offered[flooder] != 0 {
		t.Fatalf("offered %d after an Unoffer of nothing", f.offered[flooder])
	}
}
