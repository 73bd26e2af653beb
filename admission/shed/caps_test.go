package shed

import (
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
)

// TestCaps: C = 2·S within [floor, MaxCap], L = max(8·C, C + 2·hold), the
// target C/2; the average takes the first service time whole and then
// weighs each one 1/16.
func TestCaps(t *testing.T) {
	us := int64(time.Microsecond)
	c := NewCaps(LoopMinCap, DerivedRejectFlush)
	if c.Service() != 0 || c.Short() != LoopMinCap || c.Long() != LoopMinCap+2*DerivedRejectFlush {
		t.Fatalf("before a measurement: S %d C %d L %d", c.Service(), c.Short(), c.Long())
	}
	c.Observe(2000 * us)
	if c.Service() != 2000*us || c.Short() != 4000*us || c.Long() != 32000*us || c.Target() != 2*time.Millisecond {
		t.Fatalf("first measurement taken whole: S %d C %d L %d target %v", c.Service(), c.Short(), c.Long(), c.Target())
	}
	c.Observe(3600 * us) // +1600/16
	if c.Service() != 2100*us {
		t.Fatalf("average %d, want 2100 µs", c.Service())
	}
	for i := 0; i < 200; i++ {
		c.Observe(10 * us)
	}
	if c.Short() != LoopMinCap {
		t.Errorf("fast handler: C %d, want the floor %d", c.Short(), LoopMinCap)
	}
	c.Observe(int64(10 * time.Second))
	c.Observe(int64(10 * time.Second))
	for i := 0; i < 100; i++ {
		c.Observe(int64(10 * time.Second))
	}
	if c.Short() != MaxCap {
		t.Errorf("slow handler: C %d, want the ceiling", c.Short())
	}
	held := NewCaps(PoolMinCap, int64(time.Second))
	if held.Long() != PoolMinCap+2*int64(time.Second) {
		t.Errorf("long holds: L %d, want C + 2·hold", held.Long())
	}
	if zero := NewCaps(PoolMinCap, 0); zero.Long() != 8*PoolMinCap {
		t.Errorf("no hold: L %d, want 8·C", zero.Long())
	}
}

// TestCapsFor: the cap by priority, standing queue or not.
func TestCapsFor(t *testing.T) {
	c := NewCaps(LoopMinCap, 0)
	C, L := c.Short(), c.Long()
	for i, tc := range []struct {
		p        admission.Priority
		standing bool
		want     int64
		reason   admission.Reason
	}{
		{admission.PriorityNormal, false, L, admission.ReasonQueue},
		{admission.PriorityCritical, false, L, admission.ReasonQueue},
		{admission.PriorityBestEffort, false, L, admission.ReasonQueue},
		{admission.PriorityNormal, true, C, admission.ReasonCoDel},
		{admission.PriorityCritical, true, L, admission.ReasonCoDel},
		{admission.PriorityBestEffort, true, C / 2, admission.ReasonCoDel},
	} {
		if got, r := c.For(tc.p, tc.standing); got != tc.want || r != tc.reason {
			t.Errorf("%d: For(%v, %v) = %d %v, want %d %v", i, tc.p, tc.standing, got, r, tc.want, tc.reason)
		}
	}
}
