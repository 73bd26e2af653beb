package server

import (
	"context"
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
