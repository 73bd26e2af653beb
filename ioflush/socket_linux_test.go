package ioflush_test

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicenet/sluice/ioflush"
	"golang.org/x/sys/unix"
)

// TestFlushSlowReader writes about 650 KB of mixed segments through a socket
// with a tiny send buffer to a reader that drains slowly, flushing with a
// budget and waiting for POLLOUT on WouldBlock as an event loop would. The
// reader must see every byte in order, every segment must be released exactly
// once, and the writer must have seen both WouldBlock and BudgetSpent.
func TestFlushSlowReader(t *testing.T) {
	for _, kind := range []string{"unix", "tcp"} {
		t.Run(kind, func(t *testing.T) { slowReader(t, kind) })
	}
}

func slowReader(t *testing.T, kind string) {
	const budget = 1500 // below the send buffer, so both limits are hit
	w, r := nonblockingPair(t, kind, 2048)
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := make([]int, 600)
	for i := range sizes {
		sizes[i] = rng.IntN(1400)
		if i%50 == 0 {
			sizes[i] = 20000 // larger than the send buffer and the budget
		}
	}
	rel := make([]int, len(sizes))
	q, want := queue(sizes, rel)

	got := make(chan []byte, 1)
	go func() { // slow reader: small reads with pauses; stops at EOF or after 20 s
		var out []byte
		buf := make([]byte, 700)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			pfd := []unix.PollFd{{Fd: int32(r), Events: unix.POLLIN}}
			if n, err := unix.Poll(pfd, 100); err != nil && err != unix.EINTR || n == 0 {
				continue
			}
			n, err := unix.Read(r, buf)
			if err == unix.EAGAIN || err == unix.EINTR {
				continue
			}
			if err != nil || n == 0 {
				break
			}
			out = append(out, buf[:n]...)
			if len(out)%8 < 2 {
				time.Sleep(50 * time.Microsecond)
			}
		}
		got <- out
	}()

	var f ioflush.Flusher
	counts := map[ioflush.Result]int{}
	written := 0
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, res, err := f.Flush(w, q, budget)
		if err != nil {
			t.Fatalf("Flush: %v", err)
		}
		if n > budget {
			t.Fatalf("Flush wrote %d bytes, budget %d", n, budget)
		}
		written += n
		counts[res]++
		if res == ioflush.Flushed {
			break
		}
		if res == ioflush.WouldBlock && !waitFD(t, w, unix.POLLOUT, time.Until(deadline)) {
			t.Fatalf("socket not writable before the deadline; %d of %d bytes written", written, len(want))
		}
		if time.Now().After(deadline) {
			t.Fatalf("not flushed before the deadline; %d of %d bytes written", written, len(want))
		}
	}
	if err := unix.Shutdown(w, unix.SHUT_WR); err != nil {
		t.Fatal(err)
	}
	out := <-got
	if written != len(want) || !bytes.Equal(out, want) {
		t.Fatalf("reader got %d bytes (writer counted %d), want %d identical bytes", len(out), written, len(want))
	}
	checkReleases(t, kind, rel, len(sizes))
	if counts[ioflush.WouldBlock] == 0 || counts[ioflush.BudgetSpent] == 0 {
		t.Errorf("results %v: want both WouldBlock (short writes) and BudgetSpent", counts)
	}
	t.Logf("%s: %d bytes, results %v", kind, written, counts)
}

// TestFlushSocketpairShortWrite pins down that a tiny SO_SNDBUF makes writev
// stop short and that Flush turns that into WouldBlock after one syscall,
// advancing into the middle of a segment.
func TestFlushSocketpairShortWrite(t *testing.T) {
	w, r := nonblockingPair(t, "unix", 1024)
	rel := make([]int, 3)
	q, want := queue([]int{100, 300000, 100}, rel)
	var f ioflush.Flusher
	n, res, err := f.Flush(w, q, 0)
	if err != nil || res != ioflush.WouldBlock || n == 0 || n >= 300100 {
		t.Fatalf("Flush = (%d, %v, %v), want a short write and WouldBlock", n, res, err)
	}
	if q.Len() != 2 || len(q.At(0).Buf) != 300100-n {
		t.Fatalf("queue after %d bytes: Len %d, head %d bytes left", n, q.Len(), len(q.At(0).Buf))
	}
	checkReleases(t, "short", rel, 1)
	// Nothing drained: the next Flush gets EAGAIN and writes nothing.
	if n2, res, err := f.Flush(w, q, 0); n2 != 0 || res != ioflush.WouldBlock || err != nil {
		t.Fatalf("second Flush = (%d, %v, %v), want (0, WouldBlock, nil)", n2, res, err)
	}
	// Drain synchronously and finish.
	rbuf := make([]byte, 64<<10)
	got := drainAll(t, r, rbuf, nil)
	for !q.Empty() {
		n, res, err := f.Flush(w, q, 0)
		if err != nil {
			t.Fatal(err)
		}
		if res == ioflush.WouldBlock && n == 0 && !waitFD(t, w, unix.POLLOUT, 5*time.Second) {
			t.Fatal("socket not writable after draining")
		}
		got = drainAll(t, r, rbuf, got)
	}
	got = drainAll(t, r, rbuf, got)
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want %d identical bytes", len(got), len(want))
	}
	checkReleases(t, "short", rel, 3)
}

// TestFlushSocketpairManySegments writes more than MaxIovecs segments through
// a real socket in one unbudgeted Flush when the buffer is large enough.
func TestFlushSocketpairManySegments(t *testing.T) {
	w, r := nonblockingPair(t, "unix", 0)
	sizes := repeat(ioflush.MaxIovecs*2+10, 3)
	rel := make([]int, len(sizes))
	q, want := queue(sizes, rel)
	var f ioflush.Flusher
	n, res, err := f.Flush(w, q, 0)
	if err != nil || n != len(want) || res != ioflush.Flushed {
		t.Fatalf("Flush = (%d, %v, %v), want (%d, Flushed, nil)", n, res, err, len(want))
	}
	got := drainAll(t, r, make([]byte, 4096), nil)
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want %d identical bytes", len(got), len(want))
	}
	checkReleases(t, "many", rel, len(sizes))
}
