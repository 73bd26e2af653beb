package server

import (
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
	"golang.org/x/sys/unix"
)

// TestEMFILE: with RLIMIT_NOFILE lowered (in a child process), accept4
// fails with EMFILE; the engine pauses its listener instead of spinning (CPU
// stays low, a bounded number of retries), keeps serving the connections it
// has, and accepts the waiting ones once fds are free.
func TestEMFILE(t *testing.T) {
	ch := startChild(t, "emfile")
	const total = 12
	conns := dialN(t, ch.addr, total)
	var r0 childReport
	waitUntil(t, 10*time.Second, "EMFILE pause", func() bool {
		r0 = ch.report(t, "")
		return r0.Stats.AcceptPauses > 0
	})
	accepted := r0.Stats.Accepted
	if accepted == 0 || accepted >= total {
		t.Fatalf("accepted %d of %d under the lowered limit", accepted, total)
	}
	t0 := time.Now()
	time.Sleep(time.Second)
	r1 := ch.report(t, "")
	window := time.Since(t0) // measured: a loaded machine sleeps longer
	cpu := time.Duration(r1.CPUNanos - r0.CPUNanos)
	retries := r1.Stats.AcceptPauses - r0.Stats.AcceptPauses
	t.Logf("over %v at EMFILE: child CPU %v, %d accept retries, %d accepted", window, cpu, retries, r1.Stats.Accepted)
	if cpu > window/4 { // a spinning loop would burn the whole window
		t.Errorf("child used %v CPU in %v at EMFILE", cpu, window)
	}
	if retries > uint64(window/(100*time.Millisecond))+5 { // r0 was read just before t0
		t.Errorf("%d accept retries in %v with a 100ms retry delay", retries, window)
	}
	// the accepted connections keep working
	if err := echoOnce(conns[0], "still here"); err != nil {
		t.Fatalf("accepted connection at EMFILE: %v", err)
	}
	serveWaiting(t, conns, int(accepted))
	waitUntil(t, 10*time.Second, "every connection accepted", func() bool {
		return ch.report(t, "").Stats.Accepted >= total
	})
}

// dialN opens n connections to addr, closed when the test ends.
func dialN(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	for range n {
		conns = append(conns, dialAddr(t, addr))
	}
	return conns
}

// serveWaiting frees the fds of the first accepted connections (closing
// them) and then expects the waiting rest to be accepted as fds free up,
// echoing each, a batch of at most accepted (at least one) at a time.
func serveWaiting(t *testing.T, conns []net.Conn, accepted int) {
	t.Helper()
	for _, c := range conns[:accepted] {
		c.Close()
	}
	rest := conns[accepted:]
	for len(rest) > 0 {
		batch := rest[:min(max(accepted, 1), len(rest))]
		for i, c := range batch {
			if err := echoOnce(c, fmt.Sprint("late ", i)); err != nil {
				t.Fatalf("waiting connection after fds were freed: %v", err)
			}
		}
		for _, c := range batch {
			c.Close()
		}
		rest = rest[len(batch):]
	}
}

// echoOnce sends msg and expects it back within 5 s.
func echoOnce(c net.Conn, msg string) error {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(msg)); err != nil {
		return err
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != msg {
		return fmt.Errorf("echo %q, want %q", buf, msg)
	}
	return nil
}

