package server

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// These tests pin down the readiness behaviour the loop relies on, on the
// backend the suite runs on (epoll, or SLUICE_TEST_BACKEND=io_uring).

func socketpair(t *testing.T) (a, b int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

// openPoller opens a poller of the backend the suite runs on
// (SLUICE_TEST_BACKEND), attached to the test goroutine's locked thread.
func openPoller(t *testing.T) *poller {
	t.Helper()
	return openPollerOf(t, testBackend)
}

// openPollerOf opens a poller of backend b. The tests that use it check
// the readiness contract, so an io_uring poller keeps connections on
// readiness (read(2) on its events) rather than recv mode, which
// openRecvPoller opens.
func openPollerOf(t *testing.T, b Backend) *poller {
	t.Helper()
	return openPollerMode(t, b, true)
}

// openPollerMode opens a poller of backend b on the test goroutine's locked
// thread; readyOnly keeps an io_uring poller's connections on readiness.
func openPollerMode(t *testing.T, b Backend, readyOnly bool) *poller {
	t.Helper()
	return openPollerWith(t, b, func(u *uringPoller) { u.readyOnly = readyOnly })
}

// openPollerWith opens a poller of backend b on the test goroutine's locked
// thread, after set has configured an io_uring poller.
func openPollerWith(t *testing.T, b Backend, set func(*uringPoller)) *poller {
	t.Helper()
	p := new(poller)
	p.use(b)
	if p.ur != nil {
		set(p.ur)
	}
	runtime.LockOSThread()
	if err := p.open(16); err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	t.Cleanup(func() { p.close(); runtime.UnlockOSThread() })
	if err := p.attach(); err != nil {
		t.Fatal(err)
	}
	return p
}

// pollerFDs returns the poller's timer and wake-up fds.
func pollerFDs(p *poller) (timerfd, wakefd int) {
	if p.ur != nil {
		return p.ur.timerfd, p.ur.wakefd
	}
	return p.ep.timerfd, p.ep.wakefd
}

// waitFor polls until an event for fd arrives or a second passes.
func waitFor(p *poller, fd int) (uint32, bool) {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		n, _ := p.wait(false)
		for i := 0; i < n; i++ {
			if f, _, ev := p.event(i); f == fd {
				return ev, true
			}
		}
		time.Sleep(time.Millisecond)
	}
	return 0, false
}

// noEvent reports whether a non-blocking wait shows nothing for fd.
func noEvent(p *poller, fd int) bool {
	n, _ := p.wait(false)
	for i := 0; i < n; i++ {
		if f, _, _ := p.event(i); f == fd {
			return false
		}
	}
	return true
}

// TestEdgeShortRead: under EPOLLET, a read that returns fewer bytes than
// asked drained the socket, and data written afterwards raises a new edge,
// so the loop may skip the read that would return EAGAIN.
func TestEdgeShortRead(t *testing.T) {
	p := openPoller(t)
	a, b := socketpair(t)
	if err := p.add(a, connEvents, 7); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	for round := 0; round < 50; round++ {
		unix.Write(b, []byte("hello"))
		if _, ok := waitFor(p, a); !ok {
			t.Fatalf("round %d: no edge for new data", round)
		}
		n, en := sysRead(a, buf)
		if en != 0 || n != 5 {
			t.Fatalf("round %d: read = %d, %v", round, n, en)
		}
		// short read: no EAGAIN read, and no event pending now
		if !noEvent(p, a) {
			t.Fatalf("round %d: event pending after a draining short read", round)
		}
	}
	// a partial read (buffer smaller than the data) leaves data and, under
	// ET, no new edge: the ready list must carry it
	unix.Write(b, make([]byte, 100))
	if _, ok := waitFor(p, a); !ok {
		t.Fatal("no edge")
	}
	if n, _ := sysRead(a, buf); n != len(buf) {
		t.Fatalf("read %d", n)
	}
	if !noEvent(p, a) {
		t.Fatal("ET re-reported a socket with data left and no new data")
	}
	if n, _ := sysRead(a, buf); n != 36 {
		t.Fatalf("rest: read %d, want 36", n)
	}
}

// TestEdgeTimerAndWakeWithoutRead: the timerfd and eventfd are registered
// edge-triggered and never read: every re-arm and every write is a new edge.
func TestEdgeTimerAndWakeWithoutRead(t *testing.T) {
	p := openPoller(t)
	timerfd, wakefd := pollerFDs(p)
	for i := 0; i < 5; i++ {
		if err := p.armTimer(int64(time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if _, ok := waitFor(p, timerfd); !ok {
			t.Fatalf("round %d: timerfd expiry not reported", i)
		}
		if err := p.wake(); err != nil {
			t.Fatal(err)
		}
		if _, ok := waitFor(p, wakefd); !ok {
			t.Fatalf("round %d: eventfd write not reported", i)
		}
	}
	// a blocking wait returns for a wake-up from another goroutine
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(10 * time.Millisecond)
		p.wake()
	}()
	n, err := p.wait(true)
	<-done
	if err != nil || n < 1 {
		t.Fatalf("blocking wait = %d, %v", n, err)
	}
}

// TestEdgePeerClose: a peer's close is reported as EPOLLIN|EPOLLRDHUP, and
// read returns the bytes sent before it, then 0.
func TestEdgePeerClose(t *testing.T) {
	p := openPoller(t)
	a, b := socketpair(t)
	p.add(a, connEvents, 1)
	unix.Write(b, []byte("bye"))
	unix.Shutdown(b, unix.SHUT_WR)
	ev, ok := waitFor(p, a)
	if !ok || ev&evIn == 0 || ev&evRdHup == 0 {
		t.Fatalf("events %#x, %v: want EPOLLIN|EPOLLRDHUP", ev, ok)
	}
	buf := make([]byte, 16)
	if n, _ := sysRead(a, buf); n != 3 {
		t.Fatalf("read %d, want 3", n)
	}
	if n, en := sysRead(a, buf); n != 0 || en != 0 {
		t.Fatalf("read at EOF = %d, %v", n, en)
	}
}

// TestEdgeShortReadFIN: data and FIN that arrive together are one edge; a
// short read returns the data, the FIN stays queued, and no further edge
// comes. The loop must read on to end of file when EPOLLRDHUP was reported.
func TestEdgeShortReadFIN(t *testing.T) {
	p := openPoller(t)
	a, b := socketpair(t)
	p.add(a, connEvents, 1)
	unix.Write(b, []byte("last words"))
	unix.Shutdown(b, unix.SHUT_WR)
	ev, ok := waitFor(p, a)
	if !ok || ev&evRdHup == 0 {
		t.Fatalf("events %#x: want EPOLLRDHUP with the data", ev)
	}
	buf := make([]byte, 64)
	if n, _ := sysRead(a, buf); n != 10 {
		t.Fatalf("read %d, want 10", n)
	}
	if !noEvent(p, a) {
		t.Fatal("an edge came for the queued FIN; the loop could rely on it")
	}
	if n, en := sysRead(a, buf); n != 0 || en != 0 {
		t.Fatalf("second read = %d, %v: want end of file", n, en)
	}
}
