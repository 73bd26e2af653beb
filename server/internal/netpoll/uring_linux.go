//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package netpoll

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/uring"
	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/ringq"
)

// URing is the io_uring backend: the poller contract filled with one
// multishot IORING_OP_POLL_ADD per registered descriptor (the timer fd and
// the wake-up eventfd included, as with epoll), reaped from the completion
// queue. Multishot polls are edge-triggered like EPOLLET; a descriptor
// registered without Edge gets a one-shot poll re-armed after each
// completion, which the kernel completes at once while the descriptor
// stays ready (level-triggered). The listener (no Edge, tag 0) accepts by
// a multishot accept instead (uring_accept_linux.go). Its zero value is
// ready for Open; the ring itself is created by Attach, on the owner's
// thread (single issuer).
//
// Each registration is a record (pollReg) whose index and generation are
// the poll's user_data; the fd, tag and interest live in the record, not
// in the kernel. Mod updates the events in place
// (IORING_POLL_UPDATE_EVENTS), Del removes the poll, and a record is
// reused only after the kernel posted the poll's last completion (no
// IORING_CQE_F_MORE), so a completion always names the registration it
// belongs to: one for a removed registration is dropped, whatever has
// reused its fd since. A poll that ends while still registered is
// re-armed. Control operations are submitted with CQE_SKIP_SUCCESS; a
// failed one that may be retried (-EALREADY: the poll was being run) is
// queued again for the next Wait.
//
// Connections (registrations with a non-zero tag and Edge) are read and
// written by completion when Attach could set up the loop's provided
// buffer ring (recv mode, RecvMode); otherwise they stay on readiness and
// the owner's read(2) and writev(2). In recv mode a connection gets an
// IORING_OP_RECV that takes a buffer from the ring, so the kernel hands
// the bytes over with the completion: a Data event whose bytes Received(i)
// returns, the owner's until the next Wait, which gives their buffers back
// to the ring. Each recv is a multishot capped at recvCapBytes in all
// (uring.SQE.SetMultishotLimit): it stays armed across the small messages
// within its cap, saving a submission per message, and the completion
// that reaches the cap ends it. The next one is armed only when the owner
// asks (RecvOn), which is how the engine's read budgets and backpressure
// hold: between two armings the kernel hands over less than the cap plus
// one buffer, where an uncapped multishot would drain the socket into the
// ring whatever the budgets. A kernel without the cap fails the first such
// recv with -EINVAL, and the poller falls back to single recvs (recvCap
// 0). RecvOff cancels an armed recv. A recv that ran dry (-ENOBUFS) or was
// cancelled while wanted is armed again. The poll of such a registration
// watches only EPOLLOUT, armed the first time the owner asks for it (error
// and hang-up come with it). Sends are sendmsgs through the ring
// (uring_io_linux.go).
type URing struct {
	ring       *uring.Ring // nil until Attach
	timerfd    int
	wakefd     int
	opened     bool
	maxEvents  int
	cqes       []uring.CQE
	events     []uringEvent
	regs       []pollReg
	free       []uint32
	byFd       []uint32       // fd → index+1 of its registration; 0: none
	later      []uint32       // registrations with a submission still to make (settle)
	bufs       *uring.BufRing // the provided buffers of connections' recvs; nil: readiness only
	recvCap    uint32         // a multishot recv's cap in bytes per arming (recvCapBytes); 0: single recvs
	lent       []uint16       // buffers the last wait's recv events hold, recycled at the next wait
	readyOnly  bool           // connections on readiness and read(2) too (set before open; tests of that contract)
	singleRecv bool           // single recvs, never the capped multishot (set before open; tests and comparisons)
	iovs       []unix.Iovec   // sends' iovecs, valid until the submission that carries them (SendIovecs)
	niovs      int            // iovs in use since the last submission
	pollAccept bool           // the listener on a one-shot poll and accept4, not a multishot accept (set before open; tests and comparisons)
	accFd      int32          // the listener accepting by multishot accept while registered; -1: none
	accepted   []int32        // fds its completions brought, not yet handed to the loop (accept)
	accHead    int            // the next of accepted to hand over
	acceptErr  unix.Errno     // the error that ended the multishot accept, for accept to report

	// park (uring_park_linux.go): an eventfd the ring signals,
	// watched by Go's netpoller; opened on first use.
	pk parker
}

// uringEvent is one event of the last wait, as Event(i) returns it.
type uringEvent struct {
	fd   int32
	tag  uint32
	ev   Events
	res  int32  // a recv completion's result (ev has Data)
	data []byte // its bytes, in a provided buffer
}

