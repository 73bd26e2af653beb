package netpoll

import (
	"net"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// connEvents is a connection's interest as the engine registers it,
// without and with Out.
const (
	connEvents    = In | RdHup | Edge
	connEventsOut = connEvents | Out
)

// requireURing skips when the kernel refuses the io_uring backend.
func requireURing(t testing.TB) {
	t.Helper()
	if err := CheckURing(); err != nil {
		t.Skipf("io_uring backend unavailable: %v", err)
	}
}

// socketpair returns a connected pair of non-blocking Unix stream sockets,
// closed at cleanup.
func socketpair(t *testing.T) (a, b int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

// tcpPair returns a nonblocking server-side fd and its client.
func tcpPair(t *testing.T) (int, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.(*net.TCPConn).File()
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	unix.SetNonblock(fd, true)
	return fd, c
}

// openPoller opens a poller of the backend the suite runs on
// (SLUICE_TEST_BACKEND), attached to the test goroutine's locked thread.
// The tests that use it check the readiness contract, so an io_uring
// poller keeps connections on readiness (read(2) on their events) rather
// than recv mode.
func openPoller(t *testing.T) *Dispatcher {
	t.Helper()
	return openPollerOf(t, suiteURing)
}

// openPollerOf is openPoller on io_uring (uring) or epoll.
func openPollerOf(t *testing.T, uring bool) *Dispatcher {
	t.Helper()
	return openPollerWith(t, uring, func(u *URing) { u.readyOnly = true })
}

// openPollerWith opens a poller on the test goroutine's locked thread,
// io_uring (uring) after set has configured it, or epoll.
func openPollerWith(t *testing.T, uring bool, set func(*URing)) *Dispatcher {
	t.Helper()
	p := new(Dispatcher)
	if uring {
		p.UseURing(false)
		set(p.ur)
	}
	runtime.LockOSThread()
	if err := p.Open(16); err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(); runtime.UnlockOSThread() })
	if err := p.Attach(); err != nil {
		t.Fatal(err)
	}
	return p
}

// pollerFDs returns the poller's timer and wake-up fds.
func pollerFDs(p *Dispatcher) (timerfd, wakefd int) {
	if p.ur != nil {
		return p.ur.timerfd, p.ur.wakefd
	}
	return p.ep.timerfd, p.ep.wakefd
}

// waitFor polls until an event for fd arrives or a second passes.
func waitFor(p *Dispatcher, fd int) (Events, bool) {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		n, _ := p.Wait(false)
		for i := 0; i < n; i++ {
			if f, _, ev := p.Event(i); f == fd {
				return ev, true
			}
		}
		time.Sleep(time.Millisecond)
	}
	return 0, false
}

// noEvent reports whether a non-blocking wait shows nothing for fd.
func noEvent(p *Dispatcher, fd int) bool {
	n, _ := p.Wait(false)
	for i := 0; i < n; i++ {
		if f, _, _ := p.Event(i); f == fd {
			return false
		}
	}
	return true
}

// pollEvents waits (non-blocking, up to a second) until fd has an event
// and returns the union of what it got.
func pollEvents(p *Dispatcher, fd int) (tag uint32, ev Events) {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		n, _ := p.Wait(false)
		for i := 0; i < n; i++ {
			if f, tg, e := p.Event(i); f == fd {
				tag, ev = tg, ev|e
			}
		}
		if ev != 0 {
			return tag, ev
		}
		time.Sleep(time.Millisecond)
	}
	return 0, 0
}
