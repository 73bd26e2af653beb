package server

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/protocol"
)

// TestMaxConnsGate: at MaxConns the gate closes (further connections wait
// in the kernel backlog, unaccepted); it reopens only at MaxConnsLow, not
// at the first close (hysteresis), and then the waiting connections are
// accepted.
func TestMaxConnsGate(t *testing.T) {
	for _, mode := range []AcceptMode{AcceptReusePort, AcceptExclusive} {
		t.Run(mode.String(), func(t *testing.T) {
			h := newTestHandler()
			e := start(t, Config{Loops: 2, Accept: mode, MaxConns: 4, MaxConnsLow: 2}, h)
			var clients []net.Conn
			var opened []*Conn
			for i := 0; i < 4; i++ {
				clients = append(clients, dial(t, e))
				select {
				case c := <-h.opened:
					opened = append(opened, c)
				case <-time.After(10 * time.Second):
					t.Fatalf("connection %d not accepted within 10s: %+v; gate %b, loops listening %v %v",
						i, e.Stats(), e.gate.Load(), e.loops[0].lis.in, e.loops[1].lis.in)
				}
			}
			waitUntil(t, 5*time.Second, "gate closed", func() bool { return !e.Stats().GateOpen })
			for i := 0; i < 2; i++ { // handshakes complete in the backlog
				clients = append(clients, dial(t, e))
			}
			time.Sleep(100 * time.Millisecond)
			if s := e.Stats(); s.Accepted != 4 || s.ConnsOpen != 4 {
				t.Fatalf("accepted %d, open %d with the gate closed; want 4", s.Accepted, s.ConnsOpen)
			}
			clients[0].Close() // 3 open: above the low watermark, gate stays closed
			h.closeOf(t, opened[0], 5*time.Second)
			time.Sleep(50 * time.Millisecond)
			if s := e.Stats(); s.GateOpen || s.Accepted != 4 {
				t.Fatalf("gate open %v, accepted %d after one close; want closed, 4", s.GateOpen, s.Accepted)
			}
			clients[1].Close() // 2 open: the low watermark, gate opens
			h.closeOf(t, opened[1], 5*time.Second)
			waitUntil(t, 5*time.Second, "backlog accepted", func() bool { return e.Stats().Accepted == 6 })
			s := e.Stats()
			// closed at 4, opened at 2, closed again when the backlog took it to 4
			if s.GateTransitions != 3 || s.GateOpen {
				t.Errorf("transitions %d, open %v; want 3, closed", s.GateTransitions, s.GateOpen)
			}
			for _, c := range clients[4:] { // the late connections work
				c.SetDeadline(time.Now().Add(5 * time.Second))
				c.Write([]byte("hi"))
				buf := make([]byte, 2)
				if _, err := c.Read(buf); err != nil {
					t.Fatalf("late connection: %v", err)
				}
			}
		})
	}
}

