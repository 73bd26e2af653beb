package netpoll

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// These tests pin down the readiness behaviour the loop relies on, on the
// backend the suite runs on (epoll, or SLUICE_TEST_BACKEND=io_uring).

// TestEdgeShortRead: under EPOLLET, a read that returns fewer bytes than
// asked drained the socket, and data written afterwards raises a new edge,
// so the loop may skip the read that would return EAGAIN.
func TestEdgeShortRead(t *testing.T) {
	p := openPoller(t)
	a, b := socketpair(t)
	if err := p.Add(a, connEvents, 7); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	for round := 0; round < 50; round++ {
		unix.Write(b, []byte("hello"))
		if _, ok := waitFor(p, a); !ok {
			t.Fatalf("round %d: no edge for new data", round)
		}
		n, en := Read(a, buf)
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
	if n, _ := Read(a, buf); n != len(buf) {
		t.Fatalf("read %d", n)
	}
	if !noEvent(p, a) {
		t.Fatal("ET re-reported a socket with data left and no new data")
	}
	if n, _ := Read(a, buf); n != 36 {
		t.Fatalf("rest: read %d, want 36", n)
	}
}

// TestEdgeTimerAndWakeWithoutRead: the timerfd and eventfd are registered
// edge-triggered and never read: every re-arm and every write is a new edge.
func TestEdgeTimerAndWakeWithoutRead(t *testing.T) {
	p := openPoller(t)
	timerfd, wakefd := pollerFDs(p)
	for i := 0; i < 5; i++ {
		if err := p.ArmTimer(int64(time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if _, ok := waitFor(p, timerfd); !ok {
			t.Fatalf("round %d: timerfd expiry not reported", i)
		}
		if err := p.Wake(); err != nil {
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
		p.Wake()
	}()
	n, err := p.Wait(true)
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
	p.Add(a, connEvents, 1)
	unix.Write(b, []byte("bye"))
	unix.Shutdown(b, unix.SHUT_WR)
	ev, ok := waitFor(p, a)
	if !ok || ev&In == 0 || ev&RdHup == 0 {
		t.Fatalf("events %#x, %v: want EPOLLIN|EPOLLRDHUP", ev, ok)
	}
	buf := make([]byte, 16)
	if n, _ := Read(a, buf); n != 3 {
		t.Fatalf("read %d, want 3", n)
	}
	if n, en := Read(a, buf); n != 0 || en != 0 {
		t.Fatalf("read at EOF = %d, %v", n, en)
	}
}

// TestEdgeShortReadFIN: data and FIN that arrive together are one edge; a
// short read returns the data, the FIN stays queued, and no further edge
// comes. The loop must read on to end of file when EPOLLRDHUP was reported.
func TestEdgeShortReadFIN(t *testing.T) {
	p := openPoller(t)
	a, b := socketpair(t)
	p.Add(a, connEvents, 1)
	unix.Write(b, []byte("last words"))
	unix.Shutdown(b, unix.SHUT_WR)
	ev, ok := waitFor(p, a)
	if !ok || ev&RdHup == 0 {
		t.Fatalf("events %#x: want EPOLLRDHUP with the data", ev)
	}
	buf := make([]byte, 64)
	if n, _ := Read(a, buf); n != 10 {
		t.Fatalf("read %d, want 10", n)
	}
	if !noEvent(p, a) {
		t.Fatal("an edge came for the queued FIN; the loop could rely on it")
	}
	if n, en := Read(a, buf); n != 0 || en != 0 {
		t.Fatalf("second read = %d, %v: want end of file", n, en)
	}
}

// TestEpollPending: Pending sees events the loop has not collected,
// without collecting them (a second Pending still sees them, and Wait
// reports them); after Wait they are gone; a closed poller has none.
func TestEpollPending(t *testing.T) {
	var p Epoll
	if err := p.Open(16); err != nil {
		t.Fatal(err)
	}
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	if err := p.Add(fds[0], In|Edge, 7); err != nil {
		t.Fatal(err)
	}
	if p.Pending() {
		t.Fatal("Pending before any event")
	}
	unix.Write(fds[1], []byte("x"))
	for i := range 2 {
		if !p.Pending() {
			t.Fatalf("Pending %d did not see a readable pipe", i+1)
		}
	}
	n, err := p.Wait(false)
	if err != nil || n != 1 {
		t.Fatalf("Wait after Pending = %d, %v; want the pipe's event", n, err)
	}
	if p.Pending() {
		t.Error("Pending after Wait collected the edge-triggered event")
	}
	unix.Write(fds[1], []byte("y"))
	p.Close()
	if p.Pending() {
		t.Error("Pending on a closed poller")
	}
	var zero Epoll
	if zero.Pending() {
		t.Error("Pending on an unopened poller")
	}
}
