package shed

import (
	"time"

	"github.com/sluicenet/sluice/admission"
)

// The derived caps (docs/OVERLOAD.md, "The caps").
const (
	// CapPerService is C's multiple of the average service time S.
	CapPerService = 2
	// LoopMinCap is C's floor on a loop, in nanoseconds: below it the
	// turn's and the syscalls' own costs dominate a frame's wait.
	LoopMinCap = int64(700 * time.Microsecond)
	// PoolMinCap is C's floor in the worker pool, lower than the loop's: a
	// frame's wait there is timed from its submission, not bounded by the
	// loop's turns and reads.
	PoolMinCap = int64(500 * time.Microsecond)
	// MaxCap is C's ceiling.
	MaxCap = int64(time.Second)
	// LongCapFactor is L's multiple of C.
	LongCapFactor = 8
	// serviceShift weighs each new service time 1/16 in the average.
	serviceShift = 4
)

// Caps is the service-time estimate of one server part (a loop, or the
// worker pool) and the queueing-delay caps derived from it: C = 2·S within
// [floor, MaxCap], the cap while a queue stands; L = max(8·C, C + 2·hold),
// the cap otherwise and a critical frame's; and CoDel's target C/2. Its
// zero value is not usable: make one with NewCaps. It is not safe for
// concurrent use.
type Caps struct {
	svc   int64 // average service time (EWMA); 0: none measured yet
	short int64 // C
	long  int64 // L
	floor int64
	hold  int64 // how long refusals may be held: L covers two of them
}

// NewCaps returns the caps before any service time is measured (C at
// floor): floor is LoopMinCap or PoolMinCap, hold the time a refusal may
// wait to be written (RejectFlushDelay; 0 for none).
func NewCaps(floor, hold int64) Caps {
	c := Caps{floor: floor, hold: hold}
	c.derive()
	return c
}

// Observe folds a frame's service time d into the average (weight 1/16;
// the first measurement is taken whole, so the caps do not start from the
// floor with a slow handler) and derives the caps from it.
func (c *Caps) Observe(d int64) {
	if c.svc == 0 {
		c.svc = max(d, 1)
	} else {
		c.svc += (d - c.svc) >> serviceShift
	}
	c.derive()
}

func (c *Caps) derive() {
	c.short = min(max(CapPerService*c.svc, c.floor), MaxCap)
	c.long = max(LongCapFactor*c.short, c.short+2*c.hold)
}

// Service returns the average service time, 0 before the first Observe.
func (c *Caps) Service() int64 { return c.svc }

// Short returns C.
func (c *Caps) Short() int64 { return c.short }

// Long returns L.
func (c *Caps) Long() int64 { return c.long }

// Target returns the CoDel target the caps imply, C/2: CoDel then judges
// whether a queue stands, and the caps decide.
func (c *Caps) Target() time.Duration { return time.Duration(c.short / 2) }

// For returns the queueing delay above which a frame of priority p is
// refused, and the reason: L while no queue stands (standing false);
// under a standing queue C for a normal frame, C/2 for a best-effort one,
// and L still for a critical one.
func (c *Caps) For(p admission.Priority, standing bool) (int64, admission.Reason) {
	if !standing {
		return c.long, admission.ReasonQueue
	}
	switch p {
	case admission.PriorityCritical:
		return c.long, admission.ReasonCoDel
	case admission.PriorityBestEffort:
		return c.short / 2, admission.ReasonCoDel
	}
	return c.short, admission.ReasonCoDel
}
