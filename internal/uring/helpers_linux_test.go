//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package uring_test

import (
	"bytes"
	"errors"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/uring"
)

// testDeadline bounds every wait in these tests.
const testDeadline = 10 * time.Second

// requireUring skips the test when io_uring is unavailable or lacks what the
// package's users need, and returns the detected features.
func requireUring(t testing.TB) uring.Feature {
	t.Helper()
	f, err := uring.Detect()
	if errors.Is(err, uring.ErrUnsupported) {
		t.Skipf("io_uring unavailable here (kernel refuses it or lacks features): %v", err)
	}
	if err != nil {
		t.Fatalf("Detect: %v", err)
	}
	return f
}

// newRing locks the test goroutine to its thread (the ring may be
// SINGLE_ISSUER) and sets up a ring with the detected setup flags; both are
// undone at cleanup.
func newRing(t testing.TB, c uring.Config) *uring.Ring {
	t.Helper()
	f := requireUring(t)
	if c.Setup == 0 {
		c.Setup = f.Setup()
	}
	runtime.LockOSThread()
	r, err := uring.New(c)
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("New(%+v): %v", c, err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		runtime.UnlockOSThread()
	})
	return r
}

// listen returns a listening TCP socket on 127.0.0.1 and its address.
func listen(t testing.TB) (int, string) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socket: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		t.Fatalf("listen: %v", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatalf("getsockname: %v", err)
	}
	return fd, (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sa.(*unix.SockaddrInet4).Port}).String()
}

// dialRaw connects a blocking client socket to addr, for tests whose client
// runs in the loop's goroutine and must not allocate.
func dialRaw(t testing.TB, addr string) int {
	t.Helper()
	a, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socket: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	sa := &unix.SockaddrInet4{Port: a.Port}
	copy(sa.Addr[:], a.IP.To4())
	if err := unix.Connect(fd, sa); err != nil {
		t.Fatalf("connect: %v", err)
	}
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	return fd
}

// acceptPair returns both ends of a loopback TCP connection: the server end
// as a raw descriptor and the client end as a net.Conn.
func acceptPair(t testing.TB) (int, net.Conn) {
	t.Helper()
	lfd, addr := listen(t)
	c, err := net.DialTimeout("tcp", addr, testDeadline)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	fd, _, err := unix.Accept4(lfd, unix.SOCK_CLOEXEC)
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd, c
}

// pattern returns n bytes counting up from 0 (wrapping), so that a
// reordered or dropped byte shows.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// waitCQEs submits and collects completions until done reports true for the
// completions seen so far, failing the test after testDeadline.
func waitCQEs(t testing.TB, r *uring.Ring, done func([]uring.CQE) bool) []uring.CQE {
	t.Helper()
	var got []uring.CQE
	var buf [32]uring.CQE
	end := time.Now().Add(testDeadline)
	for !done(got) {
		if time.Now().After(end) {
			t.Fatalf("no expected completion within %v; got %+v", testDeadline, got)
		}
		if _, err := r.SubmitAndWait(1, 50*time.Millisecond); err != nil {
			t.Fatalf("SubmitAndWait: %v", err)
		}
		n := r.PeekBatch(buf[:])
		got = append(got, buf[:n]...)
		r.Advance(n)
	}
	return got
}

// countOf returns a done function for waitCQEs: at least n completions
// tagged u.
func countOf(u uring.UserData, n int) func([]uring.CQE) bool {
	return func(cs []uring.CQE) bool {
		k := 0
		for _, c := range cs {
			if c.UserData == u {
				k++
			}
		}
		return k >= n
	}
}

func find(cs []uring.CQE, u uring.UserData) (uring.CQE, bool) {
	for _, c := range cs {
		if c.UserData == u {
			return c, true
		}
	}
	return uring.CQE{}, false
}

// openFDs counts the process's open descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("reading /proc/self/fd: %v", err)
	}
	return len(es)
}

// mappings counts the process's memory mappings.
func mappings(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatalf("reading /proc/self/maps: %v", err)
	}
	return bytes.Count(b, []byte("\n"))
}

// lockThread pins the test goroutine to its OS thread until cleanup.
func lockThread(t testing.TB) {
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
}
