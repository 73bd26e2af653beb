// Package tlstest is a TLS echo server for the tests of the project's
// clients and load generators (bench, internal/loadcmd): a listener on
// loopback that echoes each connection's bytes and stops with the test.
//
// It owns nothing of TLS itself (the caller's tls.Config decides the
// certificate and versions) and refuses to be anything but a test
// fixture: it calls t.Fatal.
package tlstest

import (
	"crypto/tls"
	"net"
	"sync"
	"testing"
)

// Echo serves cfg on a loopback port and writes back what each connection
// sends, read by read into a buffer of bufSize bytes; tamper, when not nil,
// may change the i-th read's bytes (counted per connection from 0) before
// they are written back. When the test ends the listener and every
// connection are closed and their goroutines waited for. It returns the
// address.
func Echo(t testing.TB, cfg *tls.Config, bufSize int, tamper func(i int, b []byte)) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Go(func() {
				defer func() {
					mu.Lock()
					delete(conns, c)
					mu.Unlock()
					_ = c.Close()
				}()
				buf := make([]byte, bufSize)
				for i := 0; ; i++ {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					if tamper != nil {
						tamper(i, buf[:n])
					}
					if _, err := c.Write(buf[:n]); err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}
