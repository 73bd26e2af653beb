package server

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/protocol"
)

// TestCoolTable: a tenant added cools until its end and no longer; adding
// it again keeps the later end; a full table replaces the entry that ends
// first.
func TestCoolTable(t *testing.T) {
	var ct coolTable
	a, b := keyHash([]byte("a")), keyHash([]byte("b"))
	if ct.left(a, 0) != 0 {
		t.Fatal("an empty table cools a tenant")
	}
	ct.add(a, 100)
	ct.add(a, 50)
	if got := ct.left(a, 10); got != 90 {
		t.Fatalf("left at 10 = %d, want 90 (the later end kept)", got)
	}
	if ct.left(b, 10) != 0 || ct.left(a, 100) != 0 {
		t.Fatal("cools another tenant, or past its end")
	}
	for i := range coolSlots {
		ct.add(uint64(1000+i), int64(200+i))
	}
	if ct.left(a, 10) != 0 || ct.left(1000, 10) != 190 {
		t.Fatalf("a full table kept the entry ending first (%d) or lost a later one (%d)", ct.left(a, 10), ct.left(1000, 10))
	}
	ct.add(b, 500)
	if ct.left(b, 10) != 490 || ct.left(1000, 10) != 0 || ct.left(1001, 10) != 191 {
		t.Fatal("a full table did not replace the entry that ends first")
	}
}

// TestGoAwayDecision: while the loop rations, a connection whose read
// brought only refusals is held, unless its frames have been refused for
// GoAwayAfter, goAwayRefusals of them in a row, without one admitted
// (either alone is not enough): then it gets a final refusal and a
// graceful close (ErrGoAway), and its tenant cools at accept for
// GoAwayAfter (another tenant does not). A connection that has sent a
// critical frame, and any with GoAwayAfter Off, is held, never closed.
func TestGoAwayDecision(t *testing.T) {
	s, l := rationStage(t, false)
	if s.goAwayAfter != int64(DefaultGoAwayAfter) {
		t.Fatalf("derived GoAwayAfter %v, want %v", time.Duration(s.goAwayAfter), DefaultGoAwayAfter)
	}
	peer := netip.MustParseAddrPort("127.0.0.2:4000")
	c := &Conn{loop: l, fd: 7, remote: peer}
	a := &connStage{drainedAt: l.now, flags: sFresh}
	s.track(c, a)
	a.refusedRun, a.refusedSince = goAwayRefusals, l.now-s.goAwayAfter+1
	if !readOf(s, c, 5, 5, false) || a.flags&sRationed == 0 || c.closing != nil {
		t.Fatal("a connection refused for less than GoAwayAfter was not held")
	}
	l.now = a.heldUntil
	s.releaseHeld()
	readOf(s, c, 5, 5, false) // the release: refused, not held
	a.refusedSince, a.refusedRun = l.now-s.goAwayAfter, goAwayRefusals-1
	if !readOf(s, c, 5, 5, false) || a.flags&sRationed == 0 || c.closing != nil {
		t.Fatal("a connection refused fewer than goAwayRefusals times in a row was not held")
	}
	l.now = a.heldUntil
	s.releaseHeld()
	readOf(s, c, 5, 5, false)
	a.refusedSince, a.refusedRun = l.now-s.goAwayAfter, goAwayRefusals
	if !readOf(s, c, 5, 5, false) || !errors.Is(c.closing, ErrGoAway) || !errors.Is(c.closing, ErrRejected) {
		t.Fatalf("refused for GoAwayAfter: closing %v, want ErrGoAway", c.closing)
	}
	if s.st[cGoAways] != 1 || s.st[cRefusedBase+int(admission.ReasonGoAway)] != 1 {
		t.Fatalf("goaways %d, goaway refusals %d; want 1, 1", s.st[cGoAways], s.st[cRefusedBase+int(admission.ReasonGoAway)])
	}
	if got := s.cooling(netip.MustParseAddrPort("127.0.0.2:5000")); got != time.Duration(s.goAwayAfter) {
		t.Fatalf("its tenant cools for %v, want %v", got, time.Duration(s.goAwayAfter))
	}
	if got := s.cooling(netip.MustParseAddrPort("127.0.0.3:5000")); got != 0 {
		t.Fatalf("another tenant cools for %v", got)
	}
	l.now += s.goAwayAfter
	if got := s.cooling(peer); got != 0 {
		t.Fatalf("cools %v after GoAwayAfter", got)
	}

	cc := &Conn{loop: l, fd: 8, remote: peer}
	ac := &connStage{drainedAt: l.now, flags: sFresh, critical: true, refusedRun: goAwayRefusals, refusedSince: l.now - s.goAwayAfter}
	s.track(cc, ac)
	if !readOf(s, cc, 5, 5, false) || ac.flags&sRationed == 0 || cc.closing != nil {
		t.Fatal("a connection that sent a critical frame: not held, or closed")
	}

	off, lo := rationStage(t, false, func(p *AdmissionPolicy) { p.GoAwayAfter = Off })
	co := &Conn{loop: lo, fd: 7, remote: peer}
	ao := &connStage{drainedAt: lo.now, flags: sFresh, refusedRun: goAwayRefusals, refusedSince: lo.now - int64(time.Hour)}
	off.track(co, ao)
	if !readOf(off, co, 5, 5, false) || ao.flags&sRationed == 0 || co.closing != nil {
		t.Fatal("GoAwayAfter Off: not held, or closed")
	}
}

