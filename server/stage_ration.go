package server

import (
	"math"
	"time"

	"github.com/sluicenet/sluice/admission/shed"
)

// Rationed reads (docs/OVERLOAD.md#rationed-reads): the stage times the
// frames it refuses, read by read, and once refusing takes more than
// shed.RefuseSharePermille of the loop's busy time (shed.Ration), a
// connection whose read brought only refusals is not read for the
// ration's hold. What it sends meanwhile waits in the kernel, dated from
// the hold, and is refused in one read and one write when the hold ends
// (or when the loop would otherwise sleep).

// readAccount is what one read's frames cost: the refusals and frames the
// loop counted before it (so their difference is the read's), when it
// began, and how long its admitted frames' handlers ran. A read is known
// by its connection and its turn; one not closed by readEnd is dropped by
// the next.
type readAccount struct {
	c       *Conn
	turn    int64 // the turn clock the read began in
	t0      int64 // clock at its start (0: not yet read)
	rej0    uint64
	frames0 uint64
	bytes0  uint64
	serve   int64 // handler time of its admitted frames
	crit    bool  // a critical frame was among its refused ones
}

// heldList is rationed connections in the order they were held, so its
// front is (about) the first due: every hold lasts the ration's hold,
// which changes only once per busy window.
type heldList struct {
	head, tail *connStage
	n          int32
	now        bool // the loop had nothing else to do: read the first shed.IdleParkReads at the next turn start
}

// openRead starts accounting for a read of c unless one is open for c in
// this turn already (recv mode opens it at readStart, before beforeRead).
func (s *stage) openRead(c *Conn) {
	if !s.rations || s.rd.c == c && s.rd.turn == s.v.now {
		return
	}
	s.rd = readAccount{c: c, turn: s.v.now, rej0: s.st[cRejects], frames0: s.st[cFrames], bytes0: s.st[cBytesIn]}
}

// startRead dates the open read's start at t, if not dated yet.
func (s *stage) startRead(c *Conn, t int64) {
	if s.rations && s.rd.c == c && s.rd.t0 == 0 {
		s.rd.t0 = t
	}
}

// rationRead closes c's read: the share of its time (less its handlers')
// that its refused frames took is charged to the ration, and while the
// loop rations, a read that brought only refusals holds c (hold). The
// reads that end a hold refuse what waited in one batch and hold nothing,
// so that c's next frames, sent on its refusals, may be served: the read
// after the hold, and the reads after it while they leave bytes behind
// (more: the socket not drained, or frames held back), up to
// releaseBudget reads' worth of bytes, so that a peer that stopped leaves
// its backlog refused at once while one that never stops is bounded. A
// read with nothing refused costs no clock reading.
func (s *stage) rationRead(c *Conn, a *connStage, more bool) {
	rd := &s.rd
	if !s.rations || rd.c != c {
		return
	}
	rd.c = nil
	rej := s.st[cRejects] - rd.rej0
	if rej == 0 {
		if s.st[cFrames] > rd.frames0 {
			a.flags &^= sReleased // a frame admitted: what follows is fresh
		}
		return
	}
	frames := max(s.st[cFrames]-rd.frames0, rej)
	if rd.t0 != 0 {
		s.ration.Refused((s.e.clock() - rd.t0 - rd.serve) * int64(rej) / int64(frames))
	}
	released := a.flags&sReleased != 0
	if released {
		c.refusalsDue() // the batch the hold gathered goes out with this turn
		a.relLeft -= int64(s.st[cBytesIn] - rd.bytes0)
		if !more || a.relLeft <= 0 {
			a.flags &^= sReleased
			a.barren = more // a backlog past the budget: a peer that never stops sending
		}
	}
	if !s.ration.On() || rej < frames || rd.crit || released || s.v.draining || s.lightConn(a) ||
		c.flags&fClosed != 0 || c.closing != nil || a.flags&(sSlow|sRationed) != 0 {
		return
	}
	if s.goAwayDue(a) {
		s.goAway(c) // past any share the loop can give it: a last refusal instead of another hold
		return
	}
	s.hold(a, s.v.now)
}

// refusalsWritten charges a write of refusals alone to the ration: the
// reads' accounts (rationRead) end before the turn's flush.
func (s *stage) refusalsWritten(d int64) {
	if s.rations {
		s.ration.Refused(d)
	}
}

// releaseBudget is how many read budgets (Config.ReadBudgetBytes) the
// reads that end a hold may bring before the connection may be held again.
const releaseBudget = 4

