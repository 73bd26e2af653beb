//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package netpoll

import (
	"bytes"
	"io"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/uring"
	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/ringq"
)

// openRecvPoller opens an io_uring poller in recv mode (connections read
// and written by completion), on the test goroutine's locked thread.
func openRecvPoller(t *testing.T) *Dispatcher {
	t.Helper()
	return openRecvPollerSingle(t, false)
}

// openRecvPollerSingle is openRecvPoller, with single recvs instead of the
// capped multishot when single is set (the fallback for kernels without
// the cap).
func openRecvPollerSingle(t *testing.T, single bool) *Dispatcher {
	t.Helper()
	requireURing(t)
	p := openPollerWith(t, true, func(u *URing) { u.singleRecv = single })
	if single != (p.ur.recvCap == 0) {
		t.Fatalf("recvCap %d with single recvs %v", p.ur.recvCap, single)
	}
	if !p.RecvMode() {
		t.Skip("no provided buffer ring: the backend stays on readiness")
	}
	return p
}

// recvEvents waits up to a second for events of fd and returns the first
// wait's that had any, with the bytes of its recv completions joined.
func recvEvents(t *testing.T, p *Dispatcher, fd int) (evs []Events, data []byte, res []int32) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		n, err := p.Wait(false)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			if f, _, ev := p.Event(i); f == fd {
				evs = append(evs, ev)
				if ev&(Data|Sent) != 0 {
					b, r := p.Received(i)
					data = append(data, b...)
					res = append(res, r)
				}
			}
		}
		if len(evs) > 0 {
			return evs, data, res
		}
		time.Sleep(time.Millisecond)
	}
	return nil, nil, nil
}

// TestRecvModeReceiveAndStop, with single recvs (the fallback for kernels
// without the multishot cap): bytes arrive with a recv completion (Data)
// in a ring buffer, with no read(2); the next recv is armed only by recvOn,
// so bytes sent meanwhile stay in the socket (SIOCINQ) until then; end of
// file is a completion with result 0.
func TestRecvModeReceiveAndStop(t *testing.T) {
	p := openRecvPollerSingle(t, true)
	fd, c := tcpPair(t)
	if err := p.Add(fd, connEvents, 3); err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("hello"))
	evs, data, res := recvEvents(t, p, fd)
	if len(evs) != 1 || evs[0]&Data == 0 || string(data) != "hello" || res[0] != 5 {
		t.Fatalf("events %#x data %q res %v, want one Data with hello", evs, data, res)
	}
	c.Write([]byte("world")) // no recv armed: stays in the kernel
	time.Sleep(20 * time.Millisecond)
	if n, _ := p.Wait(false); n != 0 {
		t.Fatalf("%d events with no recv armed", n)
	}
	if inq, _ := unix.IoctlGetInt(fd, unix.SIOCINQ); inq != 5 {
		t.Fatalf("SIOCINQ %d, want the 5 bytes left in the socket", inq)
	}
	p.RecvOn(fd)
	if _, data, _ = recvEvents(t, p, fd); string(data) != "world" {
		t.Fatalf("after recvOn: %q", data)
	}
	c.Close()
	p.RecvOn(fd)
	evs, _, res = recvEvents(t, p, fd)
	if len(evs) != 1 || evs[0]&Data == 0 || res[0] != 0 {
		t.Fatalf("end of file: events %#x res %v, want Data with 0", evs, res)
	}
	p.Del(fd)
	unix.Close(fd)
}

