package shed

import (
	"testing"
	"time"
)

// TestBusy: a window busy 95% of the time or more makes the loop
// overloaded; it stays so through windows busy 85% or more (hysteresis)
// and cools below that; a window stretched by a long sleep at its end is
// judged over its whole span; Standing also holds once the loop has not
// slept for longer than L.
func TestBusy(t *testing.T) {
	ms := int64(time.Millisecond)
	C := LoopMinCap // the window is BusyWindow: 5·C is less
	now := int64(1000 * ms)
	b := NewBusy(now)
	window := func(sleep int64) { // one window with sleep ms asleep, then judged
		t.Helper()
		now += BusyWindow - sleep
		b.Slept(now+sleep, sleep)
		now += sleep
		b.Judge(now, C)
	}
	for i, tc := range []struct {
		sleep int64
		want  bool
	}{
		{10 * ms, false}, // 90% busy: not yet
		{4 * ms, true},   // 96%
		{10 * ms, true},  // 90%: stays
		{14 * ms, true},  // 86%
		{16 * ms, false}, // 84%: cools
		{6 * ms, false},  // 94%
		{0, true},
	} {
		window(tc.sleep)
		if b.Overloaded() != tc.want {
			t.Errorf("%d: asleep %v of the window: overloaded %v, want %v", i, time.Duration(tc.sleep), b.Overloaded(), tc.want)
		}
	}
	// a sleep at the end stretches the window: 50 ms busy of 300 ms
	b.Slept(now+250*ms, 250*ms)
	now += 300 * ms
	b.Judge(now, C)
	if b.Overloaded() {
		t.Error("a window mostly asleep judged overloaded")
	}
	L := 8 * C
	b.Slept(now, 0)
	if b.Standing(now, L) {
		t.Error("standing right after a sleep")
	}
	if b.Standing(now+L, L) || !b.Standing(now+L+1, L) {
		t.Error("standing should start once the loop has not slept for longer than L")
	}
	// a slow handler stretches the window to 5·C
	slow := NewBusy(0)
	slow.Judge(BusyWindow, 100*ms) // first window closes, the next is 500 ms
	slow.Judge(BusyWindow+400*ms, 100*ms)
	if slow.winEnd != BusyWindow+500*ms {
		t.Errorf("window end %d, want 5·C after the last", slow.winEnd)
	}
}
