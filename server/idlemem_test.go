package server

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestIdleMemory measures resident memory per idle connection, for the
// engine and for a goroutine-per-connection net server, plaintext and TLS
// 1.3 (the net server then through crypto/tls's listener), each in a
// child process. It is a measurement, not a check, so it runs only when asked:
//
//	SLUICE_IDLE_CONNS=10000 go test -run TestIdleMemory -v ./server
//
// (without -race: the race detector's shadow memory would be counted). The
// parent holds the client ends; the Go runtime raises its RLIMIT_NOFILE soft
// limit to the hard limit at start-up, in the child too.
func TestIdleMemory(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SLUICE_IDLE_CONNS"))
	if n <= 0 {
		t.Skip("set SLUICE_IDLE_CONNS to measure")
	}
	for _, role := range []string{"serve", "netserve", "tlsserve", "tlsnetserve"} {
		t.Run(role, func(t *testing.T) {
			ch := startChild(t, role)
			base := ch.report(t, "gc")
			conns := make([]net.Conn, 0, n)
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			for i := 0; i < n; i++ {
				c, err := net.DialTimeout("tcp", ch.addr, 5*time.Second)
				if err != nil {
					t.Fatalf("dial %d: %v", i, err)
				}
				if role == "tlsserve" || role == "tlsnetserve" {
					tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true})
					if err := tc.Handshake(); err != nil {
						t.Fatalf("handshake %d: %v", i, err)
					}
					c = tc
				}
				conns = append(conns, c)
				if (i+1)%1000 == 0 || i == n-1 { // stay within the listen backlog
					var got int64
					waitUntil(t, 30*time.Second, fmt.Sprintf("accepted %d", i+1), func() bool {
						got = ch.report(t, "").Stats.ConnsOpen
						return got == int64(i+1)
					})
				}
			}
			fresh := ch.report(t, "gc")
			buf := make([]byte, 8)
			for _, c := range conns { // one echo each, then idle again
				c.SetDeadline(time.Now().Add(60 * time.Second))
				c.Write([]byte("12345678"))
			}
			for i, c := range conns {
				if _, err := c.Read(buf); err != nil {
					t.Fatalf("echo %d: %v", i, err)
				}
			}
			time.Sleep(200 * time.Millisecond)
			after := ch.report(t, "gc")
			per := func(r childReport) float64 { return float64(r.RSSBytes-base.RSSBytes) / float64(n) / 1024 }
			heap := float64(after.HeapInuse-base.HeapInuse) / float64(n) / 1024
			t.Logf("%s: %d idle connections: RSS base %.1f MiB, fresh %.1f MiB (%.2f KiB/conn), after one echo %.1f MiB (%.2f KiB/conn, heap in use %.2f KiB/conn), goroutines %d",
				role, n, float64(base.RSSBytes)/(1<<20), float64(fresh.RSSBytes)/(1<<20), per(fresh),
				float64(after.RSSBytes)/(1<<20), per(after), heap, after.Goroutines)
		})
	}
}

// TestTLSConnHeap measures what crypto/tls itself keeps per server
// connection after a TLS 1.3 handshake (heap in use, over net.Pipe, the
// client ends closed), the part of TestIdleMemory's TLS figures that is
// neither the engine's nor a goroutine's. A measurement, run when asked:
//
//	SLUICE_IDLE_CONNS=10000 go test -run TestTLSConnHeap -v ./server
func TestTLSConnHeap(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SLUICE_IDLE_CONNS"))
	if n <= 0 {
		t.Skip("set SLUICE_IDLE_CONNS to measure")
	}
	ca := tlsCA(t)
	srv := ca.server()
	cli := &tls.Config{InsecureSkipVerify: true}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	before := heap()
	conns := make([]*tls.Conn, 0, n)
	for i := 0; i < n; i++ {
		a, b := net.Pipe()
		s, c := tls.Server(a, srv), tls.Client(b, cli)
		done := make(chan error, 1)
		go func() { done <- c.Handshake() }()
		if err := s.Handshake(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		b.Close() // the client end goes; the server's state stays
		conns = append(conns, s)
	}
	after := heap()
	t.Logf("crypto/tls keeps %.2f KiB of heap per server connection after a TLS 1.3 handshake (%d connections, net.Pipe included)",
		float64(after-before)/float64(n)/1024, len(conns))
	runtime.KeepAlive(conns)
}