// TestPolicyGateFlood: a connection flood past the policy's connection
// budget closes the gate (the rest waits in the kernel backlog, which Stats
// shows through TCP_INFO), the gate stays closed above the low watermark and
// through the dwell (no flapping: the transitions are counted), reopens
// below it, and every connection is served in the end.
func TestPolicyGateFlood(t *testing.T) {
	const budget, total = 20, 36 // the backlog left after the first wave stays under the budget
	adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1,
		Gate:           admission.GateConfig{Watermark: admission.Watermark{High: 1, Low: 0.5, MinDwell: 200 * time.Millisecond}},
		SampleInterval: time.Millisecond,
	})
	h := newTestHandler()
	e := start(t, Config{Loops: 2, Codec: protocol.Delimited{}, MaxAcceptPerTurn: 1, Backlog: 128, MaxConns: budget,
		Admission: AdmissionPolicy{Admitter: adm}}, h)
	var clients []*lineConn
	for i := 0; i < total; i++ {
		clients = append(clients, dialLine(t, e.Addr().String(), nil))
		time.Sleep(time.Millisecond) // a fast flood, not one burst: the policy samples every millisecond
	}
	s := waitStats(t, e, "gate closed and backlog seen", func(s Stats) bool {
		return !s.GateOpen && s.Admission.Gate.State == admission.GateClosed &&
			s.Admission.AcceptQueueDepth == int64(total)-int64(s.Accepted)
	})
	accepted := s.Accepted
	t.Logf("accepted %d of %d, backlog %d/%d, pressure %.2f", accepted, total,
		s.Admission.AcceptQueueDepth, s.Admission.AcceptQueueLimit, s.Admission.Gate.Pressure)
	if accepted < budget || accepted >= total {
		t.Fatalf("accepted %d with a budget of %d and %d dialled", accepted, budget, total)
	}
	if s.Admission.AcceptQueueLimit < 128 {
		t.Errorf("accept queue limit %d, want the backlog (128 per socket)", s.Admission.AcceptQueueLimit)
	}
	// every client says hello; the accepted ones answer while the gate is
	// closed, the others wait in the backlog
	served := make([]bool, total)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, c := range clients {
		fmt.Fprintf(c, "hello %d\n", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(time.Now().Add(time.Second))
			if got, err := c.r.ReadString('\n'); err == nil && got == fmt.Sprintf("hello %d\n", i) {
				mu.Lock()
				served[i] = true
				mu.Unlock()
			}
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
		}()
	}
	wg.Wait()
	open := 0
	for _, v := range served {
		if v {
			open++
		}
	}
	if open != int(accepted) {
		t.Fatalf("%d clients answered, %d accepted", open, accepted)
	}
	// close accepted connections down to just above the low watermark: the
	// gate stays closed, through more than one dwell
	for i, c := range clients {
		if open == budget/2+1 {
			break
		}
		if served[i] {
			c.Close()
			open--
		}
	}
	time.Sleep(400 * time.Millisecond)
	s = e.Stats()
	if s.GateOpen || s.Admission.Gate.Transitions != 1 || s.Accepted != accepted {
		t.Fatalf("above the low watermark: gate open %v, policy transitions %d, accepted %d (was %d); want closed, 1, unchanged",
			s.GateOpen, s.Admission.Gate.Transitions, s.Accepted, accepted)
	}
	// close the rest: below the low watermark, after the dwell, the gate
	// opens and the backlog is served (its hello answered)
	var late []int
	for i, c := range clients {
		if served[i] {
			c.Close()
		} else {
			late = append(late, i)
		}
	}
	for _, i := range late {
		want := fmt.Sprintf("hello %d", i)
		if got := clients[i].line(t); got != want {
			t.Fatalf("late client %d: %q, want %q", i, got, want)
		}
	}
	s = waitStats(t, e, "all accepted", func(s Stats) bool { return s.Accepted == total })
	g := s.Admission.Gate
	t.Logf("policy gate: %d transitions (%d closes, %d opens); engine gate %d transitions", g.Transitions, g.Closes, g.Opens, s.GateTransitions)
	// closed once at the flood, opened once when the first wave left; the
	// backlog (at most 16 connections) cannot push the pressure to 1 again,
	// so no more transitions: no flapping.
	if g.Closes != 1 || g.Opens != 1 || g.Transitions != 2 {
		t.Errorf("policy gate transitions %+v; want exactly one close and one open", g)
	}
}

