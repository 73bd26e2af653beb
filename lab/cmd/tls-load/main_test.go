package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"io"
	"net"
	"os"
	"testing"

	"github.com/sluicenet/sluice/tlsutil"
)

// tlsServer serves TLS on a loopback port with a self-signed certificate,
// each connection by serve on a goroutine of its own (closed after it), until
// the test ends; it returns the listener and the pool that verifies it.
func tlsServer(t *testing.T, serve func(net.Conn)) (net.Listener, *x509.CertPool) {
	t.Helper()
	cert, pool, err := tlsutil.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln, pool
}

// TestCaptureHello: the replayed bytes are one TLS handshake record
// holding a ClientHello.
func TestCaptureHello(t *testing.T) {
	h, err := captureHello()
	if err != nil {
		t.Fatal(err)
	}
	if len(h) < 9 || h[0] != 0x16 || h[1] != 0x03 || int(binary.BigEndian.Uint16(h[3:5])) != len(h)-5 || h[5] != 0x01 {
		t.Fatalf("not one ClientHello record: % x", h[:min(len(h), 9)])
	}
}

// TestReplayedHelloAnswered: a TLS server answers the replayed
// ClientHello with its first flight, as the flood counts it.
func TestReplayedHelloAnswered(t *testing.T) {
	ln, _ := tlsServer(t, func(c net.Conn) {
		io.Copy(io.Discard, c) // the handshake runs inside the first Read
	})
	h, err := captureHello()
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(h)
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(c, hdr); err != nil || hdr[0] != 0x16 {
		t.Fatalf("server's first record % x, %v: want a handshake record", hdr, err)
	}
}

// TestModes: against a TLS echo server, the echo counts every frame,
// handshakes resume from their tickets, and cpuTime reads this process.
func TestModes(t *testing.T) {
	ln, pool := tlsServer(t, func(c net.Conn) { io.Copy(c, c) })
	frame := binary.BigEndian.AppendUint32(nil, 64)
	frame = append(frame, make([]byte, 64)...)
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", ClientSessionCache: tls.NewLRUClientSessionCache(1)}
	for i := range 2 {
		did, err := handshakeOnce(ln.Addr().String(), cfg, frame)
		if err != nil || did != (i == 1) {
			t.Fatalf("handshake %d: resumed %v, %v", i, did, err)
		}
	}
	if d, err := cpuTime(os.Getpid()); err != nil || d <= 0 {
		t.Fatalf("cpuTime: %v, %v", d, err)
	}
}
