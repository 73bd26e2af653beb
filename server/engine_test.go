package server

import (
	"context"
	"testing"
	"time"
)

func TestStartShutdownIdle(t *testing.T) {
	e, err := New(Config{Loops: 2}, HandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	t0 := time.Now()
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("Shutdown of an idle engine took %v", d)
	}
}
