package server

import (
	"bytes"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestEchoSlowReaderBackpressure: clients that read nothing for a while
// make the server's writes would-block (EPOLLOUT armed), its out-queues pass
// the high watermark (reading paused) and resume; every byte still comes
// back exactly once, in order.
func TestEchoSlowReaderBackpressure(t *testing.T) {
	cfg := Config{Loops: 2, Codec: codecByName(t, "length", 64<<10), OutQueueBytes: 128 << 10,
		FlushBudgetBytes: 16 << 10}
	h := newTestHandler()
	e := start(t, cfg, h)
	const conns = 3
	var wg sync.WaitGroup
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 5))
			want := streamFor("length", rng, 6<<20, 60<<10)
			conn, err := dialSmallWindow(e.Addr().String(), 8<<10)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(30 * time.Second))
			go func() {
				conn.Write(want)
				conn.CloseWrite()
			}()
			// let the server's socket and queue fill: read nothing until it
			// has armed EPOLLOUT and paused a reader (a sleep instead was too
			// short for a loaded machine)
			if !poll(20*time.Second, func() bool { s := e.Stats(); return s.OutArms > 0 && s.Pauses > 0 }) {
				t.Errorf("conn %d: no EPOLLOUT arm and paused read in 20s of not reading: %+v", i, e.Stats())
			}
			got, err := io.ReadAll(conn)
			if err != nil {
				t.Errorf("conn %d: read: %v; stats %+v", i, err, e.Stats())
				for _, l := range e.loops {
					for _, c := range l.conns {
						if c != nil {
							outq, _ := unix.IoctlGetInt(int(c.fd), unix.SIOCOUTQ)
							inq, _ := unix.IoctlGetInt(int(c.fd), unix.SIOCINQ)
							sb, _ := unix.GetsockoptInt(int(c.fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
							t.Logf("conn fd %d flags %b out %d msgs %d in %d closing %v kernel outq %d inq %d sndbuf %d", c.fd, c.flags, c.outBytes, c.outMsgs, len(c.in), c.closing, outq, inq, sb)
						}
					}
				}
			}
			if !bytes.Equal(got, want) {
				t.Errorf("conn %d: echo of %d bytes differs (got %d)", i, len(want), len(got))
			}
		}(i)
	}
	wg.Wait()
	waitStats(t, e, "EPOLLOUT arms, pauses and flush-budget stops", func(s Stats) bool {
		return s.OutArms > 0 && s.Pauses > 0 && s.FlushBudgetSpent > 0
	})
}
