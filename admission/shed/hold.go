package shed

import "time"

// Held refusals and parked reads (docs/OVERLOAD.md, "Held refusals and
// parked reads"). Writing one refusal alone costs about as much as serving
// a trivial frame, so refusals wait to be written, in batches, and the
// reads of a connection whose frames would all be refused wait with them.
const (
	// DerivedRejectFlush is RejectFlushDelay when the caps are derived:
	// the short hold.
	DerivedRejectFlush = int64(10 * time.Millisecond)
	// LongHold is the long hold: a peer that keeps sending while refused
	// gets its refusals in batches of up to RejectBatch per LongHold. Not
	// longer: a refusal must reach its client within about 250 ms for the
	// client to go elsewhere in time.
	LongHold = int64(200 * time.Millisecond)
	// RejectBatch refusals end a long hold early: they are written at once.
	RejectBatch = 16
	// ProbeTime is how long a peer found waiting for its refusals gets the
	// short hold before the long one is tried again (under 1% of its time
	// while it is refused).
	ProbeTime = int64(25 * time.Second)
	// SparseGap: a connection whose next RejectBatch frames take at least
	// this long at its own pace is sparse, and its reads may be parked
	// with its refusals; a dense one's window would fill meanwhile.
	SparseGap = int64(100 * time.Millisecond)
	// IdleParkReads is how many long parks an idle, overloaded loop reads
	// at once, to get back a few connections that may bring admissible
	// frames.
	IdleParkReads = 8
)

// Hold returns how long an out-queue holding only held refusals waits to
// be written: short, or long for a peer on the long hold; a long hold that
// gathered RejectBatch refusals is over (0).
func Hold(short, long int64, onLong bool, held int32) int64 {
	if !onLong {
		return short
	}
	if held >= RejectBatch {
		return 0
	}
	return long
}

// PeerWaits reports whether a long hold that ends found a peer that waits
// for its refusals: it held a single refusal, or the peer sent nothing for
// the second half of the hold (quiet, the time since it last sent). Such a
// peer gets the short hold for ProbeTime.
func PeerWaits(held int32, quiet, hold int64) bool { return held == 1 || quiet > hold/2 }

// Pace is one connection's average time between frames, which tells a
// sparse connection from a dense one. Its zero value has no measurement.
type Pace struct {
	readAt int64 // the last read
	gap    int64 // average time between frames; 0: unknown
	frames int32 // frames decoded since readAt
}

// Frame counts a decoded frame.
func (p *Pace) Frame() { p.frames++ }

// Read folds the time since the last read, divided by the frames it
// brought, into the average (weight 1/4), at a read at now. A read at the
// same clock reading as the last (two reads in one loop turn) folds
// nothing: its frames count toward the next.
func (p *Pace) Read(now int64) {
	if p.readAt != 0 && now == p.readAt {
		return
	}
	if n := int64(p.frames); n > 0 && p.readAt != 0 {
		gap := (now - p.readAt) / n
		if p.gap == 0 {
			p.gap = gap
		} else {
			p.gap += (gap - p.gap) / 4
		}
	}
	p.frames, p.readAt = 0, now
}

// Sparse reports whether the connection's next RejectBatch frames take at
// least SparseGap at its pace.
func (p *Pace) Sparse() bool { return p.gap*RejectBatch >= SparseGap }

// BatchDue returns when the connection's next RejectBatch frames are due
// at its pace, from now.
func (p *Pace) BatchDue(now int64) int64 { return now + p.gap*RejectBatch }

// LightShares: a connection sending at most 1/LightShares of its fair
// share of a loop is light (docs/OVERLOAD.md, "Light connections"): all
// light connections together ask at most that part of the loop, so
// serving them up to L cannot overload it.
const LightShares = 2

// LightGap returns the average time between frames at or above which a
// connection is light on a loop of average service time service (ns) that
// active connections sent to in its last busy window; 0 (none is light)
// before either is measured.
func LightGap(service int64, active int32) int64 {
	if service <= 0 || active <= 0 {
		return 0
	}
	return LightShares * service * int64(active)
}

// Light reports whether the connection's measured pace is at least gap
// (LightGap) apart; never with no measurement or gap 0.
func (p *Pace) Light(gap int64) bool { return gap > 0 && p.gap >= gap }

// LightUnmeasured reports, for a connection with no pace yet, whether
// the frame just counted is the only one of its read and comes at least
// gap (LightGap) after its previous read, or in its first read: the pace
// this read shows is light.
func (p *Pace) LightUnmeasured(now, gap int64) bool {
	return gap > 0 && p.gap == 0 && p.frames <= 1 && (p.readAt == 0 || now-p.readAt >= gap)
}

// LightRead reports whether the frame just counted is the only one of its
// read and comes at least gap (LightGap) after the previous read: whatever
// the average says, this read shows a light pace.
func (p *Pace) LightRead(now, gap int64) bool {
	return gap > 0 && p.frames <= 1 && p.readAt != 0 && now-p.readAt >= gap
}
