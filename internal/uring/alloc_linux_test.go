//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package uring_test

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/uring"
)

// maxTurnsPerCycle bounds the loop turns one echo cycle may take; each turn
// waits at most a second, so a lost completion fails instead of hanging.
const maxTurnsPerCycle = 10

// echoRig is an echo loop with one connected raw client, both driven from
// the test goroutine so a cycle (client write, loop turns, client read)
// involves no other goroutine and no allocation of the test's own.
type echoRig struct {
	e    *echoLoop
	cfd  int
	msg  []byte
	back []byte
}

func newEchoRig(t testing.TB, size int) *echoRig {
	r := newRing(t, uring.Config{Entries: 64, CQEntries: 256})
	lfd, addr := listen(t)
	e := newEchoLoop(t, r, lfd, 16, 4096)
	cfd := dialRaw(t, addr)
	e.until(func() bool { return e.accepted == 1 })
	return &echoRig{e: e, cfd: cfd, msg: pattern(size), back: make([]byte, size)}
}

// cycle echoes one message: the client writes it, the loop turns until its
// echo has been sent, the client reads it back.
func (g *echoRig) cycle(t testing.TB) {
	want := g.e.echoed + len(g.msg)
	if n, err := unix.Write(g.cfd, g.msg); n != len(g.msg) || err != nil {
		t.Fatalf("client write = %d, %v", n, err)
	}
	for turns := 0; g.e.echoed < want; turns++ {
		if turns == maxTurnsPerCycle {
			t.Fatalf("echo not sent after %d turns", turns)
		}
		g.e.turn(time.Second)
	}
	for got := 0; got < len(g.back); {
		n, err := unix.Read(g.cfd, g.back[got:])
		if n <= 0 || err != nil {
			t.Fatalf("client read = %d, %v", n, err)
		}
		got += n
	}
}

// TestEchoCycleAllocs proves the steady-state echo cycle (multishot recv
// into a provided buffer, send from it, recycle, submit and reap) allocates
// nothing.
func TestEchoCycleAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates; allocation tests run without -race")
	}
	g := newEchoRig(t, 64)
	for range 10 {
		g.cycle(t) // warm up
	}
	if a := testing.AllocsPerRun(200, func() { g.cycle(t) }); a != 0 {
		t.Errorf("echo cycle allocates %v times per message, want 0", a)
	}
	if g.back[63] != 63 {
		t.Errorf("echo corrupted: %v", g.back)
	}
}

// TestPrepAllocs checks that every prep method, Submit, PeekBatch and
// Advance allocate nothing.
func TestPrepAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates; allocation tests run without -race")
	}
	r := newRing(t, uring.Config{Entries: 16, CQEntries: 64})
	fd, _ := acceptPair(t)
	br, err := r.NewBufRing(4, 4, 64)
	if err != nil {
		t.Fatal(err)
	}
	w, err := r.NewWaker(uring.Pack(kindWake, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	iovs := []unix.Iovec{{Base: &buf[0]}}
	iovs[0].SetLen(len(buf))
	var cqes [16]uring.CQE
	u := uring.Pack(kindMsg, 1, 1)
	a := testing.AllocsPerRun(100, func() {
		r.PrepNop(u)
		r.PrepSend(fd, buf, unix.MSG_NOSIGNAL, u)
		r.PrepSendmsg(fd, iovs, unix.MSG_NOSIGNAL, u)
		r.PrepTimeout(0, 0, u)
		r.PrepCancel(u, true, u)
		w.Wake()
		if _, err := r.SubmitAndWait(5, time.Second); err != nil {
			t.Fatal(err)
		}
		for n := r.PeekBatch(cqes[:]); n > 0; n = r.PeekBatch(cqes[:]) {
			for _, c := range cqes[:n] {
				_ = c.Err()
				if c.UserData == w.Tag() {
					w.Rearm(c)
				}
			}
			r.Advance(n)
		}
		_ = br.Lent()
	})
	if a != 0 {
		t.Errorf("prep, submit and reap allocate %v times per round, want 0", a)
	}
}
