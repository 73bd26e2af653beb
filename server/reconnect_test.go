package server

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/protocol"
)

// TestReconnectingHammer: four clients of one tenant each send 16 frames
// at once and, when any is refused, close and reconnect at once (a fresh
// connection has no holds and no pace), for as long as nine tenants each
// send a frame every 40 ms. Every frame a churning client sent before it
// closed is answered; the nine are each served at least two thirds of
// their frames, but for at most one (atMostOneBelow).
func TestReconnectingHammer(t *testing.T) {
	if testing.Short() {
		t.Skip("a hammering client")
	}
	const batch = 16
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
	served := nineTenants(t, e)
	stop.Store(true)
	wg.Wait()
	t.Logf("churning clients: %d connections, %d frames served, %d refused; the nine served %v of %d each",
		dials.Load(), hServed.Load(), hRefused.Load(), served, nineFrames)
	if dials.Load() < 8 {
		t.Errorf("%d connections: the clients hardly churned", dials.Load())
	}
	atMostOneBelow(t, served, nineFrames*2/3, "beside the churning clients")
}

// TestManyConnectionTenant: one tenant opens 5,000 connections to get more
// of the loop (each connection, on its own, sends a frame only every
// 500 ms: together 5 times the loop's capacity) while nine tenants each
// send a frame every 40 ms: a connection's fair share is its tenant's
// divided between its connections (docs/OVERLOAD.md#light-connections),
// so the nine are not starved: each is served at least a third of its
// frames, but for at most one (atMostOneBelow) (13-27 of 30, mostly above 20, in 7 runs under -race on a 2-vCPU
// VM; the bound leaves room for a slower machine), and every frame of the
// 5,000 is answered.
func TestManyConnectionTenant(t *testing.T) {
	if testing.Short() {
		t.Skip("5,000 connections")
	}
	const conns = 5000
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur < 2*conns+200 {
		t.Skipf("RLIMIT_NOFILE %d: both ends of %d connections need %d descriptors", rl.Cur, conns, 2*conns+200)
	}
	e := spinEchoEngine(t)
	many := make([]*lineConn, conns)
	for i := range many {
		many[i] = dialLine(t, e.Addr().String(), net.IPv4(127, 0, 0, 2))
		many[i].SetDeadline(time.Now().Add(60 * time.Second))
	}
	var stop atomic.Bool
	var sent, answered atomic.Int64
	var rwg sync.WaitGroup
	for _, c := range many {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for {
				if _, err := c.r.ReadString('\n'); err != nil {
					return // closed at the end
				}
				answered.Add(1)
			}
		}()
	}
	go func() { // round robin: each connection every 500 ms
		per := 500 * time.Millisecond / conns
		next := time.Now()
		for i := 0; !stop.Load(); i = (i + 1) % conns {
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
			next = next.Add(per)
			if _, err := many[i].Write([]byte("h\n")); err == nil {
				sent.Add(1)
			}
		}
	}()
	served := nineTenants(t, e)
	stop.Store(true)
	waitUntil(t, 30*time.Second, "every frame of the 5,000 answered", func() bool { return answered.Load() == sent.Load() })
	for _, c := range many {
		c.Close()
	}
	rwg.Wait()
	st := e.Stats().Admission
	t.Logf("%d connections of one tenant: %d frames sent, all answered; the nine served %v of %d each; refusals by reason %v",
		conns, sent.Load(), served, nineFrames, st.Rejects)
	atMostOneBelow(t, served, nineFrames/3, "beside the 5,000 connections")
}

// atMostOneBelow checks that at most one of the nine tenants was served
// fewer than min frames. One may be: a light connection refused twice in a
// row is not light again until one of its frames is admitted
// (docs/OVERLOAD.md#light-connections), and under -race one in about six
// runs leaves one tenant there (4 of 30 served while the others got 29);
// see docs/OVERLOAD.md, Not yet met.
func atMostOneBelow(t *testing.T, served *[nine]atomic.Int64, min int64, where string) {
	t.Helper()
	var below []int
	for i := range served {
		if served[i].Load() < min {
			below = append(below, i)
		}
	}
	switch {
	case len(below) == 1:
		t.Logf("tenant %d: %d of %d frames served %s: the one stuck light connection allowed", below[0], served[below[0]].Load(), nineFrames, where)
	case len(below) > 1:
		for _, i := range below {
			t.Errorf("tenant %d: %d of %d frames served %s, want at least %d", i, served[i].Load(), nineFrames, where, min)
		}
	}
}

// TestHammerCritical: critical frames within capacity keep being served
// beside a hammer, from the hammer's own address (its tenant over its
// share) and from another: a client sending one critical frame every
// 20 ms on each (AdmissionPolicy.Classify: frames beginning with 'c') gets
// at most one of its 50 refused, while the hammer's normal frames are
// refused.
func TestHammerCritical(t *testing.T) {
	if testing.Short() {
		t.Skip("a hammering client")
	}
	e := spinEchoEngineClassify(t, func(_ *Conn, frame []byte, f *admission.Frame) {
		if len(frame) > 0 && frame[0] == 'c' {
			f.Priority = admission.PriorityCritical
		}
	})
	var stop atomic.Bool
	var wg sync.WaitGroup
	hm := hammerConn(t, e, net.IPv4(127, 0, 0, 2), 20_000, &stop, &wg)
	for e.Stats().Rejects == 0 {
		time.Sleep(time.Millisecond)
	}
	const frames = 50
	var critServed [2]atomic.Int64
	var cw sync.WaitGroup
	for i, ip := range []net.IP{net.IPv4(127, 0, 0, 2), net.IPv4(127, 0, 0, 3)} {
		c := dialLine(t, e.Addr().String(), ip)
		cw.Add(1)
		go func() {
			defer cw.Done()
			pacedClient(t, fmt.Sprintf("critical client %d", i), c, "c\n", 20*time.Millisecond, frames, &critServed[i])
		}()
	}
	cw.Wait()
	stop.Store(true)
	wg.Wait()
	st := e.Stats().Admission
	t.Logf("hammer: sent %d, served %d, refused %d; critical served %d and %d of %d (the hammer's address, another); refusals by reason %v, by priority %v",
		hm.Sent(), hm.served.Load(), hm.refused.Load(), critServed[0].Load(), critServed[1].Load(), frames, st.Rejects, st.RejectsByPriority)
	if hm.refused.Load() == 0 {
		t.Error("the hammer was never refused")
	}
	for i := range critServed {
		if n := critServed[i].Load(); n < frames-1 {
			t.Errorf("critical client %d: %d of %d frames served beside the hammer, want all but one at most", i, n, frames)
		}
	}
}
