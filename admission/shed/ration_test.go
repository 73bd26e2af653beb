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
		hold       int64
	}{
		{"refusals over the bound, not overloaded: no ration", share(500), false, 0},
		{"overloaded, refusals at the bound: no ration", share(RefuseSharePermille), true, 0},
		{"overloaded, refusals over the bound: ration starts", share(RefuseSharePermille + 1), true, firstRationHold},
		{"over the target: the hold doubles", share(rationTargetPermille + 1), true, 2 * firstRationHold},
		{"doubles again", share(300), true, 4 * firstRationHold},
		{"capped", share(300), true, MaxRationHold},
		{"between a quarter and half the bound: kept", share(rationTargetPermille / 2), true, MaxRationHold},
		{"under a quarter: halved", share(rationTargetPermille/2 - 1), true, MaxRationHold / 2},
		{"nothing refused: halved", 0, true, MaxRationHold / 4},
		{"halved", 0, true, MaxRationHold / 8},
		{"halved", 0, true, MaxRationHold / 16},
		{"halved", 0, true, MaxRationHold / 32},
		{"floor", 0, true, MinRationHold},
		{"not overloaded: ration ends", share(900), false, 0},
	}
	for i, s := range steps {
		r.Refused(s.refused)
		r.Judge(busy, s.overloaded)
		if r.Hold() != s.hold || r.On() != (s.hold > 0) {
			t.Fatalf("%d (%s): hold %v, on %v; want %v", i, s.name, time.Duration(r.Hold()), r.On(), time.Duration(s.hold))
		}
		if want := min(1000, s.refused*1000/busy); r.Share() != want {
			t.Fatalf("%d (%s): share %d‰, want %d", i, s.name, r.Share(), want)
		}
	}
	r.Refused(-5) // a clock that went backwards charges nothing
	r.Judge(0, true)
	if r.Share() != 0 {
		t.Fatalf("share %d after an empty window", r.Share())
	}
}
