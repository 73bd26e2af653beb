//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package netpoll

import (
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/uring"
	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/ringq"
)

// The io_uring backend's recv mode (see URing): connections' recvs
// and sends through the ring, their completions, and the buffers and
// out-queues the kernel holds meanwhile.

// sendIovecCount is the iovecs the sends of one submission may use in all;
// a send that needs more than are left submits what was prepared first.
const sendIovecCount = 4096

// recvCapBytes caps each arming of a connection's multishot recv
// (URing.recvCap): one provided buffer's worth. The completion that
// reaches it may bring up to a buffer more, so what the kernel hands over
// between two armings is below 8 KiB, against one buffer for a single recv.
const recvCapBytes = recvBufBytes

// recvBufCount and recvBufBytes size each loop's provided buffer ring:
// 1,024 buffers of 4 KiB (4 MiB of address space, resident only as the
// kernel fills them), shared by all the loop's connections. A wait hands the loop
// at most one buffer per completion it reaps, and they go back at the next
// wait; when the kernel finds the ring empty a recv ends with -ENOBUFS and
// is armed again after the buffers came back.
const (
	recvBufCount = 1024
	recvBufBytes = 4096
	recvBufGroup = 1
)

// RecvMode reports whether connections are read by completion: their bytes
// come with Data events (Received), never through read(2).
func (p *URing) RecvMode() bool { return p.bufs != nil }

// Received returns the bytes and result of event i, a recv completion.
func (p *URing) Received(i int) ([]byte, int32) {
	e := &p.events[i]
	return e.data, e.res
}

// RecvOn re-arms fd's recv if RecvOff stopped it.
func (p *URing) RecvOn(fd int) {
	if i, ok := p.lookup(fd); ok && p.regs[i].rOff {
		p.regs[i].rOff = false
		p.settle(i)
	}
}

// RecvOff stops fd's recv: the kernel keeps what arrives from now on in the
// socket, and the loop gets no more of it until RecvOn. Completions
// already posted still come.
func (p *URing) RecvOff(fd int) {
	if i, ok := p.lookup(fd); ok && p.regs[i].recv && !p.regs[i].rOff {
		p.regs[i].rOff = true
		p.settle(i)
	}
}

// SendIovecs returns n iovecs for a send to fill, valid until the
// submission that carries it returns (the kernel copies them there);
// when the batch's are used up it submits what was prepared first.
func (p *URing) SendIovecs(n int) ([]unix.Iovec, error) {
	if p.iovs == nil {
		p.iovs = make([]unix.Iovec, sendIovecCount)
	}
	n = min(n, sendIovecCount)
	if p.niovs+n > len(p.iovs) {
		if _, err := p.ring.Submit(); err != nil {
			return nil, err
		}
		p.clearIovecs()
	}
	v := p.iovs[p.niovs : p.niovs+n : p.niovs+n]
	p.niovs += n
	return v, nil
}

// SubmitNow submits the sends prepared so far without waiting (the loop's
// early submission in a turn of slow handlers). EBUSY and EAGAIN leave
// them queued for the next wait, iovecs included.
func (p *URing) SubmitNow() error {
	if _, err := p.ring.Submit(); err != nil {
		if errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EAGAIN) {
			return nil
		}
		return err
	}
	p.clearIovecs()
	return nil
}

// clearIovecs forgets the iovecs of what was just submitted (nothing in
// them stays reachable).
func (p *URing) clearIovecs() {
	clear(p.iovs[:p.niovs])
	p.niovs = 0
}

// Send submits a sendmsg of iovs on fd (a send when there is one), with
// the next wait; its completion comes as a Sent event. One send per
// connection is in flight at a time.
func (p *URing) Send(fd int, iovs []unix.Iovec) error {
	i, ok := p.lookup(fd)
	if !ok {
		return os.NewSyscallError("sendmsg", unix.ENOENT)
	}
	r := &p.regs[i]
	u := uring.Pack(kindSend, i, r.gen)
	var err error
	if len(iovs) == 1 { // the common reply: a plain send, no message header to copy
		_, err = p.ring.PrepSend(fd, unsafe.Slice(iovs[0].Base, iovs[0].Len), unix.MSG_NOSIGNAL, u)
	} else {
		_, err = p.ring.PrepSendmsg(fd, iovs, unix.MSG_NOSIGNAL, u)
	}
	if err != nil {
		return err
	}
	r.sArmed = true
	return nil
}

