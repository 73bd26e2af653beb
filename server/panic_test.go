package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/protocol"
)

// boomCodec is a line codec whose Decode panics on a line beginning with
// "boom".
type boomCodec struct{ protocol.Delimited }

func (c boomCodec) Decode(buf []byte) ([]byte, int, error) {
	if bytes.HasPrefix(buf, []byte("boom")) {
		panic("decode boom")
	}
	return c.Delimited.Decode(buf)
}

// boomPool is a BlockingHandler that echoes lines and panics on "boom".
type boomPool struct{}

func (boomPool) ServeFrame(_ context.Context, c *Conn, frame []byte) Action {
	if string(frame) == "boom" {
		panic("serve boom")
	}
	c.WriteFrame(frame)
	return None
}

func isBoom(frame []byte) bool { return string(frame) == "boom" }

// TestHandlerPanicClosesItsConn: code the engine calls for a connection
// panics — each place in turn — and only that connection closes, with a
// PanicError naming the place as its OnClose cause, after the replies
// queued before the panic; another connection echoes before and after, the
// engine counts the panic, and nothing reaches the loop or a worker.
func TestHandlerPanicClosesItsConn(t *testing.T) {
	type setup struct {
		cfg     func(*Config, *atomic.Int32)       // the panicking place, wired into the config
		onFrame func(c *Conn, frame []byte) Action // nil: echo
		onOpen  bool                               // the first connection's OnOpen panics
	}
	echo := func(c *Conn, frame []byte) Action {
		c.WriteFrame(frame)
		return None
	}
	cases := map[string]setup{
		"OnFrame": {onFrame: func(c *Conn, frame []byte) Action {
			if isBoom(frame) {
				c.WriteFrame([]byte("last")) // queued before the panic: still sent
				panic("frame boom")
			}
			return echo(c, frame)
		}},
		"OnOpen": {onOpen: true},
		"Decode": {cfg: func(cfg *Config, _ *atomic.Int32) { cfg.Codec = boomCodec{} }},
		"Admit": {cfg: func(cfg *Config, _ *atomic.Int32) {
			cfg.Admission = AdmitFunc(func(_ *Conn, frame []byte, _ time.Time) Verdict {
				if isBoom(frame) {
					panic("admit boom")
				}
				return Verdict{}
			})
		}},
		"Classify": {cfg: func(cfg *Config, _ *atomic.Int32) {
			adm, err := admission.NewAdmitter(admission.Config{MemoryLimitBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			cfg.Admission = AdmissionPolicy{Admitter: adm, Classify: func(_ *Conn, frame []byte, _ *admission.Frame) {
				if isBoom(frame) {
					panic("classify boom")
				}
			}}
		}},
		"Conn.Run": {onFrame: func(c *Conn, frame []byte) Action {
			if isBoom(frame) {
				go c.Run(func(*Conn) { panic("run boom") })
				return None
			}
			return echo(c, frame)
		}},
		"ServeFrame": {cfg: func(cfg *Config, _ *atomic.Int32) {
			cfg.Pool = PoolConfig{Handler: boomPool{}, Workers: 2}
		}},
		"Deadline": {cfg: func(cfg *Config, _ *atomic.Int32) {
			cfg.Pool = PoolConfig{Handler: boomPool{}, Workers: 2, Deadline: func(frame []byte, _ time.Time) time.Time {
				if string(frame) == "boom!" {
					panic("deadline boom")
				}
				return time.Time{}
			}}
		}},
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			var opens atomic.Int32
			causes := make(chan error, 4)
			cfg := Config{Loops: 1, Codec: protocol.Delimited{}}
			if s.cfg != nil {
				s.cfg(&cfg, &opens)
			}
			fr := s.onFrame
			if fr == nil {
				fr = echo
			}
			h := HandlerFuncs{
				Open: func(c *Conn) Action {
					if s.onOpen && opens.Add(1) == 1 {
						panic("open boom")
					}
					return None
				},
				Frame: fr,
				Close: func(c *Conn, cause error) { causes <- cause },
			}
			e := start(t, cfg, h)
			victim := dial(t, e)
			bystander := dial(t, e)
			if err := echoOnce(bystander, "a\n"); err != nil {
				t.Fatal(err)
			}
			boom := "boom\n"
			if name == "Deadline" {
				boom = "boom!\n"
			}
			want := ""
			if name == "OnFrame" {
				want = "last\n"
			}
			if !s.onOpen {
				if err := echoOnce(victim, "ok\n"); err != nil {
					t.Fatal(err)
				}
				victim.Write([]byte(boom))
			}
			victim.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := io.ReadAll(bufio.NewReader(victim))
			if err != nil {
				t.Fatalf("victim: read %q, then %v; want the connection closed", got, err)
			}
			if string(got) != want {
				t.Errorf("victim read %q before the close, want %q", got, want)
			}
			cause := victimCause(t, causes)
			var pe *PanicError
			if !errors.As(cause, &pe) || !errors.Is(cause, ErrHandlerPanic) || pe.In != name || len(pe.Stack) == 0 {
				t.Fatalf("OnClose cause %v (%T), want a PanicError in %s with its stack", cause, cause, name)
			}
			if CauseOf(cause) != CauseHandlerPanic {
				t.Errorf("CauseOf = %v, want %v", CauseOf(cause), CauseHandlerPanic)
			}
			if err := echoOnce(bystander, "b\n"); err != nil {
				t.Fatalf("bystander after the panic: %v", err)
			}
			waitUntil(t, 10*time.Second, "HandlerPanics 1 and one close by CauseHandlerPanic", func() bool {
				s := e.Stats()
				return s.HandlerPanics == 1 && s.Closed[CauseHandlerPanic] == 1
			})
		})
	}
}

