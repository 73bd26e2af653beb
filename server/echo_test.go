package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"
)

// writeChopped writes b in random pieces with occasional pauses, so the
// server sees frames split at arbitrary points.
func writeChopped(c net.Conn, b []byte, rng *rand.Rand) error {
	for len(b) > 0 {
		n := min(len(b), 1+rng.IntN(3000))
		if _, err := c.Write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
		if rng.IntN(8) == 0 {
			time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
		}
	}
	return nil
}

// echoClient sends a stream, half-closes, and checks that exactly the
// stream comes back before end of file.
func echoClient(e *Engine, codec string, seed uint64, size, maxFrame int, slowReader bool) error {
	rng := rand.New(rand.NewPCG(seed, 99))
	want := streamFor(codec, rng, size, maxFrame)
	rcvbuf := 0
	if slowReader {
		rcvbuf = 4096 // small window: the server's writes hit EAGAIN sooner
	}
	tc, err := dialSmallWindow(e.Addr().String(), rcvbuf)
	if err != nil {
		return err
	}
	conn := net.Conn(tc)
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	werr := make(chan error, 1)
	go func() {
		err := writeChopped(conn, want, rand.New(rand.NewPCG(seed, 7)))
		if err == nil {
			err = tc.CloseWrite()
		}
		werr <- err
	}()
	if slowReader {
		time.Sleep(50 * time.Millisecond)
	}
	var got bytes.Buffer
	buf := make([]byte, 1500)
	for {
		n, err := conn.Read(buf)
		got.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read after %d bytes: %w", got.Len(), err)
		}
	}
	if err := <-werr; err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		i := 0
		for i < min(got.Len(), len(want)) && got.Bytes()[i] == want[i] {
			i++
		}
		return fmt.Errorf("echo differs at byte %d (got %d bytes, want %d)", i, got.Len(), len(want))
	}
	return nil
}

// TestEchoExact: many connections echo exactly what they sent, in order,
// for each codec, with frames split across reads and (with tiny budgets and
// slow readers) replies split across writes.
func TestEchoExact(t *testing.T) {
	configs := []struct {
		name string
		cfg  Config
		slow bool
	}{
		{"defaults", Config{Loops: 2}, false},
		{"tiny-budgets", Config{Loops: 2, Accept: AcceptExclusive, ReadBufferBytes: 512,
			ReadBudgetBytes: 700, FlushBudgetBytes: 900, MaxInBufferBytes: 8 << 10}, true},
	}
	for _, cf := range configs {
		for _, codec := range []string{"raw", "length", "line"} {
			t.Run(cf.name+"/"+codec, func(t *testing.T) {
				cfg := cf.cfg
				cfg.Codec = codecByName(t, codec, 4000)
				h := newTestHandler()
				e := start(t, cfg, h)
				const conns = 12
				var wg sync.WaitGroup
				errs := make(chan error, conns)
				for i := 0; i < conns; i++ {
					wg.Add(1)
					go func(i int) {
						defer wg.Done()
						if err := echoClient(e, codec, uint64(i+1), 48<<10, 3000, cf.slow); err != nil {
							errs <- fmt.Errorf("conn %d: %w", i, err)
						}
					}(i)
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
				for i := 0; i < conns; i++ {
					select {
					case ev := <-h.closed:
						if !errors.Is(ev.cause, ErrPeerClosed) {
							t.Errorf("close cause %v, want ErrPeerClosed", ev.cause)
						}
					case <-time.After(5 * time.Second):
						t.Fatalf("only %d of %d connections closed", i, conns)
					}
				}
				waitStats(t, e, "every connection accepted and closed by its peer", func(s Stats) bool {
					return s.Accepted == conns && s.Closed[CausePeerClosed] == conns
				})
				if cf.slow {
					waitStats(t, e, "reads stopped by the read budget", func(s Stats) bool { return s.ReadBudgetSpent > 0 })
				}
			})
		}
	}
}
