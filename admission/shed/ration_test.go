package shed

import (
	"testing"
	"time"
)

func TestRation(t *testing.T) {
	const busy = int64(100 * time.Millisecond)
	share := func(permille int64) int64 { return busy * permille / 1000 }
	var r Ration
	if r.On() || r.Hold() != 0 {
		t.Fatal("the zero Ration rations")
	}
	steps := []struct {
		name       string
		refused    int64
		overloaded bool
		holding    bool
		hold       int64
	}{
		{"not overloaded, refusals at the bound: no ration", share(RefuseSharePermille), false, false, 0},
		{"overloaded, refusals at the bound: no ration", share(RefuseSharePermille), true, false, 0},
		{"overloaded, refusals over the bound: ration starts", share(RefuseSharePermille + 1), true, false, firstRationHold},
		{"over the target: the hold doubles", share(rationTargetPermille + 1), true, false, 2 * firstRationHold},
		{"doubles again", share(300), true, false, 4 * firstRationHold},
		{"capped", share(300), true, false, MaxRationHold},
		{"between a quarter and half the bound: kept", share(rationTargetPermille / 2), true, false, MaxRationHold},
		{"under a quarter: halved", share(rationTargetPermille/2 - 1), true, false, MaxRationHold / 2},
		{"nothing refused: halved", 0, true, false, MaxRationHold / 4},
		{"halved", 0, true, false, MaxRationHold / 8},
		{"halved", 0, true, false, MaxRationHold / 16},
		{"halved", 0, true, false, MaxRationHold / 32},
		{"floor", 0, true, false, MinRationHold},
		{"not overloaded, refusals over a quarter of the bound: ration goes on", share(900), false, false, 2 * MinRationHold},
		{"not overloaded, refusals at a quarter: kept", share(rationTargetPermille / 2), false, false, 2 * MinRationHold},
		{"not overloaded, refusals under a quarter, connections held: goes on, halved", share(rationTargetPermille/2 - 1), false, true, MinRationHold},
		{"not overloaded, nothing refused, connections held: goes on", 0, false, true, MinRationHold},
		{"not overloaded, refusals under a quarter, none held: ration ends", share(rationTargetPermille/2 - 1), false, false, 0},
		{"not overloaded, ration off, refusals at the bound: no ration", share(RefuseSharePermille), false, false, 0},
		{"not overloaded, refusals over the bound: ration starts (a loop its holds keep idle)", share(RefuseSharePermille + 1), false, false, firstRationHold},
	}
	for i, s := range steps {
		r.Refused(s.refused)
		r.Judge(busy, s.overloaded, s.holding)
		if r.Hold() != s.hold || r.On() != (s.hold > 0) {
			t.Fatalf("%d (%s): hold %v, on %v; want %v", i, s.name, time.Duration(r.Hold()), r.On(), time.Duration(s.hold))
		}
		if want := min(1000, s.refused*1000/busy); r.Share() != want {
			t.Fatalf("%d (%s): share %d‰, want %d", i, s.name, r.Share(), want)
		}
	}
	r.Refused(-5) // a clock that went backwards charges nothing
	r.Judge(0, true, false)
	if r.Share() != 0 {
		t.Fatalf("share %d after an empty window", r.Share())
	}
}
