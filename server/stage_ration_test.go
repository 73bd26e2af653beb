package server

import (
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/admission/shed"
	"github.com/sluicenet/sluice/protocol"
)

// rationStage builds a loop's stage with derived shedding (not started)
// whose ration is on: the last busy window was overloaded and refusals
// took 60% of it.
func rationStage(t *testing.T, classify bool, opts ...func(*AdmissionPolicy)) (*stage, *loop) {
	t.Helper()
	pol := AdmissionPolicy{Admitter: newAdmitter(t, admission.Config{MemoryLimitBytes: -1, CoDel: &admission.CoDelConfig{}})}
	if classify {
		pol.Classify = func(*Conn, []byte, *admission.Frame) {}
	}
	for _, o := range opts {
		o(&pol)
	}
	e, err := New(Config{Loops: 1, Codec: protocol.Delimited{}, Admission: pol}, HandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	s, l := loopStage(e), e.loops[0]
	l.now = e.clock()
	s.ration.Refused(int64(60 * time.Millisecond))
	s.ration.Judge(int64(100*time.Millisecond), true, false)
	if !s.auto || !s.ration.On() {
		t.Fatalf("auto %v, rationing %v", s.auto, s.ration.On())
	}
	return s, l
}

// readOf plays one read of c that empties its socket through the stage's
// hooks, as readConn does: frames decoded, refused of them refused
// (critical: one of those was a critical frame).
func readOf(s *stage, c *Conn, frames, refused int, critical bool) bool {
	return readBytes(s, c, frames, refused, critical, 0, true)
}

// readBytes is readOf for a read of n bytes that emptied the socket or
// not (drained).
func readBytes(s *stage, c *Conn, frames, refused int, critical bool, n int, drained bool) bool {
	if !s.beforeRead(c, false) {
		return false
	}
	s.st[cFrames] += uint64(frames)
	s.st[cRejects] += uint64(refused)
	s.st[cBytesIn] += uint64(n)
	if critical {
		s.rd.crit = true
	}
	s.readEnd(c, 0, drained)
	return true
}

// TestRationedReads: while the loop rations, a read that brought only
// refusals holds its connection for the ration's hold (not read, dated
// from the hold); the reads that end the hold (the first, and those after
// it while they leave bytes behind, up to a release budget) refuse what
// waited without holding again and let its refusals go with the turn; the
// next read that refuses everything holds it again, now as barren (its
// hold ended in reads that brought the budget and left bytes behind). A
// read that admitted a frame, or refused a critical one, holds nothing.
// An idle loop reads the shed.IdleParkReads held longest before their
// holds end, but not a barren one, and sleeps when only barren ones are
// held.
func TestRationedReads(t *testing.T) {
	s, l := rationStage(t, false)
	c := &Conn{loop: l, fd: 7}
	a := &connStage{drainedAt: l.now, flags: sFresh}
	s.track(c, a)

	if !readOf(s, c, 5, 2, false) || a.flags&sRationed != 0 {
		t.Fatal("a read that admitted frames held its connection")
	}
	if !readOf(s, c, 5, 5, true) || a.flags&sRationed != 0 {
		t.Fatal("a read that refused a critical frame held its connection")
	}
	if !readOf(s, c, 5, 5, false) || a.flags&sRationed == 0 || c.flags&fDeferred == 0 {
		t.Fatal("a read that refused everything did not hold its connection")
	}
	if s.held.n != 1 || s.st[cRationHolds] != 1 || a.heldUntil != l.now+s.ration.Hold() || a.drainedAt > l.now {
		t.Fatalf("held %d, holds %d, until +%v, dated %v ago", s.held.n, s.st[cRationHolds],
			time.Duration(a.heldUntil-l.now), time.Duration(l.now-a.drainedAt))
	}
	if s.beforeRead(c, true) {
		t.Fatal("a held connection was read on an edge")
	}
	if due := s.turnEnd(admission.LoopLoad{}, l.now+int64(time.Hour)); due != a.heldUntil {
		t.Fatalf("the timerfd wakes the loop in %v, want at the hold's end", time.Duration(due-l.now))
	}

	s.releaseHeld() // not due yet
	if a.flags&sRationed == 0 {
		t.Fatal("released before its hold ended")
	}
	l.now = a.heldUntil
	s.releaseHeld()
	if a.flags&(sRationed|sReleased) != sReleased || c.flags&(fDeferred|fNeedRead) != fNeedRead || l.readyq.head != c || s.held.n != 0 {
		t.Fatalf("after its hold: flags %b, conn flags %b, ready %v", a.flags, c.flags, l.readyq.head == c)
	}
	c.flags |= fRejOnly
	budget := int(s.relBytes)
	if !readBytes(s, c, 8, 8, false, budget/2, false) || a.flags&(sRationed|sReleased) != sReleased || c.flags&fRejOnly != 0 {
		t.Fatalf("the read that ended the hold, leaving bytes behind: flags %b, its refusals held %v", a.flags, c.flags&fRejOnly != 0)
	}
	if !readBytes(s, c, 8, 8, false, budget/2, false) || a.flags&(sRationed|sReleased) != 0 {
		t.Fatalf("the reads that ended the hold brought its release budget: flags %b", a.flags)
	}
	if !readOf(s, c, 8, 8, false) || a.flags&sRationed == 0 {
		t.Fatal("the next read that refused everything did not hold again")
	}

	// its hold ended in reads that brought the release budget and left
	// bytes behind: barren, read only when due
	if s.barren.n != 1 || s.barren.head != a || s.held.n != 0 {
		t.Fatalf("held again with nothing admitted: %d barren (it first: %v), %d held", s.barren.n, s.barren.head == a, s.held.n)
	}

	// an idle loop pulls the shed.IdleParkReads held longest, not the barren
	for fd := 8; fd < 8+2*shed.IdleParkReads; fd++ {
		ci := &Conn{loop: l, fd: int32(fd)}
		s.track(ci, &connStage{drainedAt: l.now})
		readOf(s, ci, 1, 1, false)
	}
	before := s.held.n
	if !s.idle() || !s.held.now {
		t.Fatal("an idle loop with held connections sleeps")
	}
	s.releaseHeld()
	if got := before - s.held.n; got != shed.IdleParkReads || s.st[cRationPulls] != uint64(got) {
		t.Fatalf("an idle loop released %d held connections (%d pulls counted), want %d", got, s.st[cRationPulls], shed.IdleParkReads)
	}
	if a.flags&sRationed == 0 {
		t.Fatal("an idle loop read a barren connection before its hold ended")
	}
	for s.held.n > 0 && s.idle() {
		s.releaseHeld()
	}
	if s.held.n != 0 || s.idle() {
		t.Fatalf("%d held left; with only barren connections held an idle loop does not sleep", s.held.n)
	}
	if due := s.turnEnd(admission.LoopLoad{}, l.now+int64(time.Hour)); due != a.heldUntil {
		t.Fatalf("the timerfd wakes the loop in %v, want at the barren hold's end", time.Duration(due-l.now))
	}
	l.now = a.heldUntil
	s.releaseHeld()
	if a.flags&(sRationed|sReleased) != sReleased || s.barren.n != 0 {
		t.Fatalf("after its barren hold: flags %b, %d barren", a.flags, s.barren.n)
	}

	// not overloaded any more, nothing refused, and (as the ration is told)
	// none held: rationing ends, nothing more is held
	s.ration.Judge(int64(100*time.Millisecond), false, false)
	ci := &Conn{loop: l, fd: 100}
	s.track(ci, &connStage{drainedAt: l.now})
	if !readOf(s, ci, 3, 3, false) || s.of(ci).flags&sRationed != 0 {
		t.Fatal("a loop not overloaded held a read")
	}
}

// TestRationedReadsWithClasses: with Classify a rationed connection that
// has sent a critical frame is held at most RejectFlushDelay, so that a
// critical frame sent meanwhile is read before L; one that has not is held
// for the ration's hold, as without classes.
func TestRationedReadsWithClasses(t *testing.T) {
	s, l := rationStage(t, true)
	c := &Conn{loop: l, fd: 7}
	a := &connStage{drainedAt: l.now}
	s.track(c, a)
	if !readOf(s, c, 4, 4, false) || a.flags&sRationed == 0 {
		t.Fatal("a read that refused everything did not hold its connection")
	}
	if hold := a.heldUntil - l.now; hold != s.ration.Hold() {
		t.Fatalf("a connection with no critical frame held %v with classes, want the ration's hold %v", time.Duration(hold), time.Duration(s.ration.Hold()))
	}
	cc := &Conn{loop: l, fd: 8}
	ca := &connStage{drainedAt: l.now, critical: true}
	s.track(cc, ca)
	if !readOf(s, cc, 4, 4, false) || ca.flags&sRationed == 0 {
		t.Fatal("a read that refused everything did not hold its connection")
	}
	if hold := ca.heldUntil - l.now; hold > s.rejDelay || hold+s.caps.Short() > s.caps.Long() {
		t.Fatalf("a connection that sent a critical frame held %v (RejectFlushDelay %v, L %v)", time.Duration(hold), time.Duration(s.rejDelay), time.Duration(s.caps.Long()))
	}
}

// TestRationedReadsZeroAllocs: a rationed connection's cycle (a read that
// refuses everything holds it, its hold ends, the read that ends it
// refuses in one batch) allocates nothing.
func TestRationedReadsZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's bookkeeping allocates")
	}
	s, l := rationStage(t, false)
	c := &Conn{loop: l, fd: 7}
	a := &connStage{drainedAt: l.now}
	s.track(c, a)
	cycle := func() {
		readOf(s, c, 8, 8, false) // held
		l.now = a.heldUntil
		s.releaseHeld()
		l.readyq = connQueue{}
		c.flags &^= fReady | fNeedRead
		readOf(s, c, 8, 8, false) // the read that ends the hold
	}
	cycle()
	if s.st[cRationHolds] != 1 || a.flags&(sRationed|sReleased) != 0 {
		t.Fatalf("holds %d, flags %b after one cycle", s.st[cRationHolds], a.flags)
	}
	if n := testing.AllocsPerRun(1000, cycle); n != 0 {
		t.Errorf("%.1f allocations per rationed cycle, want 0", n)
	}
}

