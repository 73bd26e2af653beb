package ioflush_test

import (
	"testing"
	"time"
	"unsafe"

	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/ringq"
	"github.com/valyala/bytebufferpool"
	"golang.org/x/sys/unix"
)

// step scripts one writev call of fakeWriter.
type step struct {
	accept int        // bytes to accept; < 0 means all offered
	errno  unix.Errno // if non-zero, fail with it
	over   bool       // report one byte more than offered
}

var (
	all    = step{accept: -1}
	eagain = step{errno: unix.EAGAIN}
	eintr  = step{errno: unix.EINTR}
	epipe  = step{errno: unix.EPIPE}
)

// fakeWriter is a scripted writev: it plays steps in order (then accepts
// everything), copies accepted bytes into sink and records what it was given.
type fakeWriter struct {
	t       testing.TB
	steps   []step
	calls   int
	iovs    []int // iovec count per call
	offered []int // bytes offered per call
	sink    []byte
	record  bool // append to iovs/offered (off in benchmarks)
}

func (fw *fakeWriter) writev(fd int, iov []unix.Iovec) (int, unix.Errno) {
	total := 0
	for i, v := range iov {
		if v.Base == nil || v.Len == 0 {
			fw.t.Errorf("writev call %d: iovec %d is empty", fw.calls, i)
		}
		total += int(v.Len)
	}
	if len(iov) > ioflush.MaxIovecs {
		fw.t.Errorf("writev call %d: %d iovecs, more than MaxIovecs", fw.calls, len(iov))
	}
	fw.calls++
	if fw.record {
		fw.iovs = append(fw.iovs, len(iov))
		fw.offered = append(fw.offered, total)
	}
	st := all
	if len(fw.steps) > 0 {
		st = fw.steps[0]
		fw.steps = fw.steps[1:]
	}
	switch {
	case st.errno != 0:
		return 0, st.errno
	case st.over:
		return total + 1, 0
	}
	n := st.accept
	if n < 0 || n > total {
		n = total
	}
	left := n
	for _, v := range iov {
		if left == 0 {
			break
		}
		k := min(left, int(v.Len))
		if fw.sink != nil || fw.record {
			fw.sink = append(fw.sink, unsafe.Slice(v.Base, int(v.Len))[:k]...)
		}
		left -= k
	}
	return n, 0
}

// pattern returns n bytes of a position-dependent pattern starting at off, so
// reordered or duplicated bytes are caught.
func pattern(off, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		k := off + i
		b[i] = byte(k ^ k>>8 ^ k>>16)
	}
	return b
}

// queue builds a ring holding segments of the given sizes with pattern data;
// rel counts releases per segment. It returns the concatenated data.
func queue(sizes []int, rel []int) (*ringq.Ring[ioflush.Segment], []byte) {
	q := ringq.New[ioflush.Segment](max(len(sizes), 1))
	var want []byte
	for i, n := range sizes {
		b := pattern(len(want), n)
		want = append(want, b...)
		q.Push(ioflush.Segment{Buf: b, Free: func() { rel[i]++ }})
	}
	return q, want
}

// nonblockingPair returns a connected stream pair: w (nonblocking, small send
// buffer) and r (nonblocking). kind is "unix" or "tcp".
func nonblockingPair(t testing.TB, kind string, sndbufBytes int) (w, r int) {
	t.Helper()
	switch kind {
	case "unix":
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		w, r = fds[0], fds[1]
	case "tcp":
		w, r = tcpPair(t, sndbufBytes)
	default:
		t.Fatalf("unknown pair kind %q", kind)
	}
	t.Cleanup(func() { unix.Close(w); unix.Close(r) })
	if sndbufBytes > 0 {
		if err := unix.SetsockoptInt(w, unix.SOL_SOCKET, unix.SO_SNDBUF, sndbufBytes); err != nil {
			t.Fatal(err)
		}
	}
	return w, r
}

// tcpPair connects two loopback TCP sockets (port 0) with small buffers, set
// before connecting so the window is small from the start.
func tcpPair(t testing.TB, bufBytes int) (w, r int) {
	t.Helper()
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ln)
	if bufBytes > 0 {
		_ = unix.SetsockoptInt(ln, unix.SOL_SOCKET, unix.SO_RCVBUF, bufBytes)
	}
	if err := unix.Bind(ln, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(ln, 1); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(ln)
	if err != nil {
		t.Fatal(err)
	}
	w, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if bufBytes > 0 {
		_ = unix.SetsockoptInt(w, unix.SOL_SOCKET, unix.SO_SNDBUF, bufBytes)
	}
	if err := unix.Connect(w, sa); err != nil { // blocking connect on loopback
		unix.Close(w)
		t.Fatal(err)
	}
	r, _, err = unix.Accept4(ln, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
	if err != nil {
		unix.Close(w)
		t.Fatal(err)
	}
	if err := unix.SetNonblock(w, true); err != nil {
		t.Fatal(err)
	}
	return w, r
}

// waitFD polls fd for events for at most timeout and reports whether it is
// ready.
func waitFD(t testing.TB, fd int, events int16, timeout time.Duration) bool {
	t.Helper()
	for {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: events}}
		n, err := unix.Poll(pfd, int(timeout/time.Millisecond))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
}

// drainAll reads from the nonblocking fd r until EAGAIN and appends to dst.
func drainAll(t testing.TB, r int, buf, dst []byte) []byte {
	t.Helper()
	for {
		n, err := unix.Read(r, buf)
		if err == unix.EAGAIN {
			return dst
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return dst
		}
		dst = append(dst, buf[:n]...)
	}
}

func newPooled(s string) *bytebufferpool.ByteBuffer {
	p := bytebufferpool.Get()
	p.B = append(p.B[:0], s...)
	return p
}
