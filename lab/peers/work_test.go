package peers

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"
)

// TestWork: with Config.Work the gnet and net echo peers spin that long per
// frame: 20 pipelined frames take at least 20 × Work, and still echo.
func TestWork(t *testing.T) {
	const work, n = 2 * time.Millisecond, 20
	for _, kind := range []Kind{KindGnet, KindNet} {
		t.Run(string(kind), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			addrCh, errCh := make(chan string, 1), make(chan error, 1)
			go func() {
				errCh <- Serve(ctx, Config{Kind: kind, Codec: "line", Addr: "127.0.0.1:0", Loops: 1, Work: work},
					func(a net.Addr) { addrCh <- a.String() })
			}()
			defer func() {
				cancel()
				if err := <-errCh; err != nil {
					t.Errorf("Serve: %v", err)
				}
			}()
			var addr string
			select {
			case addr = <-addrCh:
			case err := <-errCh:
				t.Fatal(err)
			}
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			req := bytes.Repeat([]byte("ping\n"), n)
			t0 := time.Now()
			c.Write(req)
			got := make([]byte, len(req))
			if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, req) {
				t.Fatalf("echo %q, %v", got, err)
			}
			if d := time.Since(t0); d < n*work {
				t.Errorf("%d frames echoed in %v, want at least %v of work", n, d, n*work)
			}
		})
	}
}
