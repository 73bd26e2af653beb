package server

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestStartShutdownIdle: Shutdown wakes idle loops and returns once they
// exit. Were the loops left asleep (nothing wakes an idle loop but its
// eventfd), Shutdown would return only at its context's end, with
// DeadlineExceeded.
func TestStartShutdownIdle(t *testing.T) {
	e, err := New(Config{Loops: 2}, HandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown of an idle engine: %v", err)
	}
}

// TestShutdownDrains: Shutdown flushes queued output before closing, and
// closes with ErrShutdown.
func TestShutdownDrains(t *testing.T) {
	const size = 4 << 20
	h := newTestHandler()
	h.frame = func(c *Conn, frame []byte) Action {
		big := make([]byte, size)
		for i := range big {
			big[i] = byte(i)
		}
		if err := c.WriteOwned(big, nil); err != nil {
			t.Errorf("WriteOwned: %v", err)
		}
		return None
	}
	e, err := New(Config{Loops: 1, OutQueueBytes: 8 << 20, OutQueueHighBytes: 6 << 20}, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	c, err := dialSmallWindow(e.Addr().String(), 16<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc := h.nextOpen(t)
	c.Write([]byte("go"))
	waitUntil(t, 5*time.Second, "reply queued", func() bool { return e.Stats().QueuedOutBytes > 0 })

	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		shut <- e.Shutdown(ctx)
	}()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if len(got) != size {
		t.Fatalf("got %d bytes before EOF, want %d", len(got), size)
	}
	for i := range got {
		if got[i] != byte(i) {
			t.Fatalf("byte %d = %d", i, got[i])
		}
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if cause := h.closeOf(t, sc, time.Second); !errors.Is(cause, ErrShutdown) {
		t.Errorf("cause %v, want ErrShutdown", cause)
	}
	if _, err := dialSmallWindow(e.Addr().String(), 0); err == nil {
		t.Error("listener still accepts after Shutdown")
	}
	if err := e.Start(); !errors.Is(err, ErrEngineClosed) {
		t.Errorf("Start after Shutdown: %v", err)
	}
}

// TestShutdownDeadline: a peer that never reads cannot hold Shutdown past
// its context.
func TestShutdownDeadline(t *testing.T) {
	h := newTestHandler()
	h.frame = func(c *Conn, frame []byte) Action {
		c.WriteOwned(make([]byte, 8<<20), nil)
		return None
	}
	e, err := New(Config{Loops: 1, OutQueueBytes: 16 << 20, OutQueueHighBytes: 12 << 20, WriteStallTimeout: -1}, h)
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	c, err := dialSmallWindow(e.Addr().String(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc := h.nextOpen(t)
	c.Write([]byte("go"))
	waitUntil(t, 5*time.Second, "reply queued", func() bool { return e.Stats().QueuedOutBytes > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	// the drain would wait for the peer forever (no write-stall timeout):
	// Shutdown returns at its context's end, and the loops close the rest
	if err := e.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want DeadlineExceeded", err)
	}
	if cause := h.closeOf(t, sc, time.Second); !errors.Is(cause, ErrShutdown) {
		t.Errorf("cause %v, want ErrShutdown", cause)
	}
}

// TestHandlerShutdownAction: a handler returning Shutdown stops Serve.
func TestHandlerShutdownAction(t *testing.T) {
	h := newTestHandler()
	h.frame = func(c *Conn, frame []byte) Action {
		if strings.TrimSpace(string(frame)) == "quit" {
			return Shutdown
		}
		return None
	}
	e, err := New(Config{Loops: 2}, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- e.Serve(context.Background()) }()
	c := dial(t, e)
	c.Write([]byte("quit\n"))
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after a Shutdown action")
	}
}