// staleRelease reports whether c's frames come from the read that ends a
// ration's hold: they may have waited the hold in the kernel.
func (s *stage) staleRelease(c *Conn) bool {
	a := s.of(c)
	return a != nil && a.flags&sReleased != 0
}

// heldBacklog reports whether c's frames are what waited in the kernel
// while the loop held c: they come from the reads that end a hold, or c
// is barren (its backlog outlasts them).
func (s *stage) heldBacklog(c *Conn) bool {
	a := s.of(c)
	return a != nil && (a.flags&sReleased != 0 || a.barren)
}

// hold takes c off the reads for the ration's hold. Its next bytes are
// dated from since at the latest: they are not proven younger whatever
// edge reports them. A barren connection (the reads that ended its last
// hold brought the release budget and left bytes behind, and nothing of
// it was admitted since) goes on the barren list, which an idle loop does
// not read early: a peer that keeps its socket full and never reads its
// refusals (a flooder) brings only stale frames whenever it is read, and
// would otherwise be read and refused as fast as the loop goes
// (docs/OVERLOAD.md#rationed-reads).
func (s *stage) hold(a *connStage, since int64) {
	a.flags = a.flags&^sFresh | sRationed
	a.c.flags |= fDeferred
	a.drainedAt = min(a.drainedAt, since)
	h := s.ration.Hold()
	if a.critical {
		h = min(h, s.rejDelay) // a critical frame sent meanwhile must not wait past L
	}
	a.heldUntil = s.v.now + h
	a.nextHeld = nil
	if a.barren {
		s.barren.push(a)
		s.barrenWindow = true
	} else {
		s.held.push(a)
	}
	s.st[cRationHolds]++
}

// push appends a to the list.
func (h *heldList) push(a *connStage) {
	if h.tail == nil {
		h.head = a
	} else {
		h.tail.nextHeld = a
	}
	h.tail = a
	h.n++
}

// pop takes the list's first connection off it.
func (h *heldList) pop() *connStage {
	a := h.head
	h.head = a.nextHeld
	if h.head == nil {
		h.tail = nil
	}
	a.nextHeld = nil
	h.n--
	return a
}

// releaseHeld moves the rationed connections whose hold is over to the
// ready list, from the front of the held lists: all of them when the loop
// drains, and shed.IdleParkReads more of the held (not barren) ones when it
// had nothing else to do (their waiting frames are refused in one batch;
// the frames their peers send on those refusals are fresh, so the loop
// pulls work in as it has room).
func (s *stage) releaseHeld() {
	early := 0
	if s.held.now {
		early = shed.IdleParkReads
	}
	s.held.now = false
	for a := s.held.head; a != nil; a = s.held.head {
		if !s.v.draining && s.v.now < a.heldUntil {
			if early == 0 {
				break
			}
			early--
			s.st[cRationPulls]++
		}
		s.release(s.held.pop())
	}
	for a := s.barren.head; a != nil && (s.v.draining || s.v.now >= a.heldUntil); a = s.barren.head {
		s.barrenWindow = true
		s.release(s.barren.pop())
	}
}

// release ends a's hold: its connection is read at once, and its held
// refusals are written with that turn.
func (s *stage) release(a *connStage) {
	c := a.c
	a.flags &^= sRationed
	c.flags &^= fDeferred
	if c.flags&fClosed != 0 || s.of(c) != a {
		return
	}
	a.flags |= sReleased
	a.relLeft = s.relBytes
	s.act.ready(c, fNeedRead)
	if c.flags&fRejOnly != 0 && c.out != nil {
		// the refusals its last read queued go out now at the latest:
		// a peer that waits for them sends nothing meanwhile
		c.refusalsDue()
		s.act.markDirty(c)
	}
}

// due returns when the hold of the list's first connection ends
// (math.MaxInt64: the list is empty).
func (h *heldList) due() int64 {
	if h.head == nil {
		return math.MaxInt64
	}
	return h.head.heldUntil
}

