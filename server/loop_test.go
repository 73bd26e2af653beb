package server

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol"
)

// TestOnLoopDetection: Conn methods see the loop goroutine as on-loop and
// any other goroutine as off-loop.
func TestOnLoopDetection(t *testing.T) {
	h := newTestHandler()
	var inHandler atomic.Int32 // 1: on loop, 2: off loop
	h.frame = func(c *Conn, frame []byte) Action {
		if c.loop.onLoop() {
			inHandler.Store(1)
		} else {
			inHandler.Store(2)
		}
		return None
	}
	e := start(t, Config{Loops: 2}, h)
	c := dial(t, e)
	sc := h.nextOpen(t)
	c.Write([]byte("x"))
	waitUntil(t, 5*time.Second, "OnFrame", func() bool { return inHandler.Load() != 0 })
	if inHandler.Load() != 1 {
		t.Error("handler call not detected as on-loop")
	}
	if sc.loop.onLoop() {
		t.Error("test goroutine detected as on-loop")
	}
	for _, l := range e.loops {
		if l.onLoop() {
			t.Error("test goroutine detected as a loop")
		}
	}
}

// loopTagCodec is a protocol.LoopCodec over lines whose ForLoop hands each
// loop a codec of its own, numbered.
type loopTagCodec struct {
	protocol.Delimited
	made *atomic.Int32 // ForLoop calls
	tag  int32         // 0: the configured codec; n: the nth ForLoop
}

func (c loopTagCodec) ForLoop() protocol.Codec {
	c.tag = c.made.Add(1)
	return c
}

// AppendEncode marks what a loop's own codec encodes with an L.
func (c loopTagCodec) AppendEncode(dst, frame []byte) []byte {
	if c.tag != 0 {
		dst = append(dst, 'L')
	}
	return c.Delimited.AppendEncode(dst, frame)
}

// TestLoopCodec: with a protocol.LoopCodec each loop decodes with the
// codec its ForLoop returned (called once per loop), Conn.LoopCodec hands
// a handler its loop's codec, and nil off the loop; the loop's own codec
// is not used off the loop (WriteFrame from another goroutine encodes with
// the configured one, on the loop with the loop's).
func TestLoopCodec(t *testing.T) {
	made := new(atomic.Int32)
	offLoop := make(chan protocol.Codec, 16)
	h := newTestHandler()
	h.frame = func(c *Conn, frame []byte) Action {
		lc, ok := c.LoopCodec().(loopTagCodec)
		if !ok {
			c.CloseWithError(fmt.Errorf("LoopCodec %T on the loop", c.LoopCodec()))
			return None
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			offLoop <- c.LoopCodec()
			c.WriteFrame(fmt.Appendf(nil, "tag %d", lc.tag)) // from another goroutine
		}()
		<-done
		c.WriteFrame([]byte("on loop"))
		return None
	}
	e := start(t, Config{Loops: 2, Codec: loopTagCodec{made: made}}, h)
	if n := made.Load(); n != 2 {
		t.Fatalf("ForLoop called %d times for 2 loops", n)
	}
	seen := map[string]bool{}
	for i := 0; i < 8; i++ {
		c := dialLine(t, e.Addr().String(), nil)
		fmt.Fprintf(c, "hello\n")
		got, onLoop := c.line(t), c.line(t) // the off-loop write goes through the inbox: after the handler's
		if got == "Lon loop" {
			got, onLoop = onLoop, got
		}
		if got != "tag 1" && got != "tag 2" {
			t.Fatalf("connection %d: %q, want the tag of its loop's codec, encoded with the configured one", i, got)
		}
		if onLoop != "Lon loop" {
			t.Fatalf("connection %d: %q, want the loop codec's encoding", i, onLoop)
		}
		seen[got] = true
		if lc := <-offLoop; lc != nil {
			t.Errorf("LoopCodec off the loop: %T, want nil", lc)
		}
	}
	t.Logf("tags seen: %v", seen)
}