// TestEMFILEAdmission: with an admission policy, EMFILE under a lowered
// RLIMIT_NOFILE (in a child process) pauses the policy's gate for its
// FDPause, every loop's listener leaves epoll, CPU stays low, and the
// waiting connections are served once fds are free.
func TestEMFILEPolicy(t *testing.T) {
	began := time.Now()
	ch := startChild(t, "emfile-policy")
	const total = 10
	conns := dialN(t, ch.addr, total)
	var r0 childReport
	waitUntil(t, 10*time.Second, "policy gate paused", func() bool {
		r0 = ch.report(t, "")
		return r0.Stats.Admission.Gate.Pauses > 0
	})
	accepted := r0.Stats.Accepted
	if accepted >= total {
		t.Fatalf("accepted %d of %d under the lowered limit", accepted, total)
	}
	if accepted == 0 { // seen once on a heavily loaded machine; the pause is what matters
		t.Logf("accepted 0 of %d before the gate paused", total)
	}
	t0 := time.Now()
	time.Sleep(time.Second)
	r1 := ch.report(t, "")
	window, life := time.Since(t0), time.Since(began) // measured: a loaded machine sleeps longer
	cpu := time.Duration(r1.CPUNanos - r0.CPUNanos)
	g := r1.Stats.Admission.Gate
	t.Logf("over %v at EMFILE: child CPU %v; policy gate %+v; engine accept pauses %d", window, cpu, g, r1.Stats.AcceptPauses)
	if cpu > window/4 { // a spinning loop would burn the whole window
		t.Errorf("child used %v CPU in %v at EMFILE", cpu, window)
	}
	// each pause ends after 100 ms and the next accept fails again: a
	// bounded number of pauses in the child's life, not a spin
	if g.Pauses > uint64(2*life/(100*time.Millisecond))+5 {
		t.Errorf("%d policy pauses in about %v", g.Pauses, life)
	}
	serveWaiting(t, conns, int(accepted)) // a batch of one when none got in before the pause
	r2 := waitReport(t, ch, "gate open and all accepted", func(r childReport) bool {
		return r.Stats.Accepted >= total && r.Stats.Admission.Gate.State == admission.GateOpen
	})
	if r2.Stats.Admission.Gate.Opens == 0 {
		t.Errorf("policy gate never reopened: %+v", r2.Stats.Admission.Gate)
	}
}

// waitReport polls the child until cond holds, for up to 10 s (then it
// stops the test, as waitUntil does), and returns the report that held.
func waitReport(t *testing.T, ch *child, what string, cond func(childReport) bool) childReport {
	t.Helper()
	var r childReport
	waitUntil(t, 10*time.Second, what, func() bool {
		r = ch.report(t, "")
		return cond(r)
	})
	return r
}

// TestAcceptSpread: with SO_REUSEPORT (the default) connections spread over
// the loops; EPOLLEXCLUSIVE gives them all to the first idle loop, which is
// why it is not the default. 64 connections, 2 loops: a loop with fewer than
// 8 has a probability below 1e-8 under a fair hash.
func TestAcceptSpread(t *testing.T) {
	h := newTestHandler()
	e := start(t, Config{Loops: 2}, h)
	for i := 0; i < 64; i++ {
		dial(t, e)
		h.nextOpen(t)
	}
	waitStats(t, e, "64 accepted", func(s Stats) bool { return s.Accepted == 64 })
	for _, l := range e.loops {
		if n := l.pub[gConns].Load(); n < 8 {
			t.Errorf("loop %d has %d of 64 connections", l.id, n)
		}
	}
}

// TestAcceptErrnos: errnos map to their labels; unnamed ones to "other".
func TestAcceptErrnos(t *testing.T) {
	for _, c := range []struct {
		en   unix.Errno
		want string
	}{
		{unix.ECONNABORTED, "ECONNABORTED"}, {unix.EPERM, "EPERM"}, {unix.EPROTO, "EPROTO"},
		{unix.EINVAL, "EINVAL"}, {unix.ENOSPC, "ENOSPC"}, {unix.ENOMEM, "ENOMEM"},
		{unix.ENETDOWN, "other"}, {0, "other"},
	} {
		if got := acceptErrnoOf(c.en).String(); got != c.want {
			t.Errorf("accept errno %v: %q, want %q", c.en, got, c.want)
		}
	}
	for _, c := range []struct {
		en   unix.Errno
		want PauseErrno
	}{{unix.EMFILE, PauseEMFILE}, {unix.ENFILE, PauseENFILE}, {unix.ENOBUFS, PauseENOBUFS}, {unix.ENOMEM, PauseENOMEM}} {
		if got := pauseErrnoOf(c.en); got != c.want {
			t.Errorf("pause errno %v: %v, want %v", c.en, got, c.want)
		}
	}
	if s := AcceptErrno(NumAcceptErrnos).String(); s != "AcceptErrno(7)" {
		t.Errorf("out of range: %q", s)
	}
	if s := PauseErrno(NumPauseErrnos).String(); s != "PauseErrno(4)" {
		t.Errorf("out of range: %q", s)
	}
	// the accept4 path and the setup path count through acceptError
	l := &loop{}
	l.acceptError(unix.EPERM)
	l.acceptError(unix.EHOSTUNREACH)
	if l.st[cAcceptErrors] != 2 || l.st[cAcceptErrnoBase+int(AcceptEPERM)] != 1 || l.st[cAcceptErrnoBase+int(AcceptErrnoOther)] != 1 {
		t.Errorf("counters %v", l.st[cAcceptErrnoBase:cPauseErrnoBase])
	}
}