// TestGoAwayConfig: GoAwayAfter must be Off, zero or positive.
func TestGoAwayConfig(t *testing.T) {
	adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1, CoDel: &admission.CoDelConfig{}})
	_, err := New(Config{Codec: protocol.Delimited{}, Admission: AdmissionPolicy{Admitter: adm, GoAwayAfter: -2}}, HandlerFuncs{})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("GoAwayAfter -2: %v, want ErrInvalidConfig", err)
	}
}

// TestGoAway: one tenant hammers on many connections, each with frames in
// flight and a new one sent on every answer, beside the nine paced
// tenants, with a short GoAwayAfter (the nine, one frame in flight each,
// are refused far fewer than goAwayRefusals times in a row, so they stay). Connections refused that long get a
// final refusal ("goaway"), after every answer to what they sent before
// it, and then the end of the stream; reconnecting at once from the same
// tenant gets the final refusal at accept and a close, while a connection
// from another tenant is served; the engine's counts match what the
// clients saw, and the nine are not starved (each served at least a
// third, but for at most one).
func TestGoAway(t *testing.T) {
	if testing.Short() {
		t.Skip("a hammer")
	}
	const (
		conns    = 40
		inFlight = 64
		after    = 60 * time.Millisecond
	)
	e := spinEchoEnginePolicy(t, func(p *AdmissionPolicy) { p.GoAwayAfter = after })
	var stop atomic.Bool
	var goAways, refusedAtAccept, reconnects atomic.Int64
	var wg sync.WaitGroup
	for range conns {
		c := dialLine(t, e.Addr().String(), net.IPv4(127, 0, 0, 2))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !hammerUntilGoAway(t, c, inFlight, &stop) {
				return
			}
			goAways.Add(1)
			if reconnects.Add(1) > 20 {
				return
			}
			// reconnect at once: refused at accept while the tenant cools;
			// on a slow machine the cooling may be over by the accept, and
			// the new connection, silent, gets nothing
			r := dialLine(t, e.Addr().String(), net.IPv4(127, 0, 0, 2))
			defer r.Close()
			r.SetReadDeadline(time.Now().Add(time.Second))
			line, err := r.r.ReadString('\n')
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return
			}
			if err != nil {
				t.Errorf("reconnected: %v, want a final refusal or nothing", err)
				return
			}
			reason, retry, ok := protocol.ParseRejectText([]byte(strings.TrimSuffix(line, "\n")))
			if !ok || reason != "goaway" || retry <= 0 || retry > after {
				t.Errorf("reconnected at once: %q, want a goaway refusal with a retry-after within %v", line, after)
				return
			}
			if _, err := r.r.ReadString('\n'); err != io.EOF {
				t.Errorf("after the refusal at accept: %v, want EOF", err)
			}
			refusedAtAccept.Add(1)
		}()
	}
	nineDone := make(chan *[nine]atomic.Int64)
	go func() { nineDone <- nineTenants(t, e) }()
	// the hammer's connections share what the nine leave (on io_uring's
	// recv mode each of them is served now and then until the nine come)
	waitStats(t, e, "a final refusal", func(s Stats) bool { return s.Admission.GoAways > 0 })
	other := dialLine(t, e.Addr().String(), net.IPv4(127, 0, 0, 20))
	if _, err := other.Write([]byte("o\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := other.r.ReadString('\n'); err != nil || strings.Contains(line, "goaway") {
		t.Errorf("another tenant while one cools: %q %v", line, err)
	}
	served := <-nineDone
	stop.Store(true)
	wg.Wait()
	st := e.Stats().Admission
	t.Logf("%d of %d connections closed with a final refusal, %d reconnects refused at accept; the nine served %v of %d; refusals by reason %v",
		st.GoAways, conns, st.GoAwayConns, served, nineFrames, st.Rejects)
	if st.GoAways != uint64(goAways.Load()) {
		t.Errorf("the engine counts %d final refusals, the clients read %d", st.GoAways, goAways.Load())
	}
	if refusedAtAccept.Load() == 0 || st.GoAwayConns != uint64(refusedAtAccept.Load()) {
		t.Errorf("the engine refused %d connections at accept, the clients saw %d (want at least 1)", st.GoAwayConns, refusedAtAccept.Load())
	}
	// against starvation only: this hammer (2,560 frames in flight) is
	// heavier than the other tests' and the point here is the final refusal
	atMostOneBelow(t, served, nineFrames/3, "beside the hammer")
}

