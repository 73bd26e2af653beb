package server

import (
	"bufio"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol"

	"github.com/sluicenet/sluice/server/internal/netpoll"
)

// TestLoopParksWhilePoolBusy, on each backend: a loop that sleeps while
// the pool has a task sleeps in Go's netpoller ("IO wait": on a duplicate
// of the epoll fd, or on the eventfd the ring signals), which frees its P
// at once for the workers, and in its own epoll_pwait or io_uring_enter
// ("syscall", no netpoller round trip) when the pool is idle. A P held in
// a blocking syscall is handed to a runnable worker only when sysmon
// retakes it, up to 10 ms later (docs/OVERLOAD.md, The worker pool's law).
func TestLoopParksWhilePoolBusy(t *testing.T) { poolOnEachBackend(t, testLoopParks) }

// poolOnEachBackend runs test as a subtest per backend, each with a
// one-loop engine of its own whose pool is pc (line-delimited frames); a
// backend the kernel lacks, or that SLUICE_TEST_BACKEND overrides, is
// skipped.
func poolOnEachBackend(t *testing.T, test func(*testing.T, func(PoolConfig) *Engine)) {
	for _, b := range []Backend{BackendEpoll, BackendIOURing} {
		t.Run(b.String(), func(t *testing.T) {
			if err := netpoll.CheckURing(); b == BackendIOURing && err != nil {
				t.Skipf("io_uring backend unavailable: %v", err)
			}
			test(t, func(pc PoolConfig) *Engine {
				e := start(t, Config{Loops: 1, Codec: protocol.Delimited{}, Backend: b, Pool: pc}, HandlerFuncs{})
				if e.Backend() != b {
					t.Skipf("engine runs %v (%s=%s)", e.Backend(), backendEnv, os.Getenv(backendEnv))
				}
				return e
			})
		})
	}
}

func testLoopParks(t *testing.T, startPool func(PoolConfig) *Engine) {
	h := &poolHandler{release: make(chan struct{})}
	e := startPool(PoolConfig{Handler: h, Workers: 1})
	c := dial(t, e)
	r := bufio.NewReader(c)
	// Each round's reply needs a wake-up of the parked loop (the worker
	// pushes it to the loop's inbox). On io_uring the ring's own signal for
	// that wake-up comes late or not at all after the first (an RCU
	// callback; TestRegisterEventfd), so rounds past the first hang unless
	// wake reaches the parked loop directly.
	for i := range 5 {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("x\n")); err != nil {
			t.Fatal(err)
		}
		waitLoopState(t, "IO wait", "the pool holds a frame")
		h.release <- struct{}{}
		line, err := r.ReadString('\n')
		if err != nil || line != "x\n" {
			t.Fatalf("round %d: reply %q, %v", i, line, err)
		}
	}
	waitLoopState(t, "syscall", "the pool is idle")
}

// TestParkedLoopReadsInput, on each backend: a loop parked while the pool
// holds a frame is woken by input on another connection alone, with no
// wake-up from another goroutine (which would kick it), from its first
// park on: the io_uring ring's eventfd signals must be on while it sleeps.
func TestParkedLoopReadsInput(t *testing.T) { poolOnEachBackend(t, testParkedLoopReads) }

func testParkedLoopReads(t *testing.T, startPool func(PoolConfig) *Engine) {
	h := &poolHandler{release: make(chan struct{}), started: make(chan string, 4)}
	e := startPool(PoolConfig{Handler: h, Workers: 2, Unordered: true})
	c1, c2 := dial(t, e), dial(t, e)
	defer close(h.release) // frees both workers at the end
	if _, err := c1.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	if f := <-h.started; f != "x" {
		t.Fatalf("first frame %q", f)
	}
	waitLoopState(t, "IO wait", "the pool holds a frame")
	if _, err := c2.Write([]byte("y\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-h.started:
		if f != "y" {
			t.Fatalf("second frame %q", f)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the parked loop did not read the second connection's frame within 5 s")
	}
}

// waitLoopState waits until the loop goroutine sleeps in the state want
// (the scheduler's word in a goroutine dump), and fails after 5 s.
func waitLoopState(t *testing.T, want, why string) {
	t.Helper()
	var got string
	if !poll(5*time.Second, func() bool { got = loopState(); return got == want }) {
		t.Fatalf("%s: the sleeping loop is in %q, want %q", why, got, want)
	}
}

// loopState returns the scheduler state of the (first) loop goroutine, from
// a dump of every goroutine: "syscall", "IO wait", "runnable"...
func loopState() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "server.(*loop).run(") {
			continue
		}
		head, _, _ := strings.Cut(g, "\n")
		_, st, ok := strings.Cut(head, "[")
		if !ok {
			return ""
		}
		st, _, _ = strings.Cut(st, "]")
		st, _, _ = strings.Cut(st, ",")
		return st
	}
	return ""
}
