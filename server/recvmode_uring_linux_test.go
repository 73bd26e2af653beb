//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package server

import (
	"bytes"
	"context"
	"io"
	"net"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/uring"
	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/ringq"
)

// openRecvPoller opens an io_uring poller in recv mode (connections read
// and written by completion), on the test goroutine's locked thread.
func openRecvPoller(t *testing.T) *poller {
	t.Helper()
	return openRecvPollerSingle(t, false)
}

// openRecvPollerSingle is openRecvPoller, with single recvs instead of the
// capped multishot when single is set (the fallback for kernels without
// the cap).
func openRecvPollerSingle(t *testing.T, single bool) *poller {
	t.Helper()
	requireURing(t)
	p := openPollerWith(t, BackendIOURing, func(u *uringPoller) { u.singleRecv = single })
	if single != (p.ur.recvCap == 0) {
		t.Fatalf("recvCap %d with single recvs %v", p.ur.recvCap, single)
	}
	if !p.recvMode() {
		t.Skip("no provided buffer ring: the backend stays on readiness")
	}
	return p
}

// recvEvents waits up to a second for events of fd and returns the first
// wait's that had any, with the bytes of its recv completions joined.
func recvEvents(t *testing.T, p *poller, fd int) (evs []uint32, data []byte, res []int32) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		n, err := p.wait(false)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			if f, _, ev := p.event(i); f == fd {
				evs = append(evs, ev)
				if ev&(evData|evSent) != 0 {
					b, r := p.received(i)
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
// without the multishot cap): bytes arrive with a recv completion (evData)
// in a ring buffer, with no read(2); the next recv is armed only by recvOn,
// so bytes sent meanwhile stay in the socket (SIOCINQ) until then; end of
// file is a completion with result 0.
func TestRecvModeReceiveAndStop(t *testing.T) {
	p := openRecvPollerSingle(t, true)
	fd, c := tcpPair(t)
	if err := p.add(fd, connEvents, 3); err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("hello"))
	evs, data, res := recvEvents(t, p, fd)
	if len(evs) != 1 || evs[0]&evData == 0 || string(data) != "hello" || res[0] != 5 {
		t.Fatalf("events %#x data %q res %v, want one evData with hello", evs, data, res)
	}
	c.Write([]byte("world")) // no recv armed: stays in the kernel
	time.Sleep(20 * time.Millisecond)
	if n, _ := p.wait(false); n != 0 {
		t.Fatalf("%d events with no recv armed", n)
	}
	if inq, _ := unix.IoctlGetInt(fd, unix.SIOCINQ); inq != 5 {
		t.Fatalf("SIOCINQ %d, want the 5 bytes left in the socket", inq)
	}
	p.recvOn(fd)
	if _, data, _ = recvEvents(t, p, fd); string(data) != "world" {
		t.Fatalf("after recvOn: %q", data)
	}
	c.Close()
	p.recvOn(fd)
	evs, _, res = recvEvents(t, p, fd)
	if len(evs) != 1 || evs[0]&evData == 0 || res[0] != 0 {
		t.Fatalf("end of file: events %#x res %v, want evData with 0", evs, res)
	}
	p.del(fd)
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
	if err := p.add(fd, connEvents, 3); err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, m := range []string{"hello", "world"} {
		c.Write([]byte(m))
		evs, data, _ := recvEvents(t, p, fd)
		if len(evs) != 1 || evs[0]&evData == 0 || string(data) != m {
			t.Fatalf("events %#x data %q, want one evData with %q (no recvOn between)", evs, data, m)
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
	if n, _ := p.wait(false); n != 0 {
		t.Fatalf("%d events after the cap, with no recv armed", n)
	}
	inq, _ := unix.IoctlGetInt(fd, unix.SIOCINQ)
	if want := recvCapBytes + 10 + next - got; inq != want {
		t.Fatalf("SIOCINQ %d, want the %d bytes not received left in the socket", inq, want)
	}
	p.recvOn(fd)
	if _, data, _ := recvEvents(t, p, fd); len(data) != inq {
		t.Fatalf("after recvOn: %d bytes, want %d", len(data), inq)
	}
	c.Close()
	evs, _, res := recvEvents(t, p, fd)
	if len(evs) != 1 || evs[0]&evData == 0 || res[0] != 0 {
		t.Fatalf("end of file: events %#x res %v, want evData with 0 (the multishot still armed)", evs, res)
	}
	p.del(fd)
	unix.Close(fd)
}

// TestRecvModeSend: a send completes as evSent with its byte count and the
// peer gets the bytes.
func TestRecvModeSend(t *testing.T) {
	p := openRecvPoller(t)
	fd, c := tcpPair(t)
	if err := p.add(fd, connEvents, 3); err != nil {
		t.Fatal(err)
	}
	a, b := []byte("abc"), []byte("defg")
	iovs, err := p.sendIovecs(2)
	if err != nil {
		t.Fatal(err)
	}
	iovs[0].Base, iovs[1].Base = &a[0], &b[0]
	iovs[0].SetLen(len(a))
	iovs[1].SetLen(len(b))
	if err := p.send(fd, iovs); err != nil {
		t.Fatal(err)
	}
	evs, _, res := recvEvents(t, p, fd)
	if len(evs) != 1 || evs[0]&evSent == 0 || res[0] != 7 {
		t.Fatalf("events %#x res %v, want one evSent of 7", evs, res)
	}
	c.SetReadDeadline(time.Now().Add(time.Second))
	got := make([]byte, 7)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "abcdefg" {
		t.Fatalf("peer read %q, %v", got, err)
	}
	p.del(fd)
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
	if err := p.add(fd, connEvents, 4); err != nil {
		t.Fatal(err)
	}
	i, _ := u.lookup(fd)
	p.wait(false) // arms the recv
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
	iovs, _ := p.sendIovecs(1)
	iovs[0].Base = &buf[0]
	iovs[0].SetLen(len(buf))
	if err := p.send(fd, iovs); err != nil {
		t.Fatal(err)
	}
	send := uring.Pack(kindSend, i, r.gen)
	if !p.orphanSend(fd, &q) {
		t.Fatal("orphanSend refused a connection with a send in flight")
	}
	p.del(fd)
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

// TestRecvModeEngineEcho: an engine on the io_uring backend in recv mode
// echoes a pipelined burst larger than one ring buffer, byte for byte.
func TestRecvModeEngineEcho(t *testing.T) {
	requireURing(t)
	e := start(t, Config{Loops: 1, Codec: codecByName(t, "length", 0), Backend: BackendIOURing}, echoHandlerAlloc)
	if e.Backend() != BackendIOURing {
		t.Skip("io_uring backend unavailable")
	}
	c := dial(t, e)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	out := pipelined(200, 100) // 20.8 KB: several buffers
	go c.Write(out)
	in := make([]byte, len(out))
	if _, err := io.ReadFull(c, in); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in, out) {
		t.Fatal("echo differs")
	}
	if s := e.Stats(); s.Reads == 0 || s.Flushes == 0 {
		t.Fatalf("stats %+v", s)
	}
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
	if _, err := uringUsable(); err != nil {
		f.Skip("io_uring backend unavailable")
	}
	results := []int32{1, 7, 0, -int32(unix.ENOBUFS), -int32(unix.ECANCELED), -int32(unix.EAGAIN),
		-int32(unix.ECONNRESET), -int32(unix.EALREADY), -int32(unix.ENOENT)}
	kinds := []uint8{kindRecv, kindRecvCtl, kindSend, kindSendCtl, kindPoll, kindPollCtl}
	f.Fuzz(func(t *testing.T, ops []byte) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		p := new(poller)
		p.use(BackendIOURing)
		if err := p.open(16); err != nil {
			t.Skip(err)
		}
		defer p.close()
		if err := p.attach(); err != nil || !p.recvMode() {
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
					if err := p.add(fd, connEvents, uint32(k+1)); err != nil {
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
					if p.orphanSend(fd, &q) {
						pending[k], pendingAt[k] = n, i
					}
				}
				p.del(fd)
				live[k] = false
			case 2:
				p.recvOn(fd)
			case 3:
				p.recvOff(fd)
			case 4:
				if live[k] && !u.regs[i].sArmed {
					iovs, err := p.sendIovecs(1)
					if err != nil {
						t.Fatal(err)
					}
					iovs[0].Base = &payload[0]
					iovs[0].SetLen(1)
					if err := p.send(fd, iovs); err != nil {
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
					efd, _, _ := p.event(e)
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

// TestRecvModeEarlySubmit: with handlers that take 300 µs per frame, a
// turn's replies are submitted before the turn ends (Stats.EarlySubmits),
// once the loop has seen a turn of such frames, and every reply arrives.
func TestRecvModeEarlySubmit(t *testing.T) {
	requireURing(t)
	h := HandlerFuncs{Frame: func(c *Conn, frame []byte) Action {
		busyFor(300 * time.Microsecond)
		if err := c.WriteFrame(frame); err != nil {
			t.Error(err)
		}
		return None
	}}
	e := start(t, Config{Loops: 1, Codec: codecByName(t, "length", 0), Backend: BackendIOURing}, h)
	if e.Backend() != BackendIOURing {
		t.Skip("io_uring backend unavailable")
	}
	const conns, rounds = 16, 4
	cs := make([]*net.TCPConn, conns)
	for i := range cs {
		cs[i] = dial(t, e)
		cs[i].SetDeadline(time.Now().Add(10 * time.Second))
	}
	frame := pipelined(1, 32)
	for r := 0; r < rounds; r++ {
		for _, c := range cs {
			if _, err := c.Write(frame); err != nil {
				t.Fatal(err)
			}
		}
		for i, c := range cs {
			in := make([]byte, len(frame))
			if _, err := io.ReadFull(c, in); err != nil || !bytes.Equal(in, frame) {
				t.Fatalf("round %d conn %d: %q, %v", r, i, in, err)
			}
		}
	}
	if s := e.Stats(); s.EarlySubmits == 0 {
		t.Errorf("no early submission in %d rounds of %d frames at 300 µs each (turns %d)", rounds, conns, s.Turns)
	}
}

// spinPool is a PoolHandler that burns d of CPU per frame, echoes it, and
// burns after more (time for the woken loop to queue for the P, as a busy
// loop is under load).
type spinPool struct{ d, after time.Duration }

func (h spinPool) ServeFrame(_ context.Context, c *Conn, frame []byte) Action {
	busyFor(h.d)
	if err := c.WriteFrame(frame); err != nil {
		c.CloseWithError(err)
	}
	busyFor(h.after)
	return None
}

// TestRecvModeYieldSubmits: with one P shared by the loop and a pool
// worker, a reply the loop prepared leaves before the loop yields the P to
// the worker, not with the next wait after the worker's next frame. Two
// connections each send a frame that costs 8 ms (under the scheduler's
// 10 ms preemption): the first reply must reach the client's socket about
// one frame before the second, where a send held to the next wait came
// with it. The client runs on the same single P, so the arrivals are the
// kernel's receive timestamps (SO_TIMESTAMPNS), not when it read them.
func TestRecvModeYieldSubmits(t *testing.T) {
	requireURing(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const work = 8 * time.Millisecond
	e := start(t, Config{Loops: 1, Codec: codecByName(t, "length", 0), Backend: BackendIOURing,
		Pool: PoolConfig{Handler: spinPool{work, time.Millisecond}, Workers: 1}}, HandlerFuncs{})
	if e.Backend() != BackendIOURing {
		t.Skip("io_uring backend unavailable")
	}
	cs := []*net.TCPConn{dial(t, e), dial(t, e)}
	for _, c := range cs {
		rc, err := c.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
		}); err != nil || serr != nil {
			t.Fatal(err, serr)
		}
	}
	frame := pipelined(1, 32)
	var gaps []time.Duration
	for r := 0; r < 3; r++ {
		for _, c := range cs {
			if _, err := c.Write(frame); err != nil {
				t.Fatal(err)
			}
		}
		var at [2]time.Time
		for i, c := range cs {
			at[i] = recvStamped(t, c, frame)
		}
		gaps = append(gaps, at[1].Sub(at[0]).Abs())
	}
	slices.Sort(gaps)
	t.Logf("gaps between the two replies' arrivals: %v", gaps)
	if gaps[1] < work/2 {
		t.Errorf("median gap between the arrivals of the replies of two %v frames served one after the other: %v, want at least %v", work, gaps[1], work/2)
	}
}

// recvStamped reads want from c (one segment) and returns the kernel's
// receive timestamp of it (SO_TIMESTAMPNS on).
func recvStamped(t *testing.T, c *net.TCPConn, want []byte) time.Time {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	buf, oob := make([]byte, 2*len(want)), make([]byte, 256)
	var n, oobn int
	var rerr error
	deadline := time.Now().Add(10 * time.Second)
	for n < len(want) && time.Now().Before(deadline) {
		rerr = nil
		if err := rc.Read(func(fd uintptr) bool {
			var k, ko int
			k, ko, _, _, rerr = unix.Recvmsg(int(fd), buf[n:], oob[oobn:], 0)
			if rerr == unix.EAGAIN {
				return false
			}
			n, oobn = n+max(k, 0), oobn+ko
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if rerr != nil {
			t.Fatal(rerr)
		}
	}
	if n != len(want) || !bytes.Equal(buf[:n], want) {
		t.Fatalf("reply %q, want %q", buf[:n], want)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := *(*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
			return time.Unix(ts.Unix())
		}
	}
	t.Fatal("no receive timestamp")
	return time.Time{}
}
