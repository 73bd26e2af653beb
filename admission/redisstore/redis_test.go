package redisstore

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"go.uber.org/goleak"
)

// The package's tests share one redis-server, started on first use on a free
// loopback port with a temporary directory and no persistence, and killed by
// pid when the tests end (TestMain).
var (
	srvOnce sync.Once
	srv     *redisServer
	srvErr  error
	srvSkip string
)

type redisServer struct {
	cmd  *exec.Cmd
	addr string
	dir  string
	log  bytes.Buffer
}

func TestMain(m *testing.M) {
	code := m.Run()
	if srv != nil {
		srv.stop()
	}
	// Every client is closed by its test's cleanup: nothing may linger.
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// redisAddr returns the address of the shared test server, skipping the test
// when redis-server is not installed outside CI and failing it in CI.
func redisAddr(t testing.TB) string {
	t.Helper()
	srvOnce.Do(func() { srv, srvSkip, srvErr = startRedis() })
	switch {
	case srvSkip != "" && os.Getenv("CI") == "true":
		t.Fatalf("%s, and CI=true: CI must install redis-server (.ci/run does)", srvSkip)
	case srvSkip != "":
		t.Skipf("%s: skipping the Redis tests (install redis-server to run them; with CI=true this fails)", srvSkip)
	case srvErr != nil:
		t.Fatal(srvErr)
	}
	return srv.addr
}

func startRedis() (*redisServer, string, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, "redis-server not found in PATH", nil
	}
	dir, err := os.MkdirTemp("", "sluice-redis-")
	if err != nil {
		return nil, "", err
	}
	var lastErr error
	for range 3 { // a freed port may be taken again before redis binds it
		port, err := freePort()
		if err != nil {
			return nil, "", err
		}
		s := &redisServer{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir}
		s.cmd = exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--loglevel", "warning")
		s.cmd.Stdout, s.cmd.Stderr = &s.log, &s.log
		if err := s.cmd.Start(); err != nil {
			return nil, "", fmt.Errorf("start redis-server: %w", err)
		}
		if lastErr = s.waitPing(5 * time.Second); lastErr == nil {
			return s, "", nil
		}
		s.kill()
		lastErr = fmt.Errorf("%w; redis-server output:\n%s", lastErr, s.log.String())
	}
	os.RemoveAll(dir)
	return nil, "", lastErr
}

func (s *redisServer) waitPing(d time.Duration) error {
	c := redisClientAt(s.addr)
	defer c.Close()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server at %s did not answer PING: %w", s.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *redisServer) kill() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Kill() // by pid: only the server this test started
		_ = s.cmd.Wait()
	}
}

func (s *redisServer) stop() {
	s.kill()
	os.RemoveAll(s.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// newClient returns a client of the shared server closed at the end of the
// test: each call is a separate connection pool, as a separate process
// would have.
func newClient(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: redisAddr(t), Protocol: 2, MaintNotificationsConfig: noMaint()})
	t.Cleanup(func() { c.Close() })
	return c
}

// prefix returns a key prefix unique to the test, so tests share the server
// without sharing keys: the same for every call in one run of a test, and
// another for each run (with -count=3 the runs share the server too).
func prefix(t testing.TB) string {
	p, _ := prefixes.LoadOrStore(t, fmt.Sprintf("test:%s:%d:", t.Name(), prefixSeq.Add(1)))
	return p.(string)
}

var (
	prefixes  sync.Map // testing.TB → its prefix
	prefixSeq atomic.Int64
)

func redisClientAt(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond, MaintNotificationsConfig: noMaint()})
}

// noMaint disables go-redis's maintenance notifications (a Redis Cloud and
// Enterprise feature the test server lacks). In its default "auto" mode
// go-redis v9.23.0 left a circuit-breaker cleanup goroutine
// (maintnotifications.(*CircuitBreakerManager).cleanupLoop) running after
// Client.Close in our runs against Redis 7.0, which goleak reports.
func noMaint() *maintnotifications.Config {
	return &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}