// pollReg is one registration.
type pollReg struct {
	fd      int32
	tag     uint32
	ev      Events // the interest, without Edge
	gen     uint32
	level   bool                         // registered without Edge: a one-shot poll re-armed after each completion
	acc     bool                         // the listener (level, tag 0) accepting by a multishot accept (uring_accept_linux.go)
	live    bool                         // registered: byFd names it
	armed   bool                         // a poll is in the kernel; its last completion has not been seen
	queued  bool                         // on later
	updated bool                         // ev changed and the kernel has not been told yet
	recv    bool                         // a connection read by recv completions (recv mode)
	rArmed  bool                         // its recv is in the kernel; the recv's last completion has not been seen
	rOff    bool                         // the loop asked to stop receiving (RecvOff)
	rCancel bool                         // a cancellation of the armed recv was submitted
	rMore   bool                         // the last recv left bytes in the socket (IORING_CQE_F_SOCK_NONEMPTY)
	sArmed  bool                         // a send is in the kernel; its completion has not been seen
	sCancel bool                         // a cancellation of the orphaned send was submitted
	orphan  *ringq.Ring[ioflush.Segment] // a closed connection's out-queue under a send: dropped at its completion
}

// User_data kinds of the backend's submissions.
const (
	kindPoll    = 1 // the multishot poll of a registration
	kindPollCtl = 2 // an update or removal of it (completes only on failure)
	kindRecv    = 3 // the recv of a connection (recv mode)
	kindRecvCtl = 4 // its cancellation (completes only on failure)
	kindSend    = 5 // a connection's sendmsg (recv mode)
	kindSendCtl = 6 // its cancellation after del (completes only on failure)
)

// uringEntries is the submission queue size: a turn's mods and dels beyond
// it are submitted early by the prep methods, never dropped.
const uringEntries = 256

func (p *URing) Open(maxEvents int) error {
	p.timerfd, p.wakefd, p.opened, p.maxEvents, p.accFd = -1, -1, true, maxEvents, -1
	var err error
	if p.timerfd, err = unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC); err != nil {
		p.timerfd = -1
		return os.NewSyscallError("timerfd_create", err)
	}
	if p.wakefd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		p.wakefd = -1
		p.Close()
		return os.NewSyscallError("eventfd", err)
	}
	p.cqes = make([]uring.CQE, maxEvents)
	p.events = make([]uringEvent, maxEvents+1) // a completion's event each, and the accepting listener's (listenerReady)
	for _, fd := range []int{p.timerfd, p.wakefd} {
		if err := p.Add(fd, In|Edge, 0); err != nil {
			p.Close()
			return err
		}
	}
	return nil
}

// Attach sets the ring up on the calling (the loop's locked) thread and
// arms what was registered before.
func (p *URing) Attach() error {
	feats, err := uringUsable()
	if err != nil {
		return err
	}
	cq := uint32(1024)
	for cq < uint32(4*p.maxEvents) && cq < 1<<16 {
		cq <<= 1
	}
	p.ring, err = uring.New(uring.Config{Entries: uringEntries, CQEntries: cq, Setup: feats.Setup()})
	if err != nil {
		p.ring = nil
		return fmt.Errorf("sluice: io_uring setup: %w", err)
	}
	if !p.readyOnly {
		// without it (a kernel refusing the registration) connections
		// stay on readiness and read(2)
		p.bufs, _ = p.ring.NewBufRing(recvBufGroup, recvBufCount, recvBufBytes)
		if !p.singleRecv {
			p.recvCap = recvCapBytes
		}
	}
	return nil // the registrations so far are on later; the first wait arms them
}

func (p *URing) pollData(i uint32) uring.UserData {
	return uring.Pack(kindPoll, i, p.regs[i].gen)
}
func (p *URing) ctlData(i uint32) uring.UserData {
	return uring.Pack(kindPollCtl, i, p.regs[i].gen)
}

func (p *URing) Add(fd int, ev Events, tag uint32) error {
	if fd < 0 {
		return os.NewSyscallError("poll_add", unix.EBADF)
	}
	if fd < len(p.byFd) && p.byFd[fd] != 0 {
		return os.NewSyscallError("poll_add", unix.EEXIST)
	}
	var i uint32
	if n := len(p.free); n > 0 {
		i, p.free = p.free[n-1], p.free[:n-1]
	} else {
		i = uint32(len(p.regs))
		p.regs = append(p.regs, pollReg{})
	}
	r := &p.regs[i]
	*r = pollReg{fd: int32(fd), tag: tag, ev: ev &^ Edge, gen: (r.gen + 1) & uring.GenMask, live: true,
		level: ev&Edge == 0, recv: tag != 0 && ev&Edge != 0 && !p.readyOnly,
		acc: tag == 0 && ev&Edge == 0 && !p.pollAccept}
	if r.acc {
		p.accFd = int32(fd)
	}
	if fd >= len(p.byFd) {
		grown := make([]uint32, max(64, 2*len(p.byFd), fd+1))
		copy(grown, p.byFd)
		p.byFd = grown
	}
	p.byFd[fd] = i + 1
	p.settle(i)
	return nil
}

func (p *URing) lookup(fd int) (uint32, bool) {
	if fd < 0 || fd >= len(p.byFd) || p.byFd[fd] == 0 {
		return 0, false
	}
	return p.byFd[fd] - 1, true
}

func (p *URing) Mod(fd int, ev Events, tag uint32) error {
	i, ok := p.lookup(fd)
	if !ok {
		return os.NewSyscallError("poll_update", unix.ENOENT)
	}
	r := &p.regs[i]
	r.tag = tag
	if ev &^= Edge; ev != r.ev {
		r.ev, r.updated = ev, true
		p.settle(i)
	}
	return nil
}

