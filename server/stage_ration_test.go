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
func rationStage(t *testing.T, classify bool) (*stage, *loop) {
	t.Helper()
	pol := AdmissionPolicy{Admitter: newAdmitter(t, admission.Config{MemoryLimitBytes: -1, CoDel: &admission.CoDelConfig{}})}
	if classify {
		pol.Classify = func(*Conn, []byte, *admission.Frame) {}
	}
	e, err := New(Config{Loops: 1, Codec: protocol.Delimited{}, Admission: pol}, HandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	s, l := loopStage(e), e.loops[0]
	l.now = e.clock()
	s.ration.Refused(int64(60 * time.Millisecond))
	s.ration.Judge(int64(100*time.Millisecond), true)
	if !s.auto || !s.ration.On() {
		t.Fatalf("auto %v, rationing %v", s.auto, s.ration.On())
	}
	return s, l
}

// readOf plays one read of c through the stage's hooks, as readConn does:
// frames decoded, refused of them refused (critical: one of those was a
// critical frame).
func readOf(s *stage, c *Conn, frames, refused int, critical bool) bool {
	if !s.beforeRead(c, false) {
		return false
	}
	s.st[cFrames] += uint64(frames)
	s.st[cRejects] += uint64(refused)
	if critical {
		s.rd.crit = true
	}
	s.readEnd(c, 0, false)
	return true
}

// TestRationedReads: while the loop rations, a read that brought only
// refusals holds its connection for the ration's hold (not read, dated
// from the hold); the read that ends the hold refuses what waited without
// holding again and lets its refusals go with the turn; the next read
// that refuses everything holds it again. A read that admitted a frame,
// or refused a critical one, holds nothing. An idle loop reads the
// shed.IdleParkReads held longest before their holds end.
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
	if !readOf(s, c, 8, 8, false) || a.flags&(sRationed|sReleased) != 0 || c.flags&fRejOnly != 0 {
		t.Fatalf("the read that ended the hold: flags %b, its refusals held %v", a.flags, c.flags&fRejOnly != 0)
	}
	if !readOf(s, c, 8, 8, false) || a.flags&sRationed == 0 {
		t.Fatal("the next read that refused everything did not hold again")
	}

	// an idle loop pulls the shed.IdleParkReads held longest
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
	if got := before - s.held.n; got != shed.IdleParkReads {
		t.Fatalf("an idle loop released %d held connections, want %d", got, shed.IdleParkReads)
	}
	if a.flags&sRationed != 0 {
		t.Fatal("the connection held longest was not among them")
	}

	// not overloaded any more: rationing ends, nothing more is held
	s.ration.Judge(int64(100*time.Millisecond), false)
	ci := &Conn{loop: l, fd: 100}
	s.track(ci, &connStage{drainedAt: l.now})
	if !readOf(s, ci, 3, 3, false) || s.of(ci).flags&sRationed != 0 {
		t.Fatal("a loop not overloaded held a read")
	}
}

// TestRationedReadsWithClasses: with Classify a rationed connection is
// held at most RejectFlushDelay, so that a critical frame sent meanwhile
// is read before L.
func TestRationedReadsWithClasses(t *testing.T) {
	s, l := rationStage(t, true)
	c := &Conn{loop: l, fd: 7}
	a := &connStage{drainedAt: l.now}
	s.track(c, a)
	if !readOf(s, c, 4, 4, false) || a.flags&sRationed == 0 {
		t.Fatal("a read that refused everything did not hold its connection")
	}
	if hold := a.heldUntil - l.now; hold > s.rejDelay || hold+s.caps.Short() > s.caps.Long() {
		t.Fatalf("held %v with classes (RejectFlushDelay %v, L %v)", time.Duration(hold), time.Duration(s.rejDelay), time.Duration(s.caps.Long()))
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
