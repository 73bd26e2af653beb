//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package uring

import (
	"encoding/binary"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Waker lets any goroutine wake a loop blocked in SubmitAndWait: the ring
// keeps a read armed on an eventfd, and Wake writes to it. A CAS flag makes a
// burst of wake-ups cost one write (Go netpoll's netpollWakeSig): Wake writes
// only when the flag was clear, and the loop clears it in Rearm before it
// drains whatever the wake-up announced, so work queued after the drain
// wakes it again.
//
// Wake is safe for concurrent use; Rearm and Close belong to the ring's
// goroutine. Ring.Close closes the Waker.
type Waker struct {
	r       *Ring
	tag     UserData
	pending atomic.Uint32
	mu      sync.RWMutex // Wake holds it shared; close exclusively, so Wake never writes to a closed (or reused) fd
	fd      int
	buf     []byte // the eventfd counter the kernel reads into; heap, reachable through w
}

// NewWaker creates the eventfd and queues its first read, whose completion
// carries tag: on that completion the loop calls Rearm.
func (r *Ring) NewWaker(tag UserData) (*Waker, error) {
	if r.closed {
		return nil, ErrClosed
	}
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	w := &Waker{r: r, tag: tag, fd: fd, buf: make([]byte, 8)}
	if _, err := r.prepRead(fd, w.buf, tag); err != nil {
		unix.Close(fd)
		return nil, err
	}
	r.wakers = append(r.wakers, w)
	return w, nil
}

// Tag returns the UserData of the Waker's completions.
func (w *Waker) Tag() UserData { return w.tag }

// Wake makes the loop's next (or current) wait return. It is safe to call
// from any goroutine, costs one atomic operation when a wake-up is already
// pending, and does not allocate. After Close it returns ErrClosed.
func (w *Waker) Wake() error {
	if !w.pending.CompareAndSwap(0, 1) {
		return nil
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.fd < 0 {
		return ErrClosed
	}
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	for {
		_, err := unix.Write(w.fd, one[:])
		switch err {
		case nil, unix.EAGAIN: // EAGAIN: the counter is saturated, the read will fire anyway
			return nil
		case unix.EINTR:
			continue
		}
		return os.NewSyscallError("write", err)
	}
}

// Rearm handles the Waker's completion c: it clears the pending flag and
// queues the next read. Call it before draining the work the wake-up
// announced. A read that failed (Res < 0) is re-armed too; its error is
// returned unless it was a cancellation at close.
func (w *Waker) Rearm(c CQE) error {
	if w.fd < 0 {
		return ErrClosed
	}
	w.pending.Store(0)
	if _, err := w.r.prepRead(w.fd, w.buf, w.tag); err != nil {
		return err
	}
	return c.Err()
}

func (w *Waker) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		return nil
	}
	err := unix.Close(w.fd)
	w.fd = -1
	if err != nil {
		return os.NewSyscallError("close", err)
	}
	return nil
}
