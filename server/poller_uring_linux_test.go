//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package server

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// requireURing skips when the kernel refuses the io_uring backend.
func requireURing(t *testing.T) {
	t.Helper()
	if _, err := uringUsable(); err != nil {
		t.Skipf("io_uring backend unavailable: %v", err)
	}
}

// tcpPair returns a nonblocking server-side fd and its client.
func tcpPair(t *testing.T) (int, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.(*net.TCPConn).File()
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	unix.SetNonblock(fd, true)
	return fd, c
}

// TestURingDelCloseSendsFIN: a multishot poll holds a reference to its file;
// after del and close the next waits (the removal's submission, then its
// completion) must let it go, so the peer sees end of file.
func TestURingDelCloseSendsFIN(t *testing.T) {
	requireURing(t)
	p := openPollerOf(t, BackendIOURing)
	fd, c := tcpPair(t)
	if err := p.add(fd, connEvents, 3); err != nil {
		t.Fatal(err)
	}
	p.wait(false)
	if err := p.del(fd); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	for k := 0; k < 3; k++ { // the removal is submitted, then its completion releases the file
		p.wait(false)
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || !isEOF(err) {
		t.Fatalf("peer read after del+close: %v, want EOF", err)
	}
}

func isEOF(err error) bool { return err != nil && err.Error() == "EOF" }
