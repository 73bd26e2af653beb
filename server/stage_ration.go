package server

import "github.com/sluicenet/sluice/admission/shed"

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
	serve   int64 // handler time of its admitted frames
	crit    bool  // a critical frame was among its refused ones
}

// heldList is the rationed connections in the order they were held, so
// its front is (about) the first due: every hold lasts the ration's hold,
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
	s.rd = readAccount{c: c, turn: s.v.now, rej0: s.st[cRejects], frames0: s.st[cFrames]}
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
// read that ends a hold refuses what waited in one batch and holds
// nothing, so that c's next frames, sent on its refusals, may be served.
// A read with nothing refused costs no clock reading.
func (s *stage) rationRead(c *Conn, a *connStage) {
	rd := &s.rd
	if !s.rations || rd.c != c {
		return
	}
	rd.c = nil
	rej := s.st[cRejects] - rd.rej0
	if rej == 0 {
		a.flags &^= sReleased
		return
	}
	frames := max(s.st[cFrames]-rd.frames0, rej)
	if rd.t0 != 0 {
		s.ration.Refused((s.e.clock() - rd.t0 - rd.serve) * int64(rej) / int64(frames))
	}
	released := a.flags&sReleased != 0
	a.flags &^= sReleased
	if released {
		c.flags &^= fRejOnly // the batch the hold gathered goes out with this turn
	}
	if !s.ration.On() || rej < frames || rd.crit || released || s.v.draining || s.lightConn(a) ||
		c.flags&fClosed != 0 || c.closing != nil || a.flags&(sSlow|sRationed) != 0 {
		return
	}
	s.hold(a, s.v.now)
}

// staleRelease reports whether c's frames come from the read that ends a
// ration's hold: they may have waited the hold in the kernel.
func (s *stage) staleRelease(c *Conn) bool {
	a := s.of(c)
	return a != nil && a.flags&sReleased != 0
}

// hold takes c off the reads for the ration's hold. Its next bytes are
// dated from since at the latest: they are not proven younger whatever
// edge reports them.
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
	if s.held.tail == nil {
		s.held.head = a
	} else {
		s.held.tail.nextHeld = a
	}
	s.held.tail = a
	s.held.n++
	s.st[cRationHolds]++
}

// releaseHeld moves the rationed connections whose hold is over to the
// ready list, from the front of the held list: all of them when the loop
// drains, and shed.IdleParkReads more when it had nothing else to do (their
// waiting frames are refused in one batch; the frames their peers send on
// those refusals are fresh, so the loop pulls work in as it has room).
func (s *stage) releaseHeld() {
	early := 0
	if s.held.now {
		early = shed.IdleParkReads
	}
	s.held.now = false
	for a := s.held.head; a != nil; a = s.held.head {
		if !s.v.draining && s.v.now < a.heldUntil {
			if early == 0 {
				return
			}
			early--
		}
		s.held.head = a.nextHeld
		if s.held.head == nil {
			s.held.tail = nil
		}
		a.nextHeld = nil
		s.held.n--
		c := a.c
		a.flags &^= sRationed
		c.flags &^= fDeferred
		if c.flags&fClosed != 0 || s.of(c) != a {
			continue
		}
		a.flags |= sReleased
		s.act.ready(c, fNeedRead)
		if c.flags&fRejOnly != 0 && c.out != nil {
			// the refusals its last read queued go out now at the latest:
			// a peer that waits for them sends nothing meanwhile
			c.flags &^= fRejOnly
			s.act.markDirty(c)
		}
	}
}

// heldDue returns when the first rationed connection's hold ends (0: none).
func (s *stage) heldDue() int64 {
	if s.held.head == nil {
		return 0
	}
	return s.held.head.heldUntil
}

// lightCount counts, busy window by busy window, the tenants that sent
// frames and each one's connections that did, and derives from the last
// window's counts the pace at which a connection is light
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

	service int64                 // the loop's average service time when the last window closed; 0: none is light
	last    int32                 // tenants in the last window
	lastN   [shed.FairSlots]int32 // connections of each tenant in the last window
}

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

// roll closes the window: the light pace follows its counts and the loop's
// average service time.
func (l *lightCount) roll(service int64) {
	l.service, l.last = service, l.tenants
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
// 1/(tenants × its tenant's connections), as of the last window.
func (l *lightCount) gap(a *connStage) int64 {
	return shed.LightGap(l.service, l.last*max(1, l.lastN[a.slot]))
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
