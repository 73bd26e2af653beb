package server

import (
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"
)

// TestFrameTimeout: half a frame then silence closes with ErrFrameTimeout,
// not before the timeout.
func TestFrameTimeout(t *testing.T) {
	const ft = 300 * time.Millisecond
	h := newTestHandler()
	e := start(t, Config{Loops: 1, Codec: codecByName(t, "length", 0), FrameTimeout: ft, IdleTimeout: 10 * time.Second}, h)
	c := dial(t, e)
	sc := h.nextOpen(t)
	frame := binary.BigEndian.AppendUint32(nil, 100)
	c.Write(append(frame, "only half of the body"...))
	t0 := time.Now()
	cause := h.closeOf(t, sc, 10*time.Second)
	if !errors.Is(cause, ErrFrameTimeout) {
		t.Fatalf("cause %v, want ErrFrameTimeout", cause)
	}
	if d := time.Since(t0); d < ft-20*time.Millisecond {
		t.Errorf("closed after %v, before the %v frame timeout", d, ft)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("client read %v, want EOF", err)
	}
}

// TestFrameTimeoutNotForSteadyFrames: complete frames keep flowing past the
// frame timeout; only an incomplete one is timed.
func TestFrameTimeoutNotForSteadyFrames(t *testing.T) {
	h := newTestHandler()
	e := start(t, Config{Loops: 1, Codec: codecByName(t, "line", 0), FrameTimeout: 100 * time.Millisecond}, h)
	c := dial(t, e)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 3)
	for i := 0; i < 10; i++ {
		c.Write([]byte("ab\n"))
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		time.Sleep(30 * time.Millisecond)
	}
	if n := e.Stats().Closed[CauseFrameTimeout]; n != 0 {
		t.Errorf("%d frame timeouts on a connection with only complete frames", n)
	}
}

// TestIdleTimeout: a silent connection closes with ErrIdleTimeout; an
// active one outlives several idle periods.
func TestIdleTimeout(t *testing.T) {
	const idle = 250 * time.Millisecond
	h := newTestHandler()
	e := start(t, Config{Loops: 1, IdleTimeout: idle}, h)
	silent := dial(t, e)
	sc := h.nextOpen(t)
	active := dial(t, e)
	h.nextOpen(t)
	t0 := time.Now()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 1)
		active.SetDeadline(time.Now().Add(10 * time.Second))
		for {
			select {
			case <-stop:
				done <- nil
				return
			case <-time.After(50 * time.Millisecond):
			}
			active.Write([]byte("k"))
			if _, err := io.ReadFull(active, buf); err != nil {
				done <- err
				return
			}
		}
	}()
	cause := h.closeOf(t, sc, 10*time.Second)
	if !errors.Is(cause, ErrIdleTimeout) {
		t.Fatalf("cause %v, want ErrIdleTimeout", cause)
	}
	if d := time.Since(t0); d < idle-20*time.Millisecond {
		t.Errorf("closed after %v, before the %v idle timeout", d, idle)
	}
	time.Sleep(3 * idle)
	close(stop)
	if err := <-done; err != nil {
		t.Fatalf("active connection: %v", err)
	}
	silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("silent client read %v, want EOF", err)
	}
}
