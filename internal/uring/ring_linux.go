//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package uring

import (
	"errors"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ring is one io_uring instance: the mmapped submission and completion
// queues and the per-slot scratch space its prep methods fill. A Ring is
// owned by one goroutine (the loop) and is not safe for concurrent use; only
// Waker.Wake may be called from elsewhere. With Config.Setup holding
// FeatSingleIssuer that goroutine must also stay on the OS thread that called
// New. The zero value is not usable: call New.
type Ring struct {
	fd       int
	setup    uint32 // IORING_SETUP_* flags in effect
	features uint32 // IORING_FEAT_* the kernel reported
	closed   bool

	sqMem, cqMem, sqeMem []byte // cqMem is nil under IORING_FEAT_SINGLE_MMAP

	sqHead, sqTail, sqFlags *uint32
	sqMask                  uint32
	sqes                    []SQE
	sqeTail                 uint32 // next SQE to hand out; published to *sqTail by flush

	cqHead, cqTail, cqFlags *uint32
	cqMask                  uint32
	cqes                    []CQE

	// Per-SQE-slot scratch the kernel reads at submission: a prep method
	// stores what the SQE points at in the slot of that SQE, which is not
	// reused before the SQE has been submitted.
	pins []unsafe.Pointer // keeps caller buffers reachable (and on the heap)
	ts   []unix.Timespec
	msgs []unix.Msghdr

	waitTS  unix.Timespec
	waitArg getEventsArg

	bufRings []*BufRing
	wakers   []*Waker
}

// New sets up a ring as c describes. Errors from io_uring_setup come back as
// *os.SyscallError; on a kernel without io_uring (ENOSYS) or one that refuses
// it (EPERM) errors.Is(err, ErrUnsupported) also holds.
func New(c Config) (*Ring, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var p params
	p.flags = setupClamp
	if c.CQEntries != 0 {
		p.flags |= setupCQSize
		p.cqEntries = c.CQEntries
	}
	if c.Setup.Has(FeatSingleIssuer) {
		p.flags |= setupSingleIssuer
	}
	if c.Setup.Has(FeatDeferTaskrun) {
		p.flags |= setupDeferTaskrun | setupTaskrunFlag
	}
	if c.Setup.Has(FeatCoopTaskrun) {
		p.flags |= setupCoopTaskrun | setupTaskrunFlag
	}
	fd, err := setup(c.entries(), &p)
	if err != nil {
		return nil, err
	}
	r := &Ring{fd: fd, setup: p.flags, features: p.features}
	if err := r.mmap(&p); err != nil {
		r.unmap()
		unix.Close(fd)
		return nil, err
	}
	return r, nil
}

// sysSetup is the io_uring_setup system call, a variable so tests can play
// a kernel that refuses it.
var sysSetup = func(entries uint32, p *params) (uintptr, unix.Errno) {
	fd, _, e := unix.RawSyscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	return fd, e
}

// setup calls io_uring_setup. ENOSYS and EPERM become errors that match
// ErrUnsupported.
func setup(entries uint32, p *params) (int, error) {
	fd, e := sysSetup(entries, p)
	if e != 0 {
		err := os.NewSyscallError("io_uring_setup", e)
		if e == unix.ENOSYS || e == unix.EPERM {
			return -1, &MissingError{Err: err}
		}
		return -1, err
	}
	return int(fd), nil
}

func (r *Ring) mmap(p *params) error {
	sqSize := int(p.sqOff.array) + int(p.sqEntries)*4
	cqSize := int(p.cqOff.cqes) + int(p.cqEntries)*int(unsafe.Sizeof(CQE{}))
	single := p.features&featSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	if r.sqMem, err = mapRing(r.fd, offSQRing, sqSize); err != nil {
		return err
	}
	if single {
		r.cqMem = nil
	} else if r.cqMem, err = mapRing(r.fd, offCQRing, cqSize); err != nil {
		return err
	}
	if r.sqeMem, err = mapRing(r.fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(SQE{}))); err != nil {
		return err
	}
	sq := unsafe.Pointer(&r.sqMem[0])
	cq := sq
	if !single {
		cq = unsafe.Pointer(&r.cqMem[0])
	}
	r.sqHead = (*uint32)(unsafe.Add(sq, p.sqOff.head))
	r.sqTail = (*uint32)(unsafe.Add(sq, p.sqOff.tail))
	r.sqFlags = (*uint32)(unsafe.Add(sq, p.sqOff.flags))
	r.sqMask = *(*uint32)(unsafe.Add(sq, p.sqOff.ringMask))
	array := unsafe.Slice((*uint32)(unsafe.Add(sq, p.sqOff.array)), p.sqEntries)
	for i := range array {
		array[i] = uint32(i) // identity: SQE slot i is submitted from array slot i
	}
	r.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	r.sqeTail = atomic.LoadUint32(r.sqTail)

	r.cqHead = (*uint32)(unsafe.Add(cq, p.cqOff.head))
	r.cqTail = (*uint32)(unsafe.Add(cq, p.cqOff.tail))
	r.cqFlags = (*uint32)(unsafe.Add(cq, p.cqOff.flags))
	r.cqMask = *(*uint32)(unsafe.Add(cq, p.cqOff.ringMask))
	r.cqes = unsafe.Slice((*CQE)(unsafe.Add(cq, p.cqOff.cqes)), p.cqEntries)

	r.pins = make([]unsafe.Pointer, p.sqEntries)
	r.ts = make([]unix.Timespec, p.sqEntries)
	r.msgs = make([]unix.Msghdr, p.sqEntries)
	return nil
}

