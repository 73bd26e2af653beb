//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package uring_test

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/uring"
)

// TestPollMultishot pins down what the readiness backend relies on: a
// multishot poll reports a descriptor that is ready when armed, then one
// completion per new edge (with More), an in-place update changes the events
// and re-checks readiness, and a removal ends it with -ECANCELED and no More.
func TestPollMultishot(t *testing.T) {
	r := newRing(t, uring.Config{})
	fd, peer := acceptPair(t)
	defer unix.Close(fd)
	defer peer.Close()
	poll := uring.Pack(1, uint32(fd), 7)
	ctl := uring.Pack(2, uint32(fd), 7)

	// Writable at once: armed for POLLOUT, the first completion comes without any edge.
	if _, err := r.PrepPollMultishot(fd, unix.POLLIN|unix.POLLOUT, poll); err != nil {
		t.Fatal(err)
	}
	cs := waitCQEs(t, r, countOf(poll, 1))
	if c, _ := find(cs, poll); c.Res&unix.POLLOUT == 0 || !c.More() {
		t.Fatalf("armed on a writable socket: %+v, want POLLOUT with More", c)
	}

	// Only POLLIN from now on; each write by the peer is one new edge.
	if _, err := r.PrepPollUpdate(poll, unix.POLLIN|unix.POLLRDHUP, ctl); err != nil {
		t.Fatal(err)
	}
	cs = waitCQEs(t, r, countOf(ctl, 1))
	if c, _ := find(cs, ctl); c.Res != 0 {
		t.Fatalf("update: Res %d, want 0", c.Res)
	}
	for i := range 3 {
		if _, err := peer.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		cs = waitCQEs(t, r, countOf(poll, 1))
		c, _ := find(cs, poll)
		if c.Res&unix.POLLIN == 0 || c.Res&unix.POLLOUT != 0 || !c.More() {
			t.Fatalf("write %d: %+v, want POLLIN only, with More", i, c)
		}
	}
	// Nothing new: no completion (edge-triggered, the unread bytes raise none).
	if _, err := r.SubmitAndWait(1, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var buf [8]uring.CQE
	if n := r.PeekBatch(buf[:]); n != 0 {
		t.Fatalf("completions without a new edge: %+v", buf[:n])
	}

	if _, err := r.PrepPollRemove(poll, ctl); err != nil {
		t.Fatal(err)
	}
	cs = waitCQEs(t, r, func(cs []uring.CQE) bool { return countOf(ctl, 1)(cs) && countOf(poll, 1)(cs) })
	if c, _ := find(cs, ctl); c.Res != 0 {
		t.Fatalf("remove: Res %d, want 0", c.Res)
	}
	if c, _ := find(cs, poll); c.Res != -int32(unix.ECANCELED) || c.More() {
		t.Fatalf("removed poll: %+v, want -ECANCELED without More", c)
	}
	if _, err := r.PrepPollRemove(poll, ctl); err != nil {
		t.Fatal(err)
	}
	cs = waitCQEs(t, r, countOf(ctl, 1))
	if c, _ := find(cs, ctl); c.Res != -int32(unix.ENOENT) {
		t.Fatalf("second remove: Res %d, want -ENOENT", c.Res)
	}
}

// TestPollOneshotLevel: a one-shot poll armed on a ready descriptor
// completes at once without More, and re-arming it while the descriptor stays
// ready completes again (level-triggered readiness by re-arming).
func TestPollOneshotLevel(t *testing.T) {
	r := newRing(t, uring.Config{})
	fd, peer := acceptPair(t)
	defer unix.Close(fd)
	defer peer.Close()
	if _, err := peer.Write([]byte("unread")); err != nil {
		t.Fatal(err)
	}
	u := uring.Pack(1, uint32(fd), 1)
	for i := range 3 {
		if _, err := r.PrepPollAdd(fd, unix.POLLIN, u); err != nil {
			t.Fatal(err)
		}
		cs := waitCQEs(t, r, countOf(u, 1))
		if c, _ := find(cs, u); c.Res&unix.POLLIN == 0 || c.More() {
			t.Fatalf("arm %d: %+v, want POLLIN without More", i, c)
		}
	}
}
