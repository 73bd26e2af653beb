//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package netpoll

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/uring"
)

// TestURingDelCloseSendsFIN: a multishot poll holds a reference to its file;
// after del and close the next waits (the removal's submission, then its
// completion) must let it go, so the peer sees end of file.
func TestURingDelCloseSendsFIN(t *testing.T) {
	requireURing(t)
	p := openPollerOf(t, true)
	fd, c := tcpPair(t)
	if err := p.Add(fd, connEvents, 3); err != nil {
		t.Fatal(err)
	}
	p.Wait(false)
	if err := p.Del(fd); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	for k := 0; k < 3; k++ { // the removal is submitted, then its completion releases the file
		p.Wait(false)
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || !isEOF(err) {
		t.Fatalf("peer read after del+close: %v, want EOF", err)
	}
}

func isEOF(err error) bool { return err != nil && err.Error() == "EOF" }

// TestURingModDelReuse: mod arms and disarms EPOLLOUT in place (an armed
// writable socket reports at once), and after del and re-add of the same fd
// number with a new tag only the new registration's events arrive.
func TestURingModDelReuse(t *testing.T) {
	requireURing(t)
	p := openPollerOf(t, true)
	fd, c := tcpPair(t)
	if err := p.Add(fd, connEvents, 5); err != nil {
		t.Fatal(err)
	}
	if err := p.Add(fd, connEvents, 5); err == nil {
		t.Fatal("second add of the same fd succeeded")
	}
	if err := p.Mod(fd, connEventsOut, 5); err != nil {
		t.Fatal(err)
	}
	if tag, ev := pollEvents(p, fd); tag != 5 || ev&Out == 0 {
		t.Fatalf("after mod to OUT: tag %d ev %#x, want tag 5 with EPOLLOUT", tag, ev)
	}
	if err := p.Mod(fd, connEvents, 5); err != nil {
		t.Fatal(err)
	}
	// Unlike EPOLL_CTL_MOD the update takes effect at the next submission
	// (or later, retried after -EALREADY): an event with the old mask may
	// still come meanwhile, which the loop tolerates (it flushes on
	// EPOLLOUT only while fOutArmed).
	for k := 0; k < 10; k++ {
		p.Wait(false)
		time.Sleep(time.Millisecond)
	}
	c.Write([]byte("x"))
	if tag, ev := pollEvents(p, fd); tag != 5 || ev&In == 0 || ev&Out != 0 {
		t.Fatalf("after mod back: tag %d ev %#x, want EPOLLIN without EPOLLOUT", tag, ev)
	}
	if err := p.Del(fd); err != nil {
		t.Fatal(err)
	}
	if err := p.Mod(fd, connEvents, 5); err == nil {
		t.Fatal("mod of a deleted fd succeeded")
	}
	if err := p.Add(fd, connEvents, 6); err != nil { // the same fd number, a new connection
		t.Fatal(err)
	}
	c.Write([]byte("y"))
	if tag, ev := pollEvents(p, fd); tag != 6 || ev&In == 0 {
		t.Fatalf("re-added: tag %d ev %#x, want tag 6 with EPOLLIN", tag, ev)
	}
	for k := 0; k < 5; k++ {
		n, _ := p.Wait(false)
		for i := 0; i < n; i++ {
			if f, tag, _ := p.Event(i); f == fd && tag != 6 {
				t.Fatalf("event with the removed registration's tag %d", tag)
			}
		}
	}
	unix.Close(fd)
}

// TestURingMalformedAndFailed: a completion naming no registration (or a
// stale generation) is dropped; a poll that fails (here on a descriptor
// that is not open) becomes Err|Hup|Fail for its connection, which the
// loop closes with errPollFailed; a failed poll of a tag-0 fd is the loop's
// error.
func TestURingMalformedAndFailed(t *testing.T) {
	requireURing(t)
	p := openPollerOf(t, true)
	u := p.ur
	for _, c := range []uring.CQE{
		{UserData: uring.Pack(kindPoll, 1<<30, 0), Res: 1, Flags: 0},
		{UserData: uring.Pack(kindPoll, 0, 77), Res: 1},
		{UserData: uring.Pack(9, 0, u.regs[0].gen), Res: 1},
		{UserData: uring.Pack(kindPollCtl, 0, u.regs[0].gen), Res: -int32(unix.ENOENT)},
	} {
		if out, err := u.complete(c, 0); out != 0 || err != nil {
			t.Fatalf("%+v: %d events, %v; want it dropped", c, out, err)
		}
	}
	fd, _ := tcpPair(t)
	unix.Close(fd) // not open any more: the poll fails with EBADF
	if err := p.Add(fd, connEvents, 9); err != nil {
		t.Fatal(err)
	}
	if tag, ev := pollEvents(p, fd); tag != 9 || ev&(Err|Hup|Fail) != Err|Hup|Fail {
		t.Fatalf("failed poll: tag %d ev %#x, want Err|Hup|Fail", tag, ev)
	}
	if err := p.Del(fd); err != nil {
		t.Fatal(err)
	}
	bad, _ := tcpPair(t)
	unix.Close(bad)
	if err := p.Add(bad, In, 0); err != nil {
		t.Fatal(err)
	}
	var err error
	for k := 0; k < 100 && err == nil; k++ {
		_, err = p.Wait(false)
	}
	if err == nil {
		t.Fatal("a failed poll of a tag-0 fd was not an error")
	}
}

// TestURingScriptedCompletions feeds complete() the completions the kernel
// may post around a registration's life and checks the bookkeeping: a live
// poll that ends (cancelled, or without More after an event) is re-armed, a
// removed one is freed when its last completion comes and its late events
// are dropped, and a control operation refused with -EALREADY is retried.
func TestURingScriptedCompletions(t *testing.T) {
	requireURing(t)
	p := openPollerOf(t, true)
	u := p.ur
	fd, _ := tcpPair(t)
	if err := p.Add(fd, connEvents, 4); err != nil {
		t.Fatal(err)
	}
	i, _ := u.lookup(fd)
	poll := u.pollData(i)
	steps := []struct {
		name    string
		cqe     uring.CQE
		before  func()
		events  int
		armed   bool
		queued  bool
		freedOK bool
	}{
		{name: "event with More", cqe: uring.CQE{UserData: poll, Res: int32(In), Flags: 2}, events: 1, armed: true},
		{name: "cancelled while live: re-armed", cqe: uring.CQE{UserData: poll, Res: -int32(unix.ECANCELED)}, armed: true},
		{name: "event, poll ended: reported and re-armed", cqe: uring.CQE{UserData: poll, Res: int32(In)}, events: 1, armed: true},
		{name: "update refused (-EALREADY): retried next wait", cqe: uring.CQE{UserData: u.ctlData(i), Res: -int32(unix.EALREADY)}, armed: true, queued: true},
		{name: "removed: a late event is dropped", before: func() { u.regs[i].queued = false; u.later = u.later[:0]; p.Del(fd) },
			cqe: uring.CQE{UserData: poll, Res: int32(In), Flags: 2}, armed: true},
		{name: "removed: the last completion frees the record", cqe: uring.CQE{UserData: poll, Res: -int32(unix.ECANCELED)}, freedOK: true},
		{name: "after free: a stray completion is dropped", cqe: uring.CQE{UserData: poll, Res: int32(In)}, freedOK: true},
	}
	for k, s := range steps {
		if s.before != nil {
			s.before()
		}
		free := len(u.free)
		out, err := u.complete(s.cqe, 0)
		r := u.regs[i]
		if err != nil || out != s.events || r.armed != s.armed || r.queued != s.queued {
			t.Fatalf("%d %s: %d events, %v, armed %v queued %v; want %d events, armed %v queued %v",
				k, s.name, out, err, r.armed, r.queued, s.events, s.armed, s.queued)
		}
		if s.freedOK && !(len(u.free) > 0 && u.free[len(u.free)-1] == i) {
			t.Fatalf("%d %s: record %d not on the free list (%v, was %d long)", k, s.name, i, u.free, free)
		}
		if out == 1 {
			if f, tag, ev := u.Event(0); f != fd || tag != 4 || ev != In {
				t.Fatalf("%d %s: event (%d, %d, %#x)", k, s.name, f, tag, ev)
			}
		}
	}
	unix.Close(fd)
}
