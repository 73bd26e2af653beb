package server

import (
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
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
	for i := 0; i < n; i++ {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		conns = append(conns, c)
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

// waitReport polls the child until cond holds.
func waitReport(t *testing.T, ch *child, what string, cond func(childReport) bool) childReport {
	t.Helper()
	var r childReport
	waitUntil(t, 10*time.Second, what, func() bool {
		r = ch.report(t, "")
		return cond(r)
	})
	return r
}