// hammerUntilGoAway keeps inFlight frames in flight on c, sending a new one
// on every answer, until stop (then it reads the answers still due) or a
// final refusal. Every frame sent is answered, served or refused, or
// covered by a final refusal, which must be followed by the end of the
// stream (EOF, or a reset: frames sent after the server stopped reading
// are discarded by its close). It reports whether c ended in a final
// refusal.
func hammerUntilGoAway(t *testing.T, c *lineConn, inFlight int, stop *atomic.Bool) bool {
	t.Helper()
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := c.Write(bytes.Repeat([]byte("h\n"), inFlight)); err != nil {
		t.Errorf("hammer: %v", err)
		return false
	}
	closed := false // a write failed: the server closed; its final refusal is still to be read
	for due := inFlight; due > 0; due-- {
		line, err := c.r.ReadString('\n')
		if err != nil {
			t.Errorf("hammer: %d answers due: %v", due, err)
			return false
		}
		if reason, _, ok := protocol.ParseRejectText([]byte(strings.TrimSuffix(line, "\n"))); ok && reason == "goaway" {
			if rest, err := c.r.ReadString('\n'); err != io.EOF && !errors.Is(err, unix.ECONNRESET) {
				t.Errorf("after the final refusal: %q %v, want the end of the stream", rest, err)
			}
			return true
		}
		if !stop.Load() && !closed {
			if _, err := c.Write([]byte("h\n")); err != nil {
				if !errors.Is(err, unix.ECONNRESET) && !errors.Is(err, unix.EPIPE) {
					t.Errorf("hammer: %v", err)
					return false
				}
				closed = true
				continue
			}
			due++
		}
	}
	if closed {
		t.Error("hammer: closed without a final refusal")
	}
	return false
}
