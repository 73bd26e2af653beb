//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package netpoll

import (
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/uring"
)

// TestURingMultishotAccept: the io_uring listener accepts by a multishot
// accept. Its connections come out of accept with their peers, EAGAIN
// when none is left; del (the listen gate closing) cancels it, so new
// connections wait in the kernel's backlog, while fds it had already
// brought stay queued and are reported again after add; add arms a new
// one, which takes the backlog; close closes what was never handed over.
func TestURingMultishotAccept(t *testing.T) {
	requireURing(t)
	p := openPollerOf(t, true)
	if p.ur.pollAccept {
		t.Fatal("pollAccept on by default")
	}
	lfd, bound := addListener(t, p, 64)
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", bound.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// acceptAll waits for the listener's event, then accepts until EAGAIN.
	acceptAll := func(want int) []int {
		t.Helper()
		var fds []int
		deadline := time.Now().Add(2 * time.Second)
		for len(fds) < want && time.Now().Before(deadline) {
			if _, ev := pollEvents(p, lfd); ev&In == 0 {
				continue
			}
			for {
				fd, _, en := p.Accept(lfd)
				if en == unix.EAGAIN {
					break
				}
				if en != 0 {
					t.Fatalf("accept: %v", en)
				}
				fds = append(fds, fd)
				t.Cleanup(func() { unix.Close(fd) })
			}
		}
		if len(fds) != want {
			t.Fatalf("accepted %d connections, want %d", len(fds), want)
		}
		return fds
	}
	clients := []net.Conn{dial(), dial(), dial()}
	fds := acceptAll(3)
	peers := map[netip.AddrPort]bool{}
	for _, fd := range fds {
		peer, en := peerAddr(fd)
		if en != 0 {
			t.Fatal(en)
		}
		peers[peer] = true
	}
	for _, c := range clients {
		if !peers[c.LocalAddr().(*net.TCPAddr).AddrPort()] {
			t.Errorf("client %v not among the accepted peers %v", c.LocalAddr(), peers)
		}
	}
	if _, _, en := p.Accept(lfd); en != unix.EAGAIN {
		t.Fatalf("accept with nothing queued: %v, want EAGAIN", en)
	}

	// The gate closes: the multishot accept is cancelled.
	if err := p.Del(lfd); err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 3; k++ {
		p.Wait(false)
	}
	dial()
	dial()
	time.Sleep(50 * time.Millisecond)
	if tag, ev := pollEvents(p, lfd); ev != 0 || len(p.ur.accepted) != 0 {
		t.Fatalf("listener out: event %#x (tag %d), %d fds accepted by the kernel", ev, tag, len(p.ur.accepted))
	}
	// It opens: a new multishot accept takes the backlog.
	if err := p.Add(lfd, In, 0); err != nil {
		t.Fatal(err)
	}
	acceptAll(2)

	// An fd already brought stays queued through del and add.
	dial()
	if _, ev := pollEvents(p, lfd); ev&In == 0 {
		t.Fatal("no event for a new connection")
	}
	if err := p.Del(lfd); err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 3; k++ { // the cancellation, then the accept's last completion
		if n, _ := p.Wait(false); n != 0 {
			t.Fatalf("%d events with the listener out", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.Add(lfd, In, 0); err != nil {
		t.Fatal(err)
	}
	// A blocking wait does not sleep while fds are queued: the loop's
	// accept phase must get them, although no completion will come (the
	// kernel's backlog is empty).
	// A wait that slept would return only at the kick, long after.
	var kicked atomic.Bool
	kick := time.AfterFunc(time.Minute, func() { kicked.Store(true); p.Wake() })
	n, err := p.Wait(true)
	kick.Stop()
	if err != nil || kicked.Load() {
		t.Fatalf("blocking wait with an fd queued: %d events, %v, woken by the kick %v", n, err, kicked.Load())
	}
	if f, tag, ev := p.Event(n - 1); f != lfd || tag != 0 || ev&In == 0 {
		t.Fatalf("blocking wait's last event (%d, %d, %#x), want the listener", f, tag, ev)
	}
	acceptAll(1)

	// close closes the fds never handed over.
	dial()
	deadline := time.Now().Add(2 * time.Second)
	for len(p.ur.accepted) == 0 && time.Now().Before(deadline) {
		pollEvents(p, lfd)
	}
	if len(p.ur.accepted) != 1 {
		t.Fatalf("%d fds queued, want 1", len(p.ur.accepted))
	}
	queued := int(p.ur.accepted[0])
	p.Close()
	if _, err := unix.FcntlInt(uintptr(queued), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
		t.Fatalf("queued fd %d after close: %v, want EBADF", queued, err)
	}
}

// addListener registers a new loopback listener with p as the loop does
// (In, tag 0) and returns its fd and address; it is closed at cleanup.
func addListener(t *testing.T, p *Dispatcher, backlog int) (int, netip.AddrPort) {
	t.Helper()
	lfd, bound, err := Listen("127.0.0.1:0", ListenConfig{Backlog: backlog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(lfd) })
	if err := p.Add(lfd, In, 0); err != nil {
		t.Fatal(err)
	}
	return lfd, bound
}

// TestURingScriptedAccepts feeds complete() the completions a multishot
// accept may post: fds with More are queued and handed over by accept
// with their peers, before the error that ended the accept; a shortage of
// fds (EMFILE) is not re-armed (the loop pauses the listener), another
// per-connection error is; an error saying the listener is unusable is
// the loop's error; the listener is reported readable while fds wait, and
// not once it is out.
func TestURingScriptedAccepts(t *testing.T) {
	requireURing(t)
	p := openPollerOf(t, true)
	u := p.ur
	lfd, _ := addListener(t, p, 4)
	i, _ := u.lookup(lfd)
	r := &u.regs[i]
	if !r.acc || !r.armed {
		t.Fatalf("listener: acc %v armed %v", r.acc, r.armed)
	}
	acc := uring.Pack(kindAccept, i, r.gen)
	fd1, c1 := tcpPair(t)
	fd2, _ := tcpPair(t)
	t.Cleanup(func() { unix.Close(fd2) })
	feed := func(res int32, more bool) error {
		t.Helper()
		var flags uint32
		if more {
			flags = 2
		}
		_, err := u.complete(uring.CQE{UserData: acc, Res: res, Flags: flags}, 0)
		return err
	}
	if err := feed(int32(fd1), true); err != nil || !r.armed || len(u.accepted) != 1 {
		t.Fatalf("fd with More: %v, armed %v, %d queued", err, r.armed, len(u.accepted))
	}
	if n := u.listenerReady(0); n != 1 {
		t.Fatalf("%d events with an fd queued, want 1", n)
	}
	if f, tag, ev := u.Event(0); f != lfd || tag != 0 || ev != In {
		t.Fatalf("listener event (%d, %d, %#x)", f, tag, ev)
	}
	if err := feed(-int32(unix.EMFILE), false); err != nil || r.armed {
		t.Fatalf("EMFILE: %v, armed %v", err, r.armed)
	}
	fd, peer, en := p.Accept(lfd)
	if en != 0 || fd != fd1 || peer != c1.LocalAddr().(*net.TCPAddr).AddrPort() {
		t.Fatalf("accept: %d %v %v, want %d %v", fd, peer, en, fd1, c1.LocalAddr())
	}
	unix.Close(fd1)
	if _, _, en := p.Accept(lfd); en != unix.EMFILE || r.armed {
		t.Fatalf("accept after the queue: %v, armed %v; want EMFILE, not re-armed", en, r.armed)
	}
	if _, _, en := p.Accept(lfd); en != unix.EAGAIN {
		t.Fatalf("accept after EMFILE was reported: %v, want EAGAIN", en)
	}
	u.settle(i) // as add after the pause
	if !r.armed {
		t.Fatal("not armed again")
	}
	if err := feed(-int32(unix.ECONNABORTED), false); err != nil || r.armed {
		t.Fatalf("ECONNABORTED: %v, armed %v", err, r.armed)
	}
	if _, _, en := p.Accept(lfd); en != unix.ECONNABORTED || !r.armed {
		t.Fatalf("accept: %v, armed %v; want ECONNABORTED, armed again", en, r.armed)
	}
	if err := feed(-int32(unix.EBADF), false); err == nil || !errors.Is(err, unix.EBADF) {
		t.Fatalf("EBADF: %v, want the loop's error", err)
	}
	u.settle(i)
	if err := feed(int32(fd2), true); err != nil {
		t.Fatal(err)
	}
	if err := p.Del(lfd); err != nil {
		t.Fatal(err)
	}
	if n := u.listenerReady(0); n != 0 || len(u.accepted) != 1 {
		t.Fatalf("listener out: %d events, %d queued; want 0 and 1", n, len(u.accepted))
	}
	u.accepted = u.accepted[:0] // fd2 is the test's to close
}

// TestURingPollAccept: with pollAccept the listener stays on a one-shot
// poll, re-armed after each completion, and accept is accept4: the path
// the multishot accept replaced, kept for comparisons.
func TestURingPollAccept(t *testing.T) {
	requireURing(t)
	p := openPollerWith(t, true, func(u *URing) { u.pollAccept = true })
	lfd, bound := addListener(t, p, 16)
	if i, _ := p.ur.lookup(lfd); p.ur.regs[i].acc || !p.ur.regs[i].level {
		t.Fatal("pollAccept: the listener is not on a level poll")
	}
	for round := 0; round < 2; round++ { // the second needs the re-armed poll
		c, err := net.Dial("tcp", bound.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, ev := pollEvents(p, lfd); ev&In == 0 {
			t.Fatalf("round %d: no readable event for the listener", round)
		}
		fd, peer, en := p.Accept(lfd)
		if en != 0 || peer != c.LocalAddr().(*net.TCPAddr).AddrPort() {
			t.Fatalf("round %d: accept %d %v %v", round, fd, peer, en)
		}
		unix.Close(fd)
		if _, _, en := p.Accept(lfd); en != unix.EAGAIN {
			t.Fatalf("round %d: accept with nothing pending: %v, want EAGAIN", round, en)
		}
		if len(p.ur.accepted) != 0 {
			t.Fatalf("round %d: %d fds queued under pollAccept", round, len(p.ur.accepted))
		}
	}
}