// TestLightConnections: under a standing queue a connection that sends at
// most half its fair share of the loop (shed.LightGap over the last busy
// window's connections) gets L for its normal frames and is read, not
// deferred, while its bytes are younger than L; a dense one beside it gets
// C and is held. One with two frames refused in a row is not light, and
// with 5,000 connections in the window, sending or held by the ration, the
// same pace is no longer light.
func TestLightConnections(t *testing.T) {
	s, l := rationStage(t, false)
	us, ms := int64(time.Microsecond), int64(time.Millisecond)
	for i := 0; i < 200; i++ { // handlers of 200 µs
		s.admitAt = s.e.clock() - 200*us
		s.afterFrame()
	}
	light := &Conn{loop: l, fd: 7}
	la := &connStage{drainedAt: l.now}
	s.track(light, la)
	dense := &Conn{loop: l, fd: 8}
	da := &connStage{drainedAt: l.now}
	s.track(dense, da)
	t0 := l.now
	la.pace.Read(t0)
	da.pace.Read(t0)
	la.pace.Frame() // one frame in 50 ms: 20/s
	la.pace.Read(t0 + 50*ms)
	for i := 0; i < 10; i++ { // ten frames in 2 ms
		da.pace.Frame()
	}
	da.pace.Read(t0 + 2*ms)
	// window plays busy windows in which la, da and conns-2 others send,
	// until the light window closes (it stays open while shorter than the
	// light gap its counts give), and returns how many it took.
	others := make([]connStage, 5000)
	window := func(conns int) int {
		t.Helper()
		for n := 1; n <= 100; n++ {
			s.light.sent(la)
			s.light.sent(da)
			for i := 2; i < conns; i++ { // the others: counted once each
				s.light.sent(&others[i])
			}
			l.now, l.slept = s.busy.WindowEnd(), false
			s.noteIdle()
			if !s.overloaded() || !s.standing() {
				t.Fatal("a window without sleep: not a standing queue")
			}
			if s.light.since == l.now {
				return n
			}
		}
		t.Fatal("the light window never closed")
		return 0
	}
	if n := window(65); n != 1 {
		t.Errorf("65 connections: the light window took %d busy windows, want 1 (its gap is shorter than one)", n)
	}
	c, L := s.caps.Short(), s.caps.Long()
	if got, _ := s.delayCap(light, admission.PriorityNormal); got != L {
		t.Errorf("light connection (20/s of a fair %.0f/s): cap %v, want L %v", 1e9/float64(s.caps.Service()*65), time.Duration(got), time.Duration(L))
	}
	if got, _ := s.delayCap(light, admission.PriorityBestEffort); got != c/2 {
		t.Errorf("light connection's best-effort frame: cap %v, want C/2 %v", time.Duration(got), time.Duration(c/2))
	}
	if got, _ := s.delayCap(dense, admission.PriorityNormal); got != c {
		t.Errorf("dense connection: cap %v, want C %v", time.Duration(got), time.Duration(c))
	}
	// One frame refused since the last admitted: still light. Two: paced
	// by its refusals, not light until a frame of its is admitted again.
	la.refusedRun = 1
	if got, _ := s.delayCap(light, admission.PriorityNormal); got != L {
		t.Errorf("light pace, one frame refused: cap %v, want L %v", time.Duration(got), time.Duration(L))
	}
	la.refusedRun = 2
	saved := la.pace
	la.pace.Read(l.now - ms) // this read 1 ms after the previous: its pace is not shown light
	if got, _ := s.delayCap(light, admission.PriorityNormal); got != c {
		t.Errorf("light pace, two frames refused, a read 1 ms after the last: cap %v, want C %v", time.Duration(got), time.Duration(c))
	}
	gap := s.light.gap(la)
	la.pace.Read(l.now - gap) // a light gap after the previous read, and its only frame: light again
	la.pace.Frame()
	if got, _ := s.delayCap(light, admission.PriorityNormal); got != L {
		t.Errorf("two frames refused, then a read of one frame a light gap (%v) later: cap %v, want L %v", time.Duration(gap), time.Duration(got), time.Duration(L))
	}
	la.pace.Frame() // a second frame in that read: a run
	if got, _ := s.delayCap(light, admission.PriorityNormal); got != c {
		t.Errorf("two frames refused, then a read of two frames: cap %v, want C %v", time.Duration(got), time.Duration(c))
	}
	la.pace = saved
	la.refusedRun = 0
	// Bytes waiting longer than C, not than L: the light one is read, the
	// dense one held (the loop rations).
	now := s.e.clock()
	l.now = now
	la.drainedAt, da.drainedAt = now-2*c, now-2*c
	la.flags &^= sFresh
	da.flags &^= sFresh
	if !s.beforeRead(light, true) {
		t.Error("light connection's read deferred")
	}
	s.readEnd(light, 0, false)
	if s.beforeRead(dense, true) || da.flags&sRationed == 0 {
		t.Errorf("dense connection read (flags %b)", da.flags)
	}
	// 5,000 connections held by the ration, none sending in the window:
	// they count as sending, so the same pace is no longer light (a held
	// hammer's pace is its hold's, not its demand).
	held := make([]connStage, 5000)
	for i := range held {
		held[i].slot = la.slot
		s.held.push(&held[i])
	}
	window(2)
	if got, _ := s.delayCap(light, admission.PriorityNormal); got != c {
		t.Errorf("light connection beside 5,000 held: cap %v, want C %v", time.Duration(got), time.Duration(c))
	}
	for range held {
		s.held.pop()
	}
	// 5,000 connections sending: its share is far below 20/s. Their light
	// gap (2 s) is longer than a busy window: the light window stays open
	// to count the sparse ones among them.
	if n := window(5000); n < 2 {
		t.Errorf("5,000 connections: the light window took %d busy window, want more", n)
	}
	if got, _ := s.delayCap(light, admission.PriorityNormal); got != c {
		t.Errorf("light connection among 5,000: cap %v, want C %v", time.Duration(got), time.Duration(c))
	}
}

