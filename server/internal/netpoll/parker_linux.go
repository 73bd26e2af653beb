package netpoll

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// parker is where a loop sleeps while the worker pool holds a task
// (Poller.Park): a descriptor that is readable when the loop has events (a
// duplicate of the epoll fd, or the eventfd an io_uring signals), handed to
// Go's netpoller, so the sleeping loop holds no P and a worker sharing the
// P runs at once. A loop sleeping in its own system call keeps the P until
// sysmon retakes it, up to 10 ms later.
//
// kick makes the parked loop runnable straight away, on the caller's P:
// it sets a read deadline in the past, and the runtime readies the
// goroutine waiting on the descriptor then and there, ahead of everything
// else queued on that P. A worker that kicks its loop after handing it a
// reply, and then yields, gives the loop its turn at once: it writes the
// reply and reads what arrived meanwhile. A readiness edge alone is seen
// only when the scheduler next polls the network, which a worker that
// keeps its P busy postpones until it blocks or sysmon polls (up to
// 10 ms), and bytes wait in the socket that long (docs/OVERLOAD.md, The
// worker pool's law).
//
// Only the loop calls open, sleep and close; kick may be called from any
// goroutine between open and close.
type parker struct {
	file   *os.File
	conn   syscall.RawConn
	poll   func() (int, error) // the loop's non-blocking wait
	ready  func(uintptr) bool  // conn.Read's callback: poll, keeping its results
	n      int
	err    error
	off    bool        // it could not be set up, or the netpoller refused it
	parked atomic.Bool // the loop is in sleep; kick reads it
	kicked atomic.Bool // a deadline may be set: sleep clears it before parking
}

// aLongTimeAgo is a deadline in the past: setting it wakes a waiting reader.
var aLongTimeAgo = time.Unix(1, 0)

// open takes ownership of fd (non-blocking) and registers it with the
// netpoller; poll is the loop's non-blocking wait. On error fd is closed.
func (k *parker) open(fd int, name string, poll func() (int, error)) error {
	f := os.NewFile(uintptr(fd), name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return err
	}
	k.file, k.conn, k.poll = f, rc, poll
	k.ready = func(uintptr) bool {
		k.n, k.err = k.poll()
		return k.n > 0 || k.err != nil
	}
	return nil
}

// sleep polls, and while nothing is there sleeps in the netpoller until
// the descriptor is readable or a kick comes. open sets the parker up
// (calling k.open) the first time. ok is false when the parker cannot be
// used: open failed, or the netpoller refused the descriptor; it is then
// off for good and the caller sleeps in its own blocking wait instead.
func (k *parker) sleep(open func() error) (n int, err error, ok bool) {
	if k.off {
		return 0, nil, false
	}
	if k.file == nil {
		if open() != nil {
			k.off = true
			return 0, nil, false
		}
	}
	if k.kicked.Swap(false) {
		_ = k.file.SetReadDeadline(time.Time{})
	}
	k.parked.Store(true)
	rerr := k.conn.Read(k.ready)
	k.parked.Store(false)
	if rerr == nil {
		n, err = k.n, k.err
		k.err = nil
		return n, err, true
	}
	if !errors.Is(rerr, os.ErrDeadlineExceeded) {
		// not pollable after all; the descriptor stays open until close,
		// so a kick that saw parked just before cannot race its release
		k.off = true
		return 0, nil, false
	}
	k.kicked.Store(false)
	_ = k.file.SetReadDeadline(time.Time{})
	n, err = k.poll()
	return n, err, true
}

// kick wakes the parked loop at once on the caller's P (see parker); no-op
// when the loop is not parked. Safe from any goroutine.
func (k *parker) kick() {
	if k.parked.Load() {
		k.kicked.Store(true)
		_ = k.file.SetReadDeadline(aLongTimeAgo)
	}
}

// close closes the descriptor.
func (k *parker) close() {
	if k.file != nil {
		k.file.Close()
		k.file, k.conn = nil, nil
	}
}