// TestBacklogReject: with RejectBacklogAbove, a gate closed at its budget
// whose accept queue fills switches to GateRejecting: new connections are
// accepted and answered at once with a reject and a close, instead of
// waiting in (or being dropped by) the kernel's queue.
func TestBacklogReject(t *testing.T) {
	adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1,
		Gate:           admission.GateConfig{Watermark: admission.Watermark{High: 1, Low: 0.5, MinDwell: time.Second}, RejectBacklogAbove: 0.25},
		SampleInterval: time.Millisecond,
	})
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{}, MaxConns: 2, MaxConnsLow: 1, Backlog: 8,
		Admission: AdmissionPolicy{Admitter: adm}}, newTestHandler())
	for i := 0; i < 2; i++ {
		c := dialLine(t, e.Addr().String(), nil)
		fmt.Fprintf(c, "hi\n")
		if got := c.line(t); got != "hi" {
			t.Fatalf("served connection %d: %q", i, got)
		}
	}
	waitStats(t, e, "gate closed", func(s Stats) bool { return !s.GateOpen })
	var rejected, waiting int
	for i := 0; i < 12; i++ {
		c := dialLine(t, e.Addr().String(), nil)
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		line, err := c.r.ReadString('\n')
		switch reason, retry, ok := protocol.ParseRejectText([]byte(strings.TrimSuffix(line, "\n"))); {
		case err == nil && ok && reason == "global" && retry > 0:
			rejected++
			if _, err := c.r.ReadString('\n'); err != io.EOF {
				t.Errorf("after the reject: %v, want end of file", err)
			}
		case err != nil:
			waiting++ // in the kernel's queue, below the reject threshold
		default:
			t.Fatalf("connection %d: %q", i, line)
		}
	}
	// a connection that gave up waiting may still be rejected afterwards
	s := waitStats(t, e, "backlog rejects counted", func(s Stats) bool { return s.Admission.BacklogRejects >= uint64(rejected) })
	t.Logf("rejected %d, waiting %d; policy gate %+v", rejected, waiting, s.Admission.Gate)
	if rejected == 0 || s.Admission.Gate.Rejecting == 0 {
		t.Errorf("no connection rejected while the accept queue was full")
	}
	if s.Accepted != 2 || s.ConnsOpen != 2 {
		t.Errorf("accepted %d, open %d; want the budget (2)", s.Accepted, s.ConnsOpen)
	}
}

// TestGateClosedTime: the gate's closed time grows while it is closed,
// stops when it opens, and Draining follows Shutdown.
func TestGateClosedTime(t *testing.T) {
	h := newTestHandler()
	e := start(t, Config{Loops: 1, MaxConns: 1, MaxConnsLow: 0}, h)
	if s := e.Stats(); s.GateClosedTime != 0 || s.Draining {
		t.Fatalf("fresh engine: closed time %v, draining %v", s.GateClosedTime, s.Draining)
	}
	c := dial(t, e)
	conn := h.nextOpen(t)
	waitStats(t, e, "gate closed", func(s Stats) bool { return !s.GateOpen })
	time.Sleep(30 * time.Millisecond)
	d1 := e.Stats().GateClosedTime
	if d1 < 30*time.Millisecond {
		t.Errorf("closed time %v after 30ms closed", d1)
	}
	c.Close()
	h.closeOf(t, conn, 5*time.Second)
	s := waitStats(t, e, "gate open", func(s Stats) bool { return s.GateOpen })
	time.Sleep(20 * time.Millisecond)
	if d2 := e.Stats().GateClosedTime; d2 != s.GateClosedTime || d2 < d1 {
		t.Errorf("closed time %v then %v while open (was %v while closed)", s.GateClosedTime, d2, d1)
	}
	if err := e.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s := e.Stats(); !s.Draining || s.GateOpen {
		t.Errorf("after Shutdown: draining %v, gate open %v", s.Draining, s.GateOpen)
	}
}

// TestGateTimeSyncRace: transitions racing with their accounting (the
// gate word changes by CAS, the sync follows) never count an open
// interval, and GateClosedTime never goes back.
func TestGateTimeSyncRace(t *testing.T) {
	e, err := New(Config{Loops: 1}, HandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(t.Context())
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		var last time.Duration
		for {
			select {
			case <-stop:
				return
			default:
			}
			d := e.gateClosedTime()
			if d < last {
				t.Errorf("closed time went back from %v to %v", last, d)
				return
			}
			last = d
		}
	}()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		bit := uint32(1) << (8 + g)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				e.gate.Or(bit)
				e.gateTimeSync()
				e.gate.And(^bit)
				e.gateTimeSync()
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	e.gateMu.Lock()
	at := e.gateClosedAt
	e.gateMu.Unlock()
	if at != 0 || e.gate.Load() != 0 {
		t.Errorf("gate open but closed since %d", at)
	}
	d := e.gateClosedTime()
	time.Sleep(5 * time.Millisecond)
	if d2 := e.gateClosedTime(); d2 != d {
		t.Errorf("closed time grows while open: %v then %v", d, d2)
	}
}
