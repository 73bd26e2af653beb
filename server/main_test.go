package server

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if child := os.Getenv(childEnv); child != "" {
		os.Exit(runChild(child))
	}
	goleak.VerifyTestMain(m)
}

// childEnv names the subprocess role when the test binary re-executes
// itself (RLIMIT_NOFILE tests, memory measurement), so the parent's limits
// and heap are untouched.
const childEnv = "SLUICE_SERVER_TEST_CHILD"

// start runs an engine on a loopback port and shuts it down at cleanup.
func start(t testing.TB, cfg Config, h Handler) *Engine {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	e, err := New(cfg, h)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := e.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return e
}

// dial connects to e and closes the connection at cleanup.
func dial(t testing.TB, e *Engine) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", e.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}