// TestRecvModeCappedMultishot: with the capped multishot (the default)
// a connection's recv stays armed across messages until recvCapBytes have
// arrived since it was armed; the completion that reaches the cap ends it
// (having brought less than the cap plus one buffer in all), what arrives
// next stays in the socket (SIOCINQ) until recvOn, and end of file is a
// completion with result 0.
func TestRecvModeCappedMultishot(t *testing.T) {
	p := openRecvPollerSingle(t, false)
	fd, c := tcpPair(t)
	if err := p.Add(fd, connEvents, 3); err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, m := range []string{"hello", "world"} {
		c.Write([]byte(m))
		evs, data, _ := recvEvents(t, p, fd)
		if len(evs) != 1 || evs[0]&Data == 0 || string(data) != m {
			t.Fatalf("events %#x data %q, want one Data with %q (no recvOn between)", evs, data, m)
		}
		got += len(data)
	}
	i, _ := p.ur.lookup(fd)
	r := &p.ur.regs[i]
	c.Write(bytes.Repeat([]byte{'x'}, recvCapBytes))
	deadline := time.Now().Add(2 * time.Second)
	for r.rArmed && time.Now().Before(deadline) {
		_, data, _ := recvEvents(t, p, fd)
		got += len(data)
	}
	if r.rArmed || got < recvCapBytes || got >= recvCapBytes+recvBufBytes {
		t.Fatalf("recv armed %v after %d bytes since it was armed, want it ended within [%d, %d)",
			r.rArmed, got, recvCapBytes, recvCapBytes+recvBufBytes)
	}
	const next = 100
	c.Write(bytes.Repeat([]byte{'y'}, next))
	time.Sleep(20 * time.Millisecond)
	if n, _ := p.Wait(false); n != 0 {
		t.Fatalf("%d events after the cap, with no recv armed", n)
	}
	inq, _ := unix.IoctlGetInt(fd, unix.SIOCINQ)
	if want := recvCapBytes + 10 + next - got; inq != want {
		t.Fatalf("SIOCINQ %d, want the %d bytes not received left in the socket", inq, want)
	}
	p.RecvOn(fd)
	if _, data, _ := recvEvents(t, p, fd); len(data) != inq {
		t.Fatalf("after recvOn: %d bytes, want %d", len(data), inq)
	}
	c.Close()
	evs, _, res := recvEvents(t, p, fd)
	if len(evs) != 1 || evs[0]&Data == 0 || res[0] != 0 {
		t.Fatalf("end of file: events %#x res %v, want Data with 0 (the multishot still armed)", evs, res)
	}
	p.Del(fd)
	unix.Close(fd)
}

// TestRecvModeSend: a send completes as Sent with its byte count and the
// peer gets the bytes.
func TestRecvModeSend(t *testing.T) {
	p := openRecvPoller(t)
	fd, c := tcpPair(t)
	if err := p.Add(fd, connEvents, 3); err != nil {
		t.Fatal(err)
	}
	a, b := []byte("abc"), []byte("defg")
	iovs, err := p.SendIovecs(2)
	if err != nil {
		t.Fatal(err)
	}
	iovs[0].Base, iovs[1].Base = &a[0], &b[0]
	iovs[0].SetLen(len(a))
	iovs[1].SetLen(len(b))
	if err := p.Send(fd, iovs); err != nil {
		t.Fatal(err)
	}
	evs, _, res := recvEvents(t, p, fd)
	if len(evs) != 1 || evs[0]&Sent == 0 || res[0] != 7 {
		t.Fatalf("events %#x res %v, want one Sent of 7", evs, res)
	}
	c.SetReadDeadline(time.Now().Add(time.Second))
	got := make([]byte, 7)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "abcdefg" {
		t.Fatalf("peer read %q, %v", got, err)
	}
	p.Del(fd)
	unix.Close(fd)
}