// OrphanSend hands the poller the out-queue of fd, about to be closed
// with a send in flight: its bytes stay untouched until that send's
// completion, which drops (releases) them. False if the send has completed
// (its event not yet handled): the caller releases q itself.
func (p *URing) OrphanSend(fd int, q *ringq.Ring[ioflush.Segment]) bool {
	if i, ok := p.lookup(fd); ok && p.regs[i].sArmed {
		p.regs[i].orphan = q
		return true
	}
	return false // its completion is in hand already: the kernel is done with q
}

func (p *URing) recvData(i uint32) uring.UserData {
	return uring.Pack(kindRecv, i, p.regs[i].gen)
}
func (p *URing) recvCtlData(i uint32) uring.UserData {
	return uring.Pack(kindRecvCtl, i, p.regs[i].gen)
}

// settleRecv arms the recv of a live connection that wants input, or
// cancels one that is no longer wanted.
func (p *URing) settleRecv(i uint32) error {
	r := &p.regs[i]
	want := r.live && !r.rOff
	switch {
	case want && !r.rArmed:
		var s *uring.SQE
		var err error
		if p.recvCap > 0 {
			s, err = p.ring.PrepRecvMultishot(int(r.fd), p.bufs.Group(), 0, p.recvData(i))
			if err == nil {
				s.SetMultishotLimit(p.recvCap)
			}
		} else {
			s, err = p.ring.PrepRecv(int(r.fd), p.bufs.Group(), 0, p.recvData(i))
		}
		if err != nil {
			return err
		}
		if !r.rMore {
			s.SetPollFirst() // the last recv left the socket empty: an attempt now would fail
		}
		r.rArmed, r.rCancel = true, false
	case !want && r.rArmed && !r.rCancel:
		s, err := p.ring.PrepCancel(p.recvData(i), false, p.recvCtlData(i))
		if err != nil {
			return err
		}
		s.SetFlags(uring.FlagSkipSuccess)
		r.rCancel = true
	}
	return nil
}

// completeRecv handles a completion of registration i's recv: bytes become
// a Data event (their buffer recycled at the next wait), end of file an
// Data event with no bytes, an error a Data event with the negated
// errno in res; -ENOBUFS (the ring ran dry) and -ECANCELED (RecvOff, del)
// make none. A recv that ended is re-armed if still wanted.
func (p *URing) completeRecv(i uint32, c uring.CQE, out int) int {
	r := &p.regs[i]
	if !r.rArmed {
		p.dropBuffer(c)
		return out
	}
	var data []byte
	if c.HasBuffer() {
		id, b, err := p.bufs.Take(c)
		if err == nil {
			p.lent = append(p.lent, id)
			data = b
		}
	}
	r.rMore = c.SockNonEmpty()
	quiet := c.Res == -int32(unix.ENOBUFS) || c.Res == -int32(unix.ECANCELED)
	if c.Res == -int32(unix.EINVAL) && p.recvCap > 0 {
		// a kernel without the multishot cap: single recvs from now on
		p.recvCap, quiet = 0, true
	}
	if !c.More() {
		r.rArmed, r.rCancel = false, false
		if !quiet {
			r.rOff = true // the loop asks for more (RecvOn) once it has taken this
		}
		p.settle(i) // re-arm one that ran dry, free a removed one
	}
	if !r.live || quiet {
		return out // bytes for a removed registration go back with the rest
	}
	ev := In | Data
	if r.rMore {
		ev |= More
	}
	p.events[out] = uringEvent{fd: r.fd, tag: r.tag, ev: ev, res: c.Res, data: data}
	return out + 1
}

// completeSend handles the completion of registration i's send: an Sent
// event with its result for a live connection; for a closed one the
// out-queue it was sending from is released now that the kernel is done
// with it.
func (p *URing) completeSend(i uint32, c uring.CQE, out int) int {
	r := &p.regs[i]
	if !r.sArmed {
		return out
	}
	r.sArmed = false
	if !r.live {
		if r.orphan != nil {
			ioflush.Drop(r.orphan)
			r.orphan = nil
		}
		r.sCancel = false
		p.settle(i) // free the record once nothing else is in flight
		return out
	}
	p.events[out] = uringEvent{fd: r.fd, tag: r.tag, ev: Sent, res: c.Res}
	return out + 1
}

// dropBuffer gives back the buffer of a completion nobody will read.
func (p *URing) dropBuffer(c uring.CQE) {
	if p.bufs != nil && c.HasBuffer() {
		if id, _, err := p.bufs.Take(c); err == nil {
			p.lent = append(p.lent, id)
		}
	}
}
