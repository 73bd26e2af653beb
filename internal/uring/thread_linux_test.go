//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package uring_test

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/uring"
)

// TestCQOverflow posts more completions than the completion queue holds:
// the kernel keeps the excess (FEAT_NODROP) and Submit collects it, so none
// is lost and their order is kept.
func TestCQOverflow(t *testing.T) {
	for _, setup := range []uring.Feature{0, requireUring(t).Setup()} {
		t.Run(setup.String(), func(t *testing.T) {
			r := newRing(t, uring.Config{Entries: 4, CQEntries: 8, Setup: setup})
			const n = 50
			for i := range n {
				if _, err := r.PrepNop(uring.Pack(kindMsg, uint32(i), 0)); err != nil {
					t.Fatalf("PrepNop %d: %v", i, err)
				}
			}
			got := waitCQEs(t, r, func(cs []uring.CQE) bool { return len(cs) >= n })
			for i, c := range got {
				if c.UserData.Index() != uint32(i) {
					t.Fatalf("completion %d is no-op %d", i, c.UserData.Index())
				}
			}
		})
	}
}

// TestWrongThread shows what happens when a SINGLE_ISSUER ring is driven
// from a thread other than its creator's: the kernel refuses with EEXIST,
// which is why an engine locks its loop goroutine to its thread.
func TestWrongThread(t *testing.T) {
	f := requireUring(t)
	if !f.Has(uring.FeatSingleIssuer | uring.FeatDeferTaskrun) {
		t.Skip("kernel lacks SINGLE_ISSUER|DEFER_TASKRUN")
	}
	r := newRing(t, uring.Config{Entries: 8, Setup: uring.FeatSingleIssuer | uring.FeatDeferTaskrun})
	if _, err := r.PrepNop(1); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // a fresh goroutine on a thread that is not the creator's
		defer runtime.UnlockOSThread()
		_, err := r.SubmitAndWait(1, 100*time.Millisecond)
		errc <- err
	}()
	if err := <-errc; !errors.Is(err, uring.ErrWrongThread) || !errors.Is(err, unix.EEXIST) {
		t.Fatalf("SubmitAndWait from another thread = %v, want ErrWrongThread (EEXIST)", err)
	}
	// The owner still can.
	waitCQEs(t, r, countOf(1, 1))
}

// TestCloseWrongThread closes a SINGLE_ISSUER ring from another thread: the
// kernel refuses to cancel and to unregister the buffer ring, Close says so
// (ErrWrongThread) and still releases the descriptor.
func TestCloseWrongThread(t *testing.T) {
	f := requireUring(t)
	if !f.Has(uring.FeatSingleIssuer) {
		t.Skip("kernel lacks SINGLE_ISSUER")
	}
	lockThread(t)
	fds := openFDs(t)
	r, err := uring.New(uring.Config{Entries: 8, Setup: uring.FeatSingleIssuer})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.NewBufRing(1, 4, 64); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		errc <- r.Close()
	}()
	if err := <-errc; !errors.Is(err, uring.ErrWrongThread) {
		t.Errorf("Close from another thread = %v, want ErrWrongThread", err)
	}
	if got := openFDs(t); got != fds {
		t.Errorf("open descriptors: %d before, %d after Close", fds, got)
	}
}

// TestCloseCancelsInFlight closes a ring with a send blocked on a full
// socket, a multishot recv and a long timeout armed: Close cancels them
// and returns promptly.
func TestCloseCancelsInFlight(t *testing.T) {
	requireUring(t)
	r := newRing(t, uring.Config{Entries: 8})
	fd, _ := acceptPair(t)
	br, err := r.NewBufRing(1, 4, 64)
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 64<<20) // more than loopback buffers hold: the send waits
	if _, err := r.PrepSend(fd, big, unix.MSG_NOSIGNAL|unix.MSG_WAITALL, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := r.PrepRecvMultishot(fd, br.Group(), 0, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := r.PrepTimeout(time.Hour, 0, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := r.SubmitAndWait(1, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// A Close whose cancellation never completed waits out closeDrain (1 s)
	// by construction, so a Close that took less did not; the bound is the
	// one that tells the two apart, not a margin under it that a loaded
	// machine could eat (a prompt cancellation is a few system calls).
	const closeDrain = time.Second // ring_linux.go's closeDrain
	if el := time.Since(start); el >= closeDrain {
		t.Errorf("Close took %v: it waited out the %v drain, the cancellation did not complete", el, closeDrain)
	}
}
