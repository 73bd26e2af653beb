package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"testing"
	"time"
)

// FuzzTLSRecords writes fuzzed bytes under the TLS layer of an established
// connection (record headers, partial records, garbage, cut into writes of
// a fuzzed size), then a valid frame, and checks that the connection
// either echoes it or is closed with ErrTLS (or, for a record left
// incomplete, with the peer's close), never anything else, and that the
// engine goes on serving a new connection.
func FuzzTLSRecords(f *testing.F) {
	f.Add(uint8(0), []byte{})
	f.Add(uint8(1), []byte{0x17, 0x03, 0x03, 0x7f, 0xff})
	f.Add(uint8(2), []byte{0x17, 0x03, 0x03, 0x00, 0x04, 1, 2, 3, 4})
	f.Add(uint8(3), []byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28})
	f.Add(uint8(4), []byte{0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00})
	f.Add(uint8(5), []byte{0x14, 0x03, 0x03, 0x00, 0x01, 0x01})
	f.Add(uint8(6), []byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add(uint8(7), []byte{0x17, 0x03})
	ca := tlsCA(f)
	f.Fuzz(func(t *testing.T, cut uint8, raw []byte) {
		if len(raw) > 4096 {
			raw = raw[:4096]
		}
		causes := make(chan error, 4)
		h := HandlerFuncs{Frame: echoHandlerAlloc.Frame, Close: func(_ *Conn, err error) { causes <- err }}
		e, err := New(Config{Addr: "127.0.0.1:0", Loops: 1, Codec: protocolLength(), TLS: ca.server()}, h)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := e.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		}()
		exchange := func(c *tls.Conn, wait time.Duration) error {
			msg := pipelined(1, 20)
			c.SetDeadline(time.Now().Add(wait))
			if _, err := c.Write(msg); err != nil {
				return err
			}
			back := make([]byte, len(msg))
			if _, err := io.ReadFull(c, back); err != nil {
				return err
			}
			if !bytes.Equal(back, msg) {
				t.Fatalf("echo %x, want %x", back, msg)
			}
			return nil
		}
		rawConn := dialAddr(t, e.Addr().String())
		c := tls.Client(rawConn, ca.client())
		if err := exchange(c, 10*time.Second); err != nil {
			t.Fatalf("before the fuzzed bytes: %v", err)
		}
		step := int(cut%7) + 1
		for b := raw; len(b) > 0; b = b[min(step, len(b)):] {
			if _, err := rawConn.Write(b[:min(step, len(b))]); err != nil {
				break
			}
		}
		err = exchange(c, 300*time.Millisecond)
		c.Close()
		if len(raw) == 0 && err != nil {
			t.Fatalf("no fuzzed bytes, and the echo failed: %v", err)
		}
		if err != nil {
			select {
			case cause := <-causes:
				if !errors.Is(cause, ErrTLS) && !errors.Is(cause, ErrPeerClosed) {
					t.Fatalf("closed with %v, want ErrTLS or the peer's close", cause)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the connection was not closed: %+v", e.Stats())
			}
		}
		next, err := tls.Dial("tcp", e.Addr().String(), ca.client())
		if err != nil {
			t.Fatalf("a new connection: %v", err)
		}
		defer next.Close()
		if err := exchange(next, 10*time.Second); err != nil {
			t.Fatalf("a new connection's echo: %v", err)
		}
	})
}