func (p *URing) Del(fd int) error {
	i, ok := p.lookup(fd)
	if !ok {
		return os.NewSyscallError("poll_remove", unix.ENOENT)
	}
	p.byFd[fd] = 0
	p.regs[i].live = false
	if p.regs[i].acc {
		p.accFd, p.acceptErr = -1, 0 // queued fds wait for the next add
	}
	p.settle(i)
	return nil
}

// Forget removes fd's registration (Del): its poll holds a reference to the
// file, and the socket would stay open, its peer never seeing the close.
func (p *URing) Forget(fd int) { p.Del(fd) }

// Wait submits what the loop prepared and reaps completions into events:
// block=false never sleeps (one io_uring_enter, none when there is nothing
// to submit or collect), block=true waits for at least one completion.
func (p *URing) Wait(block bool) (int, error) {
	if p.ring == nil {
		return 0, fmt.Errorf("sluice: io_uring backend: %w", uring.ErrClosed)
	}
	for _, id := range p.lent {
		p.bufs.Recycle(id) // the loop is done with the last wait's bytes
	}
	p.lent = p.lent[:0]
	p.settleLater()
	var err error
	if block && p.acceptPending() {
		block = false // the listener is ready (listenerReady below)
	}
	if block {
		_, err = p.ring.SubmitAndWait(1, -1)
	} else {
		_, err = p.ring.Submit()
	}
	if p.niovs > 0 && err == nil {
		p.clearIovecs()
	}
	// EBUSY: completions overflowed and the queue is full (reaping them
	// makes room); EAGAIN: the kernel was short of memory. Neither consumed
	// the submissions, which stay queued for the next wait.
	if err != nil && !errors.Is(err, unix.EBUSY) && !errors.Is(err, unix.EAGAIN) {
		return 0, err
	}
	err = nil
	n := p.ring.PeekBatch(p.cqes)
	out := 0
	for k := 0; k < n; k++ {
		var cerr error
		if out, cerr = p.complete(p.cqes[k], out); cerr != nil && err == nil {
			err = cerr
		}
	}
	p.ring.Advance(n)
	return p.listenerReady(out), err
}

// complete handles one completion, appending at most one event at
// events[out]; it returns the new count. A completion that names no record
// of this poller (a malformed user_data) or a removed registration is
// dropped. A failed poll of a connection becomes a Fail event, so the
// loop closes that connection; of the listener, timer or wake-up fd (tag 0)
// it is the loop's error.
func (p *URing) complete(c uring.CQE, out int) (int, error) {
	i := c.UserData.Index()
	if int(i) >= len(p.regs) || p.regs[i].gen != c.UserData.Gen() {
		p.dropBuffer(c)
		if c.UserData.Kind() == kindAccept && c.Res >= 0 {
			Close(int(c.Res)) // an accept no record owns (never: a record outlives its multishot)
		}
		return out, nil
	}
	r := &p.regs[i]
	switch c.UserData.Kind() {
	case kindAccept:
		return out, p.completeAccept(i, c)
	case kindRecv:
		return p.completeRecv(i, c, out), nil
	case kindSend:
		return p.completeSend(i, c, out), nil
	case kindSendCtl:
		if c.Res == -int32(unix.EALREADY) { // the send was running: ask again
			r.sCancel = false
			p.queue(i)
		}
	case kindRecvCtl:
		if c.Res == -int32(unix.EALREADY) { // the recv was running: ask again
			r.rCancel = false
			p.queue(i)
		}
	case kindPoll:
		if !r.armed {
			return out, nil
		}
		if c.Res > 0 && r.live {
			p.events[out] = uringEvent{fd: r.fd, tag: r.tag, ev: Events(c.Res)}
			out++
		}
		if c.More() {
			return out, nil
		}
		r.armed = false
		if c.Res < 0 && c.Res != -int32(unix.ECANCELED) && r.live {
			return p.failed(i, c.Res, out)
		}
		p.settle(i) // re-arm a live one, free a removed one
	case kindPollCtl:
		switch c.Res {
		case 0, -int32(unix.ENOENT): // done, or the poll already ended (its last completion re-arms or frees it)
		case -int32(unix.EALREADY): // the poll was being run: try again next wait
			if r.live {
				r.updated = true
			}
			p.queue(i)
		default:
			if r.live {
				return p.failed(i, c.Res, out)
			}
		}
	}
	return out, nil
}

// failed reports registration i as unusable (res is the kernel's negated errno).
func (p *URing) failed(i uint32, res int32, out int) (int, error) {
	r := &p.regs[i]
	if r.tag == 0 {
		return out, fmt.Errorf("sluice: io_uring poll of fd %d: %w", r.fd, unix.Errno(-res))
	}
	p.events[out] = uringEvent{fd: r.fd, tag: r.tag, ev: Err | Hup | Fail}
	return out + 1, nil
}

func (p *URing) Event(i int) (fd int, tag uint32, ev Events) {
	e := &p.events[i]
	return int(e.fd), e.tag, e.ev
}
