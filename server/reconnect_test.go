package server

import (
	"bytes"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol"
)

// TestReconnectingHammer: four clients of one tenant each send 16 frames
// at once and, when any is refused, close and reconnect at once (a fresh
// connection has no holds and no pace), for as long as nine tenants each
// send a frame every 40 ms. Every frame a churning client sent before it
// closed is answered; the nine are each served at least two thirds of
// their frames.
func TestReconnectingHammer(t *testing.T) {
	if testing.Short() {
		t.Skip("a hammering client")
	}
	const nine, frames, gap, batch = 9, 30, 40 * time.Millisecond, 16
	e := spinEchoEngine(t)
	var stop atomic.Bool
	var dials, hServed, hRefused atomic.Int64
	var wg sync.WaitGroup
	for k := 0; k < 4; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := bytes.Repeat([]byte("h\n"), batch)
			for !stop.Load() {
				c := dialLine(t, e.Addr().String(), net.IPv4(127, 0, 0, 2))
				dials.Add(1)
				c.SetDeadline(time.Now().Add(30 * time.Second))
				refused := false
				for !refused && !stop.Load() {
					if _, err := c.Write(out); err != nil {
						t.Error(err)
						c.Close()
						return
					}
					for i := 0; i < batch; i++ {
						line, err := c.r.ReadString('\n')
						if err != nil {
							t.Errorf("churning client: answer %d of %d: %v", i+1, batch, err)
							c.Close()
							return
						}
						if _, _, ok := protocol.ParseRejectText([]byte(strings.TrimSuffix(line, "\n"))); ok {
							refused = true
							hRefused.Add(1)
						} else {
							hServed.Add(1)
						}
					}
				}
				c.Close() // and again at once
			}
		}()
	}
	for e.Stats().Rejects == 0 { // overloaded first
		time.Sleep(time.Millisecond)
	}
	var served [nine]atomic.Int64
	var cwg sync.WaitGroup
	for i := 0; i < nine; i++ {
		c := dialLine(t, e.Addr().String(), net.IPv4(127, 0, 0, byte(3+i)))
		c.SetDeadline(time.Now().Add(60 * time.Second))
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			next := time.Now()
			for n := 0; n < frames; n++ {
				time.Sleep(time.Until(next))
				next = next.Add(gap)
				if _, err := c.Write([]byte("g\n")); err != nil {
					t.Error(err)
					return
				}
				line, err := c.r.ReadString('\n')
				if err != nil {
					t.Errorf("tenant %d: %v", i, err)
					return
				}
				if _, _, ok := protocol.ParseRejectText([]byte(strings.TrimSuffix(line, "\n"))); !ok {
					served[i].Add(1)
				}
			}
		}()
	}
	cwg.Wait()
	stop.Store(true)
	wg.Wait()
	t.Logf("churning clients: %d connections, %d frames served, %d refused; the nine served %v of %d each",
		dials.Load(), hServed.Load(), hRefused.Load(), &served, frames)
	if dials.Load() < 8 {
		t.Errorf("%d connections: the clients hardly churned", dials.Load())
	}
	for i := range served {
		if n := served[i].Load(); n < frames*2/3 {
			t.Errorf("tenant %d: %d of %d frames served beside the churning clients, want at least two thirds", i, n, frames)
		}
	}
}