// TestOnClosePanicCounted: a panic in OnClose, when the connection is
// already closed, or in an Engine.Run function, is counted and the loop
// goes on serving.
func TestOnClosePanicCounted(t *testing.T) {
	var closes atomic.Int32
	h := HandlerFuncs{
		Frame: func(c *Conn, frame []byte) Action { c.WriteFrame(frame); return None },
		Close: func(*Conn, error) {
			closes.Add(1)
			panic("close boom")
		},
	}
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{}}, h)
	victim, bystander := dial(t, e), dial(t, e)
	if err := echoOnce(victim, "v\n"); err != nil {
		t.Fatal(err)
	}
	victim.Close()
	waitUntil(t, 10*time.Second, "the OnClose panic counted", func() bool { return e.Stats().HandlerPanics == 1 })
	if err := echoOnce(bystander, "b\n"); err != nil {
		t.Fatalf("bystander after the panic: %v", err)
	}
	if err := e.Run(0, func() { panic("loop task boom") }); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the Engine.Run panic counted", func() bool { return e.Stats().HandlerPanics == 2 })
	if err := echoOnce(bystander, "c\n"); err != nil {
		t.Fatalf("bystander after the second panic: %v", err)
	}
	if s := e.Stats(); s.Closed[CausePeerClosed] != 1 || s.Closed[CauseHandlerPanic] != 0 || closes.Load() != 1 {
		t.Errorf("closed by peer %d, by panic %d, OnClose calls %d; want 1, 0, 1", s.Closed[CausePeerClosed], s.Closed[CauseHandlerPanic], closes.Load())
	}
}

// TestOnWritablePanic: a WritabilityHandler whose OnWritable panics (here
// when a peer that never reads fills its out-queue past the high
// watermark) closes only that connection, with a PanicError in
// "OnWritable" as OnClose's cause once its queued output stalls
// (WriteStallTimeout); another connection echoes before and after.
func TestOnWritablePanic(t *testing.T) {
	causes := make(chan error, 4)
	chunk := bytes.Repeat([]byte("x"), 4<<10)
	h := HandlerFuncs{
		Frame: func(c *Conn, frame []byte) Action {
			if isBoom(frame) {
				for range 16 { // 64 KiB for a peer that never reads
					if c.Write(chunk) != nil {
						break
					}
				}
				return None
			}
			c.WriteFrame(frame)
			return None
		},
		Writable: func(c *Conn, writable bool) {
			if !writable {
				panic("writable boom")
			}
		},
		Close: func(c *Conn, cause error) { causes <- cause },
	}
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{}, SocketSendBufferBytes: 4096,
		OutQueueHighBytes: 8 << 10, WriteStallTimeout: 200 * time.Millisecond}, h)
	victim, err := dialSmallWindow(e.Addr().String(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	bystander := dial(t, e)
	if err := echoOnce(bystander, "a\n"); err != nil {
		t.Fatal(err)
	}
	victim.Write([]byte("boom\n")) // and never read
	cause := victimCause(t, causes)
	var pe *PanicError
	if !errors.As(cause, &pe) || pe.In != "OnWritable" {
		t.Fatalf("OnClose cause %v (%T), want a PanicError in OnWritable", cause, cause)
	}
	if err := echoOnce(bystander, "b\n"); err != nil {
		t.Fatalf("bystander after the panic: %v", err)
	}
	if n := e.Stats().HandlerPanics; n != 1 {
		t.Errorf("HandlerPanics %d, want 1", n)
	}
}

// victimCause waits up to 10 s for the OnClose cause of the connection
// that panicked.
func victimCause(t *testing.T, causes <-chan error) error {
	t.Helper()
	select {
	case cause := <-causes:
		return cause
	case <-time.After(10 * time.Second):
		t.Fatal("no OnClose for the victim")
	}
	return nil
}
