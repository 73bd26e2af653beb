package kv

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicenet/sluice/server"
)

// TestMain checks that no test leaves a goroutine behind: engines, worker
// pools, sweepers and Redis clients all stop.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// needTool skips the test when the external program is missing, except in
// CI (CI=true), where .ci/run installs it and its absence is a failure.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI: %v", name, err)
		}
		t.Skipf("%s not installed; skipping (CI installs it)", name)
	}
	return p
}

// startServer starts a kv server on a free loopback port with two loops
// and stops it when the test ends.
func startServer(t *testing.T, o Options) *Server {
	t.Helper()
	o.Engine.Addr = "127.0.0.1:0"
	if o.Engine.Loops == 0 {
		o.Engine.Loops = 2
	}
	s, err := Start(o)
	if errors.Is(err, server.ErrUnsupported) {
		t.Skip("the engine needs Linux")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return s
}

func portOf(t *testing.T, s *Server) string {
	t.Helper()
	_, port, err := net.SplitHostPort(s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// dial connects to s with a deadline for the whole test step.
func dial(t *testing.T, s *Server) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetDeadline(time.Now().Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	return c
}

// redisServer is a redis-server this test started, on a free port with a
// temporary directory; it is killed by pid when the test ends.
type redisServer struct {
	addr string
	cmd  *exec.Cmd
}

func startRedis(t *testing.T) *redisServer {
	t.Helper()
	bin := needTool(t, "redis-server")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", dir, "--daemonize", "no", "--loglevel", "warning")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &redisServer{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", r.addr, time.Second)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, err = c.Write([]byte("PING\r\n"))
			buf := make([]byte, 7)
			if err == nil {
				_, err = c.Read(buf)
			}
			c.Close()
			if err == nil && string(buf) == "+PONG\r\n" {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not come up: %v", r.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// eventually polls cond (engine counters are published once per loop turn)
// for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// serverLoops is an engine configuration with n loops.
func serverLoops(n int) server.Config { return server.Config{Loops: n} }