func mapRing(fd int, off int64, size int) ([]byte, error) {
	b, err := unix.Mmap(fd, off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	return b, nil
}

func (r *Ring) unmap() {
	for _, m := range []*[]byte{&r.sqeMem, &r.cqMem, &r.sqMem} {
		if *m != nil {
			_ = unix.Munmap(*m)
			*m = nil
		}
	}
	r.sqes, r.cqes = nil, nil
}

// closeDrain bounds how long Close waits for the kernel to cancel the
// operations still in flight: cancelling a socket operation that waits for
// readiness is immediate, so this only matters for a kernel that is stuck.
const closeDrain = time.Second

// closeTag tags Close's own cancellation; completions are discarded at
// Close, so a caller's use of the same tag only ends the drain early.
const closeTag = UserData(^uint64(0))

// Close cancels every operation still in flight and waits (at most
// closeDrain) for the cancellation, discarding the completions; closes the
// ring's wakers; unregisters and unmaps its buffer rings (so the kernel can
// no longer pick a buffer); unmaps the queues and closes the ring's
// descriptor. Buffers passed to prep methods may be reused once Close
// returns. With FeatSingleIssuer, Close must run on the ring's thread like
// every other method: elsewhere the kernel refuses to cancel and to
// unregister, Close returns an error matching ErrWrongThread, and the
// buffer rings' memory is left mapped (leaked) rather than unmapped while
// the kernel may still write into it. Close is idempotent.
func (r *Ring) Close() error { return r.CloseWith(nil) }

// CloseWith is Close, handing drop each completion reaped while the
// in-flight operations are cancelled and never seen by the owner (drop
// nil: discarded), so an owner can release what such a completion carries,
// such as the fd of a connection a multishot accept accepted.
func (r *Ring) CloseWith(drop func(CQE)) error {
	if r.closed {
		return nil
	}
	var first error
	keep := func(err error) {
		if first == nil && err != nil {
			first = err
		}
	}
	keep(r.cancelAll(drop))
	r.closed = true
	for _, w := range r.wakers {
		keep(w.close())
	}
	for _, b := range r.bufRings {
		keep(b.close())
	}
	r.wakers, r.bufRings = nil, nil
	r.unmap()
	if err := unix.Close(r.fd); err != nil {
		keep(os.NewSyscallError("close", err))
	}
	r.fd = -1
	return first
}

// cancelAll cancels every in-flight operation (IORING_ASYNC_CANCEL_ANY)
// and reaps completions until the cancellation's own arrives or closeDrain
// passes, handing the others to drop when it is not nil. A kernel without
// CANCEL_ANY (before 5.19) fails the cancellation with EINVAL, which ends
// the drain too.
func (r *Ring) cancelAll(drop func(CQE)) error {
	s, err := r.GetSQE()
	if err != nil {
		return err
	}
	s.prep(opAsyncCancel, -1, 0, 0, 0, closeTag)
	s.opFlags = asyncCancelAll | asyncCancelAny
	var cqes [64]CQE
	deadline := time.Now().Add(closeDrain)
	for left := closeDrain; left > 0; left = time.Until(deadline) {
		if _, err := r.SubmitAndWait(1, left); err != nil {
			return err
		}
		n := r.PeekBatch(cqes[:])
		r.Advance(n)
		done := false
		for _, c := range cqes[:n] {
			switch {
			case c.UserData == closeTag:
				done = true
			case drop != nil:
				drop(c)
			}
		}
		if done {
			return nil
		}
	}
	return nil
}

// RegisterEventfd has the kernel signal the eventfd fd when the ring has
// completion work for its owner (IORING_REGISTER_EVENTFD), so the owner can
// sleep elsewhere than in io_uring_enter, for example in Go's netpoller,
// which watches the eventfd; the work is then collected with Submit. Under
// FeatDeferTaskrun the signal comes when the kernel queues the task work
// that posts a completion (the completion itself waits for the next
// io_uring_enter), once for each time that queue goes from empty to
// non-empty; otherwise when a completion is posted. A signal raised inside
// another eventfd's wake-up (an operation that an eventfd write completes,
// such as a poll on a second eventfd) is deferred by the kernel to an RCU
// callback: 22 ms, or more than 200 ms, on 6.18 (TestRegisterEventfd), so
// an owner sleeping on the eventfd must be woken directly by such writers.
// Signals start enabled; see
// EventfdSignals. One eventfd per ring; the kernel drops it at Close.
func (r *Ring) RegisterEventfd(fd int) error {
	if r.closed {
		return ErrClosed
	}
	v := int32(fd)
	return r.register(registerEventfd, unsafe.Pointer(&v), 1)
}

// EventfdSignals turns the registered eventfd's signals on or off
// (IORING_CQ_EVENTFD_DISABLED, a flag in the shared completion ring, so no
// system call): off while the owner does not sleep on the eventfd spares
// the kernel an eventfd wake-up per signal.
func (r *Ring) EventfdSignals(on bool) {
	if r.closed {
		return
	}
	f := atomic.LoadUint32(r.cqFlags)
	if on {
		f &^= cqEventfdDisabled
	} else {
		f |= cqEventfdDisabled
	}
	atomic.StoreUint32(r.cqFlags, f)
}

// Fd returns the ring's descriptor (for IORING_OP_MSG_RING from another
// ring), or -1 after Close.
func (r *Ring) Fd() int { return r.fd }

// Setup returns the setup flags the ring runs with, as Feature bits.
func (r *Ring) Setup() Feature {
	var f Feature
	if r.setup&setupSingleIssuer != 0 {
		f |= FeatSingleIssuer
	}
	if r.setup&setupDeferTaskrun != 0 {
		f |= FeatDeferTaskrun
	}
	if r.setup&setupCoopTaskrun != 0 {
		f |= FeatCoopTaskrun
	}
	return f
}

// SQEntries returns the submission queue size.
func (r *Ring) SQEntries() int { return len(r.sqes) }

// CQEntries returns the completion queue size.
func (r *Ring) CQEntries() int { return len(r.cqes) }

// GetSQE returns the next free submission queue entry, zeroed, to be filled
// by the SQE methods; the prep methods call it for you. When the queue is
// full GetSQE first submits what it holds; ErrSQFull means the kernel still
// took nothing. The entry is owned by the caller until the next Submit or
// SubmitAndWait.
func (r *Ring) GetSQE() (*SQE, error) {
	if r.closed {
		return nil, ErrClosed
	}
	if r.sqeTail-atomic.LoadUint32(r.sqHead) >= uint32(len(r.sqes)) {
		if _, err := r.Submit(); err != nil {
			return nil, err
		}
		if r.sqeTail-atomic.LoadUint32(r.sqHead) >= uint32(len(r.sqes)) {
			return nil, ErrSQFull
		}
	}
	i := r.sqeTail & r.sqMask
	r.sqeTail++
	s := &r.sqes[i]
	*s = SQE{}
	r.pins[i] = nil
	return s, nil
}

// slot returns the index of s in the SQE array.
func (r *Ring) slot(s *SQE) int {
	return int((uintptr(unsafe.Pointer(s)) - uintptr(unsafe.Pointer(&r.sqes[0]))) / unsafe.Sizeof(SQE{}))
}

// Pending returns how many entries have been prepared but not yet consumed
// by the kernel.
func (r *Ring) Pending() int {
	if r.closed {
		return 0
	}
	return int(r.sqeTail - atomic.LoadUint32(r.sqHead))
}

// flush publishes the prepared entries to the kernel and returns how many
// it has not consumed yet.
func (r *Ring) flush() uint32 {
	atomic.StoreUint32(r.sqTail, r.sqeTail)
	return r.sqeTail - atomic.LoadUint32(r.sqHead)
}

// needEnter reports whether the kernel holds completion work that only an
// io_uring_enter with GETEVENTS delivers: deferred task work, or completions
// that overflowed the queue.
func (r *Ring) needEnter() bool {
	if r.setup&setupDeferTaskrun != 0 && r.setup&setupTaskrunFlag == 0 {
		return true
	}
	return atomic.LoadUint32(r.sqFlags)&(sqCQOverflow|sqTaskrun) != 0
}

// Submit hands the prepared entries to the kernel without waiting, and lets
// the kernel post completions it has ready (deferred task work, overflow).
// It returns how many entries the kernel consumed. It makes no system call
// when there is nothing to submit and nothing to collect.
func (r *Ring) Submit() (int, error) {
	if r.closed {
		return 0, ErrClosed
	}
	n := r.flush()
	var flags uint32
	if r.needEnter() {
		flags = enterGetEvents
	}
	if n == 0 && flags == 0 {
		return 0, nil
	}
	return r.enter(n, 0, flags, false)
}

// SubmitAndWait submits like Submit and then waits until at least min
// completions are ready or timeout has passed; a negative timeout waits
// without limit, zero does not wait. An expired timeout is not an error: the
// caller finds fewer completions. An interrupted wait (EINTR) is retried. It
// returns how many entries the kernel consumed.
func (r *Ring) SubmitAndWait(min int, timeout time.Duration) (int, error) {
	if r.closed {
		return 0, ErrClosed
	}
	if timeout == 0 || min <= 0 {
		return r.Submit()
	}
	n := r.flush()
	if timeout < 0 {
		return r.enter(n, uint32(min), enterGetEvents, true)
	}
	r.waitTS = unix.NsecToTimespec(int64(timeout))
	r.waitArg = getEventsArg{ts: uint64(uintptr(unsafe.Pointer(&r.waitTS)))}
	return r.enter(n, uint32(min), enterGetEvents|enterExtArg, true)
}

// enter calls io_uring_enter, retrying EINTR (nothing was submitted when it
// is returned) and treating ETIME (the wait's timeout) as success. A call
// that may block goes through Syscall so the runtime can hand the P to
// another thread; one that cannot uses RawSyscall.
func (r *Ring) enter(submit, min, flags uint32, block bool) (int, error) {
	var arg, argSize uintptr
	if flags&enterExtArg != 0 {
		arg, argSize = uintptr(unsafe.Pointer(&r.waitArg)), unsafe.Sizeof(r.waitArg)
	}
	for {
		var n uintptr
		var e unix.Errno
		if block {
			n, _, e = unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(submit), uintptr(min), uintptr(flags), arg, argSize)
		} else {
			n, _, e = unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(submit), uintptr(min), uintptr(flags), arg, argSize)
		}
		switch e {
		case 0:
			return int(n), nil
		case unix.EINTR:
			continue
		case unix.ETIME:
			return 0, nil
		}
		err := os.NewSyscallError("io_uring_enter", e)
		return 0, r.wrongThread(e, err)
	}
}

// register calls io_uring_register.
func (r *Ring) register(op uintptr, arg unsafe.Pointer, nargs uintptr) error {
	for {
		_, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), op, uintptr(arg), nargs, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return r.wrongThread(e, os.NewSyscallError("io_uring_register", e))
		}
		return nil
	}
}

// wrongThread adds ErrWrongThread to err when errno e is the kernel's
// refusal of a SINGLE_ISSUER ring used from another thread.
func (r *Ring) wrongThread(e unix.Errno, err error) error {
	if e == unix.EEXIST && r.setup&setupSingleIssuer != 0 {
		return errors.Join(ErrWrongThread, err)
	}
	return err
}
