package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicenet/sluice/server/internal/netpoll"
)

func TestMain(m *testing.M) {
	if b := os.Getenv(backendEnv); b != "" {
		var err error
		if testBackend, err = ParseBackend(b); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	if child := os.Getenv(childEnv); child != "" {
		os.Exit(runChild(child))
	}
	goleak.VerifyTestMain(m)
}

// backendEnv selects the backend every engine and poller in the suite runs
// on ("epoll", the default, or "io_uring"; Config.Backend is overridden).
// Subprocesses inherit it. With io_uring where the kernel refuses it, engines
// fall back to epoll and the suite still passes.
const backendEnv = "SLUICE_TEST_BACKEND"

// childEnv names the subprocess role when the test binary re-executes
// itself (RLIMIT_NOFILE tests, memory measurement), so the parent's limits
// and heap are untouched.
const childEnv = "SLUICE_SERVER_TEST_CHILD"

// start runs an engine on a loopback port and shuts it down at cleanup.
func start(t testing.TB, cfg Config, h Handler) *Engine {
	t.Helper()
	return startWith(t, cfg, h, nil)
}

// startWith is start with a hook that may adjust the engine's internals
// between New and Start.
func startWith(t testing.TB, cfg Config, h Handler, adjust func(*Engine)) *Engine {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	e, err := New(cfg, h)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if adjust != nil {
		adjust(e)
	}
	if err := e.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := checkBackend(e); err != nil {
		t.Fatal(err)
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

// checkBackend reports an engine that does not run the suite's backend
// (SLUICE_TEST_BACKEND) although the kernel offers it.
func checkBackend(e *Engine) error {
	if err := netpoll.CheckURing(); testBackend == BackendIOURing && err == nil && e.Backend() != BackendIOURing {
		return fmt.Errorf("engine runs %v, want %v", e.Backend(), testBackend)
	}
	return nil
}

// dialSmallWindow connects with SO_RCVBUF set before connect(2) (shrinking
// it afterwards makes Linux drop segments it already advertised room for, so
// the test would measure retransmit backoff instead of the server).
func dialSmallWindow(addr string, rcvbuf int) (*net.TCPConn, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	if rcvbuf <= 0 {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		return c.(*net.TCPConn), nil
	}
	d.Control = func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
		})
		if err != nil {
			return err
		}
		return serr
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
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

// closeEvent is one OnClose call.
type closeEvent struct {
	c     *Conn
	cause error
}

// testHandler echoes frames with WriteFrame unless frame is set, and
// records opens and closes.
type testHandler struct {
	opened chan *Conn
	closed chan closeEvent
	frame  func(c *Conn, frame []byte) Action
}

func newTestHandler() *testHandler {
	return &testHandler{opened: make(chan *Conn, 1024), closed: make(chan closeEvent, 1024)}
}

func (h *testHandler) OnOpen(c *Conn) Action {
	select {
	case h.opened <- c:
	default:
	}
	return None
}

func (h *testHandler) OnFrame(c *Conn, frame []byte) Action {
	if h.frame != nil {
		return h.frame(c, frame)
	}
	if err := c.WriteFrame(frame); err != nil {
		c.CloseWithError(err)
	}
	return None
}

func (h *testHandler) OnClose(c *Conn, cause error) {
	select {
	case h.closed <- closeEvent{c, cause}:
	default:
	}
}

// nextOpen waits for the next OnOpen.
func (h *testHandler) nextOpen(t testing.TB) *Conn {
	t.Helper()
	select {
	case c := <-h.opened:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no OnOpen within 10s")
		return nil
	}
}

// closeOf waits for c's OnClose and returns its cause; other connections'
// closes seen meanwhile are put back.
func (h *testHandler) closeOf(t testing.TB, c *Conn, within time.Duration) error {
	t.Helper()
	timeout := time.After(within)
	var others []closeEvent
	defer func() {
		for _, ev := range others {
			h.closed <- ev
		}
	}()
	for {
		select {
		case ev := <-h.closed:
			if ev.c == c {
				return ev.cause
			}
			others = append(others, ev)
		case <-timeout:
			t.Fatalf("connection not closed within %v", within)
			return nil
		}
	}
}

// waitUntil polls cond every few milliseconds for up to d.
func waitUntil(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitStats waits until the engine's counters (published once per loop
// turn) satisfy cond, and returns them.
func waitStats(t testing.TB, e *Engine, what string, cond func(Stats) bool) Stats {
	t.Helper()
	var s Stats
	deadline := time.Now().Add(5 * time.Second)
	for s = e.Stats(); !cond(s); s = e.Stats() {
		if time.Now().After(deadline) {
			t.Errorf("stats never showed %s: %+v", what, s)
			return s
		}
		time.Sleep(2 * time.Millisecond)
	}
	return s
}

// busyFor keeps the calling goroutine busy for d of wall time: a handler
// that holds its loop at least that long on any machine. The tests use it
// where the point is the loop's time (queueing delay, caps, refusals), so
// a faster CPU cannot shorten it; internal/spin, a fixed amount of CPU
// work, is for comparing servers, which must do the same work.
func busyFor(d time.Duration) {
	for t0 := time.Now(); time.Since(t0) < d; {
	}
}

// loopStage returns e's first loop's admission stage (Config.Admission set).
func loopStage(e *Engine) *stage { return e.loops[0].shed.(*stage) }