// TestRecvModeScriptedCompletions feeds complete() the completions around a
// recv-mode connection's life: a send completing after its connection was
// closed releases the orphaned out-queue (never earlier) and makes no event;
// the record is freed only when its recv has ended too; a recv refused for
// an empty ring (-ENOBUFS) is armed again without an event; completions for
// a freed record are dropped.
func TestRecvModeScriptedCompletions(t *testing.T) {
	p := openRecvPoller(t)
	u := p.ur
	fd, _ := tcpPair(t)
	if err := p.Add(fd, connEvents, 4); err != nil {
		t.Fatal(err)
	}
	i, _ := u.lookup(fd)
	p.Wait(false) // arms the recv
	r := &u.regs[i]
	if !r.rArmed {
		t.Fatal("recv not armed after add and a wait")
	}
	recv := u.recvData(i)
	if out, _ := u.complete(uring.CQE{UserData: recv, Res: -int32(unix.ENOBUFS)}, 0); out != 0 || !r.rArmed || r.rOff {
		t.Fatalf("-ENOBUFS: %d events, armed %v off %v; want none, armed again", out, r.rArmed, r.rOff)
	}
	// a send in flight, then the connection closes under it
	released := false
	var q ringq.Ring[ioflush.Segment]
	q.Init(4)
	q.Push(ioflush.Segment{Buf: []byte("pending"), Free: func() { released = true }})
	buf := q.At(0).Buf
	iovs, _ := p.SendIovecs(1)
	iovs[0].Base = &buf[0]
	iovs[0].SetLen(len(buf))
	if err := p.Send(fd, iovs); err != nil {
		t.Fatal(err)
	}
	send := uring.Pack(kindSend, i, r.gen)
	if !p.OrphanSend(fd, &q) {
		t.Fatal("orphanSend refused a connection with a send in flight")
	}
	p.Del(fd)
	if released {
		t.Fatal("out-queue released while its send may still read it")
	}
	if out, _ := u.complete(uring.CQE{UserData: send, Res: -int32(unix.ECANCELED)}, 0); out != 0 || !released || r.sArmed {
		t.Fatalf("orphaned send's completion: %d events, released %v, armed %v", out, released, r.sArmed)
	}
	if len(u.free) > 0 && u.free[len(u.free)-1] == i {
		t.Fatal("record freed while its recv is still armed")
	}
	if out, _ := u.complete(uring.CQE{UserData: recv, Res: -int32(unix.ECANCELED)}, 0); out != 0 {
		t.Fatalf("recv's last completion after del: %d events", out)
	}
	if !(len(u.free) > 0 && u.free[len(u.free)-1] == i) {
		t.Fatalf("record %d not freed after its last completion (%v)", i, u.free)
	}
	if out, _ := u.complete(uring.CQE{UserData: send, Res: 7}, 0); out != 0 {
		t.Fatalf("stray send completion for a freed record: %d events", out)
	}
	unix.Close(fd)
}

