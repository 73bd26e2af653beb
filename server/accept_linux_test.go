package server

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestSocketBuffers: SocketSendBufferBytes and SocketRecvBufferBytes reach
// the accepted connections (set on the listener before listen(2), so they
// are inherited); zero leaves the kernel's autotuned defaults.
func TestSocketBuffers(t *testing.T) {
	const snd, rcv = 48 << 10, 40 << 10
	get := func(fd int32, opt int) int {
		v, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, opt)
		if err != nil {
			t.Fatalf("getsockopt: %v", err)
		}
		return v
	}
	h := newTestHandler()
	e := start(t, Config{Loops: 1, SocketSendBufferBytes: snd, SocketRecvBufferBytes: rcv}, h)
	dial(t, e)
	c := h.nextOpen(t)
	// Linux reports twice the request (its bookkeeping), capped by
	// net.core.wmem_max/rmem_max; the defaults are far from both values.
	if v := get(c.fd, unix.SO_SNDBUF); v < snd || v > 2*snd {
		t.Errorf("SO_SNDBUF %d, want in [%d, %d]", v, snd, 2*snd)
	}
	if v := get(c.fd, unix.SO_RCVBUF); v < rcv || v > 2*rcv {
		t.Errorf("SO_RCVBUF %d, want in [%d, %d]", v, rcv, 2*rcv)
	}

	h2 := newTestHandler()
	e2 := start(t, Config{Loops: 1}, h2)
	dial(t, e2)
	c2 := h2.nextOpen(t)
	if v := get(c2.fd, unix.SO_SNDBUF); v >= snd && v <= 2*snd {
		t.Logf("default SO_SNDBUF %d happens to fall in the test's range", v)
	}
	if _, err := New(Config{SocketSendBufferBytes: -1}, h); err == nil {
		t.Error("New accepted a negative SocketSendBufferBytes")
	}
}
