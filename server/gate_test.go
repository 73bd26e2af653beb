package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"
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

// rejectCodec is a line codec that can answer a refusal in protocol.
type rejectCodec struct{ lineCodec }

func (rejectCodec) AppendReject(dst, frame []byte, reason string, retryAfter time.Duration) []byte {
	return fmt.Appendf(dst, "REJECT %s retry-after=%s\n", reason, retryAfter)
}

// lineCodec: frames are lines, replies are lines.
type lineCodec struct{}

func (lineCodec) Decode(buf []byte) ([]byte, int, error) {
	if i := bytes.IndexByte(buf, '\n'); i >= 0 {
		return buf[:i], i + 1, nil
	}
	return nil, 0, nil
}

func (lineCodec) AppendEncode(dst, frame []byte) []byte { return append(append(dst, frame...), '\n') }

// denyX refuses frames that start with "x".
type denyX struct{ calls int }

func (d *denyX) AdmitFrame(c *Conn, frame []byte, now time.Time) Verdict {
	d.calls++
	if len(frame) > 0 && frame[0] == 'x' {
		return Verdict{Reject: true, Reason: "tenant", RetryAfter: 300 * time.Millisecond}
	}
	return Verdict{}
}

// TestAdmissionSeam: a refused frame never reaches OnFrame; a codec that
// can say so answers in protocol and the connection stays usable; without
// one the connection closes with ErrRejected.
func TestAdmissionSeam(t *testing.T) {
	t.Run("in-protocol", func(t *testing.T) {
		h := newTestHandler()
		e := start(t, Config{Loops: 1, Codec: rejectCodec{}, Admission: AdmitFunc((&denyX{}).AdmitFrame)}, h)
		c := dial(t, e)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte("a1\nx2\na3\n"))
		r := bufio.NewReader(c)
		for i, want := range []string{"a1\n", "REJECT tenant retry-after=300ms\n", "a3\n"} {
			if got, err := r.ReadString('\n'); err != nil || got != want {
				t.Fatalf("%d: %q, %v; want %q", i, got, err, want)
			}
		}
		waitUntil(t, 5*time.Second, "stats", func() bool { s := e.Stats(); return s.Rejects == 1 && s.Frames == 3 })
	})
	t.Run("close", func(t *testing.T) {
		h := newTestHandler()
		e := start(t, Config{Loops: 1, Codec: lineCodec{}, Admission: AdmitFunc((&denyX{}).AdmitFrame)}, h)
		c := dial(t, e)
		sc := h.nextOpen(t)
		c.Write([]byte("x\n"))
		if cause := h.closeOf(t, sc, 5*time.Second); !errors.Is(cause, ErrRejected) {
			t.Fatalf("cause %v, want ErrRejected", cause)
		}
	})
}

// TestAcceptSpread: with SO_REUSEPORT (the default) connections spread over
// the loops; EPOLLEXCLUSIVE gives them all to the first idle loop, which is
// why it is not the default. 64 connections, 2 loops: a loop with fewer than
// 8 has a probability below 1e-8 under a fair hash.
func TestAcceptSpread(t *testing.T) {
	h := newTestHandler()
	e := start(t, Config{Loops: 2}, h)
	for i := 0; i < 64; i++ {
		dial(t, e)
		h.nextOpen(t)
	}
	waitStats(t, e, "64 accepted", func(s Stats) bool { return s.Accepted == 64 })
	for _, l := range e.loops {
		if n := l.pub[gConns].Load(); n < 8 {
			t.Errorf("loop %d has %d of 64 connections", l.id, n)
		}
	}
}
