package shed

import "time"

// Rationed reads (docs/OVERLOAD.md, "Rationed reads"). Refusing a frame
// costs a loop about what serving a trivial one does (the read, the
// decoding, the refusal's encoding and write), and a client that answers
// each refusal with a new request replaces it at once: past some rate of
// refusals the loop does little else. Not reading costs nothing (the
// kernel's buffers and TCP flow control hold the bytes), so a loop whose
// refusals take too much of its time stops reading the connections it
// refuses, for a hold, and refuses what they sent meanwhile in one read
// and one write.
const (
	// RefuseSharePermille is the most of a loop's busy time its refusals
	// may take, in thousandths, before it rations reads: 10%, what the
	// goodput target (90% of capacity) leaves for anything but serving.
	RefuseSharePermille = 100
	// rationTargetPermille is the share a rationing loop keeps its
	// refusals under, with hysteresis (the hold doubles above it and halves
	// below half of it): half the bound, so that the time on refusals
	// stays clear of it while the load moves.
	rationTargetPermille = RefuseSharePermille / 2
	// MinRationHold and MaxRationHold bound a rationed connection's hold.
	// The most is what a refusal may take to arrive (a client that is
	// refused must learn it soon enough to go elsewhere: 250 ms, less a
	// turn and the client's own round trip); the least keeps a hold
	// longer than the turns it spans.
	MinRationHold = int64(5 * time.Millisecond)
	MaxRationHold = int64(200 * time.Millisecond)
	// firstRationHold is the hold when rationing starts: the middle of
	// the range in doublings, so the controller reaches either end in a
	// few windows.
	firstRationHold = int64(40 * time.Millisecond)
)

// Ration keeps a loop's account of what refusing costs it, and whether it
// rations its reads: a connection whose read brought only refusals is then
// not read for Hold. It judges at the end of each busy window (Busy):
// rationing starts after a window in which refusals took more than
// RefuseSharePermille of the busy time, whether or not Busy judged it
// overloaded (a loop whose held refusals and parked reads keep its
// clients' requests away from it sleeps, and refuses what they bring late:
// docs/OVERLOAD.md#rationed-reads), and ends after the first
// window that was not overloaded, in which refusals took under a quarter
// of the bound, and after which no connection is held: peers that keep
// their sockets full of frames that would be refused stale (never reading
// the refusals) leave the loop without a queue, and refusing little, while
// it holds them, and would be read and refused frame by frame again if it
// stopped. While it rations, the hold follows the
// share: doubled after a window over half the bound, halved after one
// under a quarter of it, within [MinRationHold, MaxRationHold]. Its zero value does
// not ration. It is not safe for concurrent use.
type Ration struct {
	refused int64 // time spent on refused frames in the current window
	hold    int64 // the hold while rationing; 0 while not
	share   int64 // the last window's share, in thousandths
}

// Refused charges d nanoseconds spent on refused frames to the current
// window.
func (r *Ration) Refused(d int64) { r.refused += max(0, d) }

// Judge closes a busy window in which the loop was awake for busy
// nanoseconds, with Busy's judgement of it (overloaded) and whether
// connections are held now (holding), and starts the next.
func (r *Ration) Judge(busy int64, overloaded, holding bool) {
	r.share = 0
	if busy > 0 {
		r.share = min(1000, r.refused*1000/busy)
	}
	r.refused = 0
	switch {
	case r.hold == 0 && r.share <= RefuseSharePermille,
		!overloaded && r.share < rationTargetPermille/2 && !holding:
		r.hold = 0
	case r.hold == 0:
		r.hold = firstRationHold
	case r.share > rationTargetPermille:
		r.hold = min(2*r.hold, MaxRationHold)
	case r.share < rationTargetPermille/2:
		r.hold = max(r.hold/2, MinRationHold)
	}
}

// On reports whether the loop rations its reads.
func (r *Ration) On() bool { return r.hold > 0 }

// Hold returns how long a rationed connection is not read (0: the loop
// does not ration).
func (r *Ration) Hold() int64 { return r.hold }

// Share returns the part of the last window's busy time spent on refused
// frames, in thousandths.
func (r *Ration) Share() int64 { return r.share }