// TestRationedReadsOnPool: with the worker pool's law derived and no
// queueing delay on the loop, the loop still judges its busy windows and
// rations what refusing costs it: once refusals took most of a busy
// window, a read that brought only refusals holds its connection, and one
// that brought a frame for the pool does not.
func TestRationedReadsOnPool(t *testing.T) {
	e, err := New(Config{Loops: 1, Codec: protocol.Delimited{},
		Admission: AdmissionPolicy{Admitter: newAdmitter(t, admission.Config{MemoryLimitBytes: -1})},
		Pool:      PoolConfig{Handler: poolEcho{}, Workers: 1, CoDel: &admission.CoDelConfig{}}}, HandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	s, l := loopStage(e), e.loops[0]
	if s.auto || !s.rations || s.shedDelay {
		t.Fatalf("pool stage: auto %v rations %v shedDelay %v, want false true false", s.auto, s.rations, s.shedDelay)
	}
	l.now = e.clock()
	// a busy window in which refusing took 60 ms of 100
	l.slept = false
	s.ration.Refused(int64(60 * time.Millisecond))
	l.now = s.busy.WindowEnd()
	s.noteIdle()
	if !s.ration.On() {
		t.Fatalf("not rationing after a window busy refusing (share %d‰)", s.ration.Share())
	}
	served := &Conn{loop: l, fd: 7}
	a := &connStage{}
	s.track(served, a)
	if !readOf(s, served, 4, 3, false) || a.flags&sRationed != 0 {
		t.Fatalf("a read that brought a frame for the pool held its connection (flags %b)", a.flags)
	}
	hammer := &Conn{loop: l, fd: 8}
	b := &connStage{}
	s.track(hammer, b)
	if !readOf(s, hammer, 4, 4, false) || b.flags&sRationed == 0 {
		t.Fatalf("a read of refusals only did not hold its connection (flags %b)", b.flags)
	}
	if s.beforeRead(hammer, true) {
		t.Fatal("a held connection read before its hold ended")
	}
	if got := s.st[cRationHolds]; got != 1 {
		t.Errorf("ration holds %d, want 1", got)
	}
}

// TestTurnTimeWithClasses: with classes, once a turn's inline handlers
// have run past L/3 of it, handled tells dispatch to hold each
// connection's further frames for the next turn, whose poll dates the
// edges reported meanwhile (a critical frame's cap is L); before that, or
// without classes, it does not.
func TestTurnTimeWithClasses(t *testing.T) {
	for _, classes := range []bool{false, true} {
		s, l := rationStage(t, classes)
		c := &Conn{loop: l, fd: 7}
		third := s.caps.Long() / 3
		l.now = s.e.clock()
		s.admitAt = l.now
		if s.handled(c) {
			t.Errorf("classes %v: a turn just begun is spent", classes)
		}
		l.now = s.e.clock() - third - int64(time.Millisecond)
		s.admitAt = s.e.clock()
		if got := s.handled(c); got != classes {
			t.Errorf("classes %v: a turn past L/3 (L %v) of inline work: spent %v, want %v", classes, time.Duration(s.caps.Long()), got, classes)
		}
	}
}