// FuzzRecvModeCompletions drives a recv-mode poller with a sequence of
// loop calls (add, del, recvOn, recvOff, a send, a close under a send) and
// completions the kernel could post (or a buggy one: any kind, a stale
// generation, any result, with or without More, for any record), and
// checks the bookkeeping: no panic; an event only for a live registration;
// a closed connection's out-queue released exactly once and only after its
// send's completion; the free list without duplicates and only with
// records that have nothing in flight.
func FuzzRecvModeCompletions(f *testing.F) {
	f.Add([]byte{0, 0, 4, 0, 6, 0, 4, 0, 0, 5, 0, 6, 4, 0, 2, 0})
	f.Add([]byte{0, 1, 6, 2, 1, 1, 1, 6, 0, 2, 3, 1, 6, 0, 3, 0, 2, 1})
	f.Add([]byte{0, 2, 4, 2, 5, 2, 6, 4, 2, 4, 6, 0, 2, 5, 6, 4, 2, 4})
	if err := CheckURing(); err != nil {
		f.Skip("io_uring backend unavailable")
	}
	results := []int32{1, 7, 0, -int32(unix.ENOBUFS), -int32(unix.ECANCELED), -int32(unix.EAGAIN),
		-int32(unix.ECONNRESET), -int32(unix.EALREADY), -int32(unix.ENOENT)}
	kinds := []uint8{kindRecv, kindRecvCtl, kindSend, kindSendCtl, kindPoll, kindPollCtl}
	f.Fuzz(func(t *testing.T, ops []byte) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		p := new(Dispatcher)
		p.UseURing(false)
		if err := p.Open(16); err != nil {
			t.Skip(err)
		}
		defer p.Close()
		if err := p.Attach(); err != nil || !p.RecvMode() {
			t.Skip("recv mode unavailable")
		}
		u := p.ur
		const conns = 3
		var fds [conns]int
		for k := range fds {
			sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(sp[0])
			defer unix.Close(sp[1])
			fds[k] = sp[0]
		}
		var live [conns]bool
		released := make(map[*int]int)
		var pending [conns]*int     // the orphaned queue's release count, per fd, while its send may run
		var pendingAt [conns]uint32 // and its record
		payload := []byte("x")
		for len(ops) >= 2 {
			op, k := ops[0]%7, int(ops[1])%conns
			ops = ops[2:]
			fd := fds[k]
			i, registered := u.lookup(fd)
			switch op {
			case 0:
				if !live[k] {
					if err := p.Add(fd, connEvents, uint32(k+1)); err != nil {
						t.Fatal(err)
					}
					live[k] = true
				}
			case 1, 5:
				if !live[k] {
					continue
				}
				if op == 5 && u.regs[i].sArmed {
					var q ringq.Ring[ioflush.Segment]
					q.Init(2)
					n := new(int)
					q.Push(ioflush.Segment{Buf: payload, Free: func() { *n++ }})
					released[n] = 0
					if p.OrphanSend(fd, &q) {
						pending[k], pendingAt[k] = n, i
					}
				}
				p.Del(fd)
				live[k] = false
			case 2:
				p.RecvOn(fd)
			case 3:
				p.RecvOff(fd)
			case 4:
				if live[k] && !u.regs[i].sArmed {
					iovs, err := p.SendIovecs(1)
					if err != nil {
						t.Fatal(err)
					}
					iovs[0].Base = &payload[0]
					iovs[0].SetLen(1)
					if err := p.Send(fd, iovs); err != nil {
						t.Fatal(err)
					}
				}
			case 6:
				if len(ops) < 2 || !registered && len(u.regs) == 0 {
					continue
				}
				idx := i
				if !registered || ops[0]&0x80 != 0 {
					idx = uint32(int(ops[0]) % len(u.regs))
				}
				gen := u.regs[idx].gen
				if ops[1]&0x80 != 0 {
					gen = (gen - 1) & uring.GenMask
				}
				c := uring.CQE{UserData: uring.Pack(kinds[int(ops[0]>>3)%len(kinds)], idx, gen),
					Res: results[int(ops[1])%len(results)]}
				if ops[1]&0x40 != 0 {
					c.Flags = 2 // IORING_CQE_F_MORE
				}
				ops = ops[2:]
				wasSending := u.regs[idx].sArmed
				out, _ := u.complete(c, 0)
				for e := 0; e < out; e++ {
					efd, _, _ := p.Event(e)
					j, ok := u.lookup(efd)
					if !ok || j != idx || !u.regs[j].live {
						t.Fatalf("event for fd %d, not a live registration (record %d)", efd, idx)
					}
				}
				for kk, n := range pending {
					if n != nil && pendingAt[kk] == idx && wasSending && !u.regs[idx].sArmed {
						if *n != 1 {
							t.Fatalf("fd %d: out-queue released %d times at its send's completion, want once", fds[kk], *n)
						}
						pending[kk] = nil
					}
				}
			}
			for kk, n := range pending {
				if n == nil {
					continue
				}
				if *n != 0 {
					t.Fatalf("fd %d: out-queue released while its send may still read it", fds[kk])
				}
			}
			for n := range released {
				if *n > 1 {
					t.Fatalf("an orphaned out-queue released %d times", *n)
				}
			}
			seen := make(map[uint32]bool)
			for _, j := range u.free {
				r := &u.regs[j]
				if seen[j] || r.armed || r.rArmed || r.sArmed {
					t.Fatalf("free list %v: record %d twice or with something in flight (%+v)", u.free, j, *r)
				}
				seen[j] = true
			}
		}
	})
}
