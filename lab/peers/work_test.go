package peers

import (
	"bytes"
	"context"
	"io"
	"math"
	"net"
	"testing"
	"time"

	"github.com/sluicenet/sluice/internal/spin"
)

// TestWork: with Config.Work the gnet and net echo peers run spin.For(Work)
// once per frame, and still echo. spin's work is a fixed loop whose wall time
// depends on the CPU, so the measure is this test's own n calls of
// spin.For(Work) on the same machine (the fastest of three): n pipelined
// frames take at least half of that, which one spin per read (one or two
// reads here) would not.
func TestWork(t *testing.T) {
	const work, n = 2 * time.Millisecond, 20
	ref := time.Duration(math.MaxInt64)
	for range 3 {
		t0 := time.Now()
		for range n {
			spin.For(work)
		}
		ref = min(ref, time.Since(t0))
	}
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
			if d := time.Since(t0); d < ref/2 {
				t.Errorf("%d frames echoed in %v, under half of the %v that %d × spin.For(%v) took here", n, d, ref, n, work)
			}
		})
	}
}