// lightCount counts, window by window (a window ends with the first busy
// window's end at which it is as long as the light gap it counts: roll),
// the tenants that sent frames and each one's connections that did, and
// derives from the counts the pace at which a connection is light
// (shed.LightGap): under a standing queue its frames are admitted up to L,
// and its reads are not deferred below L, so that a connection far below
// its fair share of the loop does not pay for those above it
// (docs/OVERLOAD.md#light-connections). A connection's fair share is its
// tenant's (1/tenants) divided between the tenant's connections: a tenant
// with 1,000 connections does not shrink the share of one with a single
// connection. Tenants are the peers' keys (AdmissionPolicy.TenantKey of the
// address) in shed.Slot's slots.
type lightCount struct {
	window  uint32 // the current window's number
	tenants int32  // tenants that sent a frame in it
	slotWin [shed.FairSlots]uint32
	slotN   [shed.FairSlots]int32 // connections of each tenant that sent a frame in window slotWin

	service int64                 // the loop's average service time at the last busy window's end; 0: none is light
	last    int32                 // tenants in the last window
	lastN   [shed.FairSlots]int32 // connections of each tenant in the last window
	since   int64                 // when the current window began
}

// maxLightWindow bounds how long a light window may grow to count sparse
// connections (lightCount.roll).
const maxLightWindow = int64(2 * time.Second)

// sent counts a's frame in the current window.
func (l *lightCount) sent(a *connStage) {
	if a.window == l.window {
		return
	}
	a.window = l.window
	if l.slotWin[a.slot] != l.window {
		l.slotWin[a.slot], l.slotN[a.slot] = l.window, 0
		l.tenants++
	}
	l.slotN[a.slot]++
}

// countHeld counts the connections the loop holds (rationed or barren)
// as sending in the closing window: a hold keeps their frames out of the
// reads, and a light pace judged against fewer connections than the loop
// holds would pass the held hammers themselves as light
// (docs/OVERLOAD.md#light-connections).
func (s *stage) countHeld() {
	for _, h := range [...]*heldList{&s.held, &s.barren} {
		for a := h.head; a != nil; a = a.nextHeld {
			s.light.sent(a)
		}
	}
}

// roll closes the window at now, a busy window's end, unless it is
// shorter than the longest light gap its own counts give so far (at most
// maxLightWindow): a connection is counted only if it sends within the
// window, so a window shorter than the gaps of sparse connections would
// miss most of them and make them all light (1,000 connections at 1/s
// counted as a hundred in 100 ms, docs/OVERLOAD.md#light-connections).
// The light pace follows the counts and the loop's average service time.
func (l *lightCount) roll(now, service int64) {
	l.service = service
	var most int32 // the most connections of one tenant in the window
	for i, w := range l.slotWin {
		if w == l.window {
			most = max(most, l.slotN[i])
		}
	}
	if now-l.since < min(maxLightWindow, shed.LightGap(service, l.tenants*most)) {
		return
	}
	l.since, l.last = now, l.tenants
	for i := range l.lastN {
		l.lastN[i] = 0
		if l.slotWin[i] == l.window {
			l.lastN[i] = l.slotN[i]
		}
	}
	l.tenants = 0
	l.window++
}

// gap is the light pace of a's connection: shed.LightGap for a share of
// 1/(tenants × its tenant's connections), as of the last window or the
// current one, whichever counted more: a window kept open to count sparse
// connections (roll) must not leave the counts of the one before it
// standing meanwhile.
func (l *lightCount) gap(a *connStage) int64 {
	n := l.lastN[a.slot]
	if l.slotWin[a.slot] == l.window {
		n = max(n, l.slotN[a.slot])
	}
	return shed.LightGap(l.service, max(l.last, l.tenants)*max(1, n))
}

// isLight reports whether c is light (lightConn).
func (s *stage) isLight(c *Conn) bool {
	a := s.of(c)
	return a != nil && s.lightConn(a)
}

// lightConn reports whether a's connection is light: its pace is at least
// the light gap (or, with no pace yet, this read shows a light one:
// shed.Pace.LightUnmeasured), and not more than one of its frames was
// refused since one was admitted. A client that answers each refusal with
// a new request is paced by the refusals' holds, not by its demand
// (serving it would quicken it at once), and its reads bring its refused
// frames in runs; a light one refused once, late in a long turn, stays
// light. One refused more often is light again by a read that brings a
// single frame a light gap after the previous read (shed.Pace.LightRead):
// a hammer's reads bring runs, and one with one request in flight is
// served this way at most once per light gap, a light connection's rate
// (docs/OVERLOAD.md#light-connections).
func (s *stage) lightConn(a *connStage) bool {
	gap := s.light.gap(a)
	if a.refusedRun >= lightRefusedRun {
		return a.pace.LightRead(s.v.now, gap)
	}
	return a.pace.Light(gap) || a.pace.LightUnmeasured(s.v.now, gap)
}

// lightRefusedRun refused frames in a row make a connection not light.
const lightRefusedRun = 2
