//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package server

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
func openRecvPoller(t *testing.T) *poller {
	t.Helper()
	requireURing(t)
	p := new(poller)
	p.use(BackendIOURing)
	runtime.LockOSThread()
	if err := p.open(16); err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	t.Cleanup(func() { p.close(); runtime.UnlockOSThread() })
	if err := p.attach(); err != nil {
		t.Fatal(err)
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

// TestRecvModeReceiveAndStop: bytes arrive with a recv completion (evData)
// in a ring buffer, with no read(2); the next recv is armed only by recvOn,
// so bytes sent meanwhile stay in the socket (SIOCINQ) until then; end of
// file is a completion with result 0.
func TestRecvModeReceiveAndStop(t *testing.T) {
	p := openRecvPoller(t)
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
