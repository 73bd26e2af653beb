package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/protocol"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/server/internal/netpoll"
	"github.com/sluicenet/sluice/tlsutil"
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
	return dialAddr(t, e.Addr().String())
}

// dialAddr connects to addr and closes the connection at cleanup; it fails
// the test (t.Fatalf) if it cannot connect within 5 s.
func dialAddr(t testing.TB, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
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

// poll calls cond every 2 ms until it holds or d has passed, and reports
// whether it held. The wait helpers (waitUntil, waitStats, waitReport,
// waitLoopState) are poll with what they read and how a timeout fails the
// test.
func poll(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// waitUntil polls cond every few milliseconds for up to d, and stops the
// test (t.Fatalf) if it never holds.
func waitUntil(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !poll(d, cond) {
		t.Fatalf("timed out after %v waiting for %s", d, what)
	}
}

// waitStats waits until the engine's counters (published once per loop
// turn) satisfy cond, and returns them. If they do not within 5 s it fails
// the test with t.Errorf, not t.Fatalf, and returns the last ones read: the
// callers' further checks still run.
func waitStats(t testing.TB, e *Engine, what string, cond func(Stats) bool) Stats {
	t.Helper()
	var s Stats
	if !poll(5*time.Second, func() bool { s = e.Stats(); return cond(s) }) {
		t.Errorf("stats never showed %s: %+v", what, s)
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

func codecByName(t *testing.T, name string, maxFrame int) protocol.Codec {
	c, err := protocol.ByName(name, maxFrame)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func protocolLength() protocol.Codec { return protocol.LengthPrefixed{Header: protocol.Fixed32} }

// pipelined returns n length-prefixed frames of size bytes each, as one
// buffer.
func pipelined(n, size int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		b = binary.BigEndian.AppendUint32(b, uint32(size))
		for j := 0; j < size; j++ {
			b = append(b, byte(i+j))
		}
	}
	return b
}

// echoHandlerAlloc is the echo handler of cmd/echo.
var echoHandlerAlloc = HandlerFuncs{Frame: func(c *Conn, frame []byte) Action {
	if err := c.WriteFrame(frame); err != nil {
		c.CloseWithError(err)
	}
	return None
}}

// roundTrips has every client write out and read as many bytes back,
// rounds times, all clients at once (echoed pipelined frames).
func roundTrips(tb testing.TB, clients []net.Conn, out []byte, rounds int) {
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func(c net.Conn) {
			defer wg.Done()
			in := make([]byte, len(out))
			for r := 0; r < rounds; r++ {
				if _, err := c.Write(out); err != nil {
					tb.Error(err)
					return
				}
				if _, err := io.ReadFull(c, in); err != nil {
					tb.Error(err)
					return
				}
			}
		}(c)
	}
	wg.Wait()
}

// streamFor builds the bytes a client sends for codec: frames of random
// sizes up to maxFrame, total about size bytes. The echo of a stream is the
// stream itself for raw, length and line.
func streamFor(codec string, rng *rand.Rand, size, maxFrame int) []byte {
	var out []byte
	for len(out) < size {
		n := rng.IntN(maxFrame + 1)
		switch codec {
		case "raw":
			for i := 0; i < n; i++ {
				out = append(out, byte(rng.Uint32()))
			}
		case "length":
			out = binary.BigEndian.AppendUint32(out, uint32(n))
			for i := 0; i < n; i++ {
				out = append(out, byte(rng.Uint32()))
			}
		case "line":
			for i := 0; i < n; i++ {
				out = append(out, 'a'+byte(rng.IntN(26)))
			}
			out = append(out, '\n')
		}
	}
	return out
}

// lineConn is a client of the line codec.
type lineConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *lineConn) line(t testing.TB) string {
	t.Helper()
	s, err := c.r.ReadString('\n')
	if err != nil {
		t.Fatalf("read: %v (got %q)", err, s)
	}
	return strings.TrimSuffix(s, "\n")
}

func dialLine(t testing.TB, addr string, local net.IP) *lineConn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if local != nil {
		d.LocalAddr = &net.TCPAddr{IP: local}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %v: %v", local, err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return &lineConn{Conn: c, r: bufio.NewReader(c)}
}

// newAdmitter builds an Admitter for tests, failing the test on error.
func newAdmitter(t testing.TB, cfg admission.Config) *admission.Admitter {
	t.Helper()
	a, err := admission.NewAdmitter(cfg)
	if err != nil {
		t.Fatalf("NewAdmitter: %v", err)
	}
	return a
}

// poolHandler sleeps for the frame's first byte × 10 ms ('0'..'9'), waits
// for release to be closed when it is set, then echoes; it records the
// deadline it saw.
type poolHandler struct {
	deadlines chan time.Duration
	release   chan struct{}
	started   chan string // if set, each frame as a worker starts it (buffered: never blocks the worker)
}

func (h *poolHandler) ServeFrame(ctx context.Context, c *Conn, frame []byte) Action {
	if h.started != nil {
		select {
		case h.started <- string(frame):
		default:
		}
	}
	if d, ok := ctx.Deadline(); ok && h.deadlines != nil {
		select {
		case h.deadlines <- time.Until(d):
		default:
		}
	}
	if len(frame) > 0 && frame[0] >= '0' && frame[0] <= '9' {
		select {
		case <-time.After(time.Duration(frame[0]-'0') * 10 * time.Millisecond):
		case <-ctx.Done():
			return None
		}
	}
	if h.release != nil {
		select {
		case <-h.release:
		case <-ctx.Done():
			return None
		}
	}
	if err := c.WriteFrame(frame); err != nil {
		c.CloseWithError(err)
	}
	return None
}

// doneSending marks sent (a count of frames written) final for
// readAnswers.
func doneSending(sent *atomic.Int64) { sent.Add(-1 << 40) }

// readAnswers reads c's answers, counting served and refused ones, until
// the writer has called doneSending and every frame it sent is answered.
func readAnswers(t *testing.T, who string, c *lineConn, sent, served, refused *atomic.Int64) {
	for n := int64(0); ; n++ {
		for s := sent.Load(); n >= s; s = sent.Load() {
			if s < 0 {
				if n >= s+1<<40 {
					return
				}
				break
			}
			// every frame sent so far is answered: a read now could wait
			// for a frame the writer never sends, past its doneSending
			time.Sleep(100 * time.Microsecond)
		}
		line, err := c.r.ReadString('\n')
		if err != nil {
			t.Errorf("%s: %v after %d answers", who, err, n)
			return
		}
		if _, _, ok := protocol.ParseRejectText([]byte(strings.TrimSuffix(line, "\n"))); ok {
			refused.Add(1)
		} else {
			served.Add(1)
		}
	}
}

// tenantShares drives ten tenants against e (capacity about 2,000
// frames/s), one of them sending ten times more than each of the others,
// and checks that the heavy one is served at most twice a light one's
// mean, with refusals for reason fair (fairRejects reads them).
func tenantShares(t *testing.T, e *Engine, stagger bool, fairRejects func(*Engine) uint64) {
	const tenants, run = 10, 1500 * time.Millisecond
	if runtime.GOMAXPROCS(0) < 2 {
		// the clients must outpace the server: on one P their goroutines
		// take turns with the handlers and never overload the loop
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	// A machine whose cores other processes take may give the loop a
	// tenth of its capacity: a few frames per tenant per window, shares
	// too coarse to judge (four CPU hogs: heavy 48 against light 21, and
	// 153 against 56 with the service time measured at 2.1 ms for 0.5 ms
	// of work). A run that fails is tried once more; the second is judged.
	for attempt := 1; ; attempt++ {
		var served, refused [tenants]atomic.Int64
		var wg sync.WaitGroup
		stop := time.Now().Add(run)
		for i := 0; i < tenants; i++ {
			every := 4 * time.Millisecond // 250 frames/s each, 2,250/s for the nine light tenants
			if i == 0 {
				every = 400 * time.Microsecond // the heavy tenant: 2,500/s
			}
			c := dialLine(t, e.Addr().String(), net.IPv4(127, 0, 0, byte(2+i)))
			c.SetDeadline(time.Now().Add(run + 10*time.Second))
			var sent atomic.Int64
			wg.Add(2)
			go func() { // open loop: one frame per tick, whatever the replies
				defer wg.Done()
				if stagger { // the light tenants' ticks spread over their period
					time.Sleep(time.Duration(i) * 4 * time.Millisecond / tenants)
				}
				tick := time.NewTicker(every)
				defer tick.Stop()
				for time.Now().Before(stop) {
					<-tick.C
					if _, err := c.Write([]byte("x\n")); err != nil {
						t.Error(err)
						return
					}
					sent.Add(1)
				}
				doneSending(&sent) // the reader stops once it has every answer
			}()
			go func() {
				defer wg.Done()
				readAnswers(t, fmt.Sprintf("tenant %d", i), c, &sent, &served[i], &refused[i])
			}()
		}
		wg.Wait()
		var lightSum int64
		for i := 1; i < tenants; i++ {
			lightSum += served[i].Load()
		}
		lightMean := float64(lightSum) / (tenants - 1)
		heavy := served[0].Load()
		st := e.Stats().Admission
		t.Logf("attempt %d: served: heavy %d, light mean %.0f; refused heavy %d; refusals by reason %v, in the pool %v (submitted %d, served %d; cap %v, service %v)", attempt, heavy, lightMean, refused[0].Load(), st.Rejects, st.Pool.Rejects, st.Pool.Submitted, st.Pool.Served, st.QueueDelayCap, st.ServiceTime)
		if lightMean > 0 && float64(heavy) <= 2*lightMean {
			break
		}
		if attempt == 1 {
			continue
		}
		t.Errorf("heavy tenant served %d, light tenants %.0f on average: want at most twice theirs", heavy, lightMean)
		break
	}
	if fairRejects(e) == 0 {
		t.Error("no refusal with reason fair")
	}
}

// The test binary re-executes itself (TestMain checks childEnv) to run a
// server in a separate process: lowering RLIMIT_NOFILE or measuring
// resident memory must not touch the parent. The child prints "addr HOST:PORT"
// and then answers one JSON line (childReport) per line it reads on stdin;
// stdin's end of file shuts it down.

// childReport is what a child says about itself.
type childReport struct {
	Stats      Stats
	CPUNanos   int64  // user + system CPU time of the child so far
	RSSBytes   int64  // VmRSS
	HeapInuse  uint64 // runtime.MemStats.HeapInuse
	Goroutines int
}

// runChild runs a subprocess role: "emfile" (an echo engine under a
// RLIMIT_NOFILE a few fds above what it has open), "serve" (an echo engine)
// or "netserve" (a goroutine-per-connection net echo server, for
// comparison).
// childTLS is the TLS configuration of the child servers: a certificate of
// their own (the parent does not verify it: it measures memory).
func childTLS() (*tls.Config, error) {
	cert, _, err := tlsutil.SelfSigned()
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}}, nil
}

func runChild(role string) int {
	var e *Engine
	var addr string
	var netConns atomic.Int64 // netserve: connections accepted
	switch role {
	case "emfile", "serve", "emfile-policy", "tlsserve":
		begin := func() error {
			var err error
			cfg := Config{Loops: 1, AcceptRetryDelay: 100 * time.Millisecond}
			if role == "tlsserve" {
				if cfg.TLS, err = childTLS(); err != nil {
					return err
				}
			}
			if role == "emfile-policy" { // the admission gate pauses too (TestEMFILEPolicy)
				if cfg.Admission, err = childPolicy(); err != nil {
					return err
				}
			}
			e, err = New(cfg, HandlerFuncs{
				Frame: func(c *Conn, frame []byte) Action {
					c.Write(frame)
					return None
				},
			})
			if err == nil {
				err = e.Start()
			}
			if err == nil {
				err = checkBackend(e)
			}
			return err
		}
		if err := begin(); err != nil {
			fmt.Println("error", err)
			return 1
		}
		if role != "serve" && role != "tlsserve" {
			rssBytes() // opens a file: initialises the runtime's poller (two fds) while fds are plentiful
			fds, _ := os.ReadDir("/proc/self/fd")
			limit := uint64(len(fds) + 4) // room for a few connections, then EMFILE
			// io_uring's multishot accept reads RLIMIT_NOFILE when it is
			// armed, so a limit lowered under an armed one would only apply
			// at its next arming: that engine, having counted what it opens,
			// makes way for one started under the lowered limit.
			uringAccept := e.Backend() == BackendIOURing
			if uringAccept {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := e.Shutdown(ctx)
				cancel()
				if err != nil {
					fmt.Println("error", err)
					return 1
				}
			}
			var rl unix.Rlimit
			unix.Getrlimit(unix.RLIMIT_NOFILE, &rl)
			rl.Cur = limit
			if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
				fmt.Println("error", err)
				return 1
			}
			if uringAccept {
				if err := begin(); err != nil {
					fmt.Println("error", err)
					return 1
				}
			}
		}
		addr = e.Addr().String()
	case "netserve", "tlsnetserve":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		if role == "tlsnetserve" { // the Go net + crypto/tls server TestIdleMemory compares
			cfg, err := childTLS()
			if err != nil {
				fmt.Println("error", err)
				return 1
			}
			ln = tls.NewListener(ln, cfg)
		}
		defer ln.Close()
		addr = ln.Addr().String()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					fmt.Fprintln(os.Stderr, "netserve: accept:", err)
					return
				}
				netConns.Add(1)
				go func() { // the raw echo loop of bench/peers (io.Copy would splice through a pipe: 3 fds per connection)
					defer c.Close()
					buf := make([]byte, 4096)
					for {
						n, err := c.Read(buf)
						if n > 0 {
							if _, werr := c.Write(buf[:n]); werr != nil {
								return
							}
						}
						if err != nil {
							return
						}
					}
				}()
			}
		}()
	default:
		fmt.Println("unknown child role", role)
		return 2
	}
	fmt.Println("addr", addr)
	sc := bufio.NewScanner(os.Stdin)
	enc := json.NewEncoder(os.Stdout)
	for sc.Scan() {
		if sc.Text() == "gc" {
			runtime.GC()
		}
		var r childReport
		if e != nil {
			r.Stats = e.Stats()
		} else {
			r.Stats.ConnsOpen = netConns.Load()
		}
		var ru unix.Rusage
		unix.Getrusage(unix.RUSAGE_SELF, &ru)
		r.CPUNanos = ru.Utime.Nano() + ru.Stime.Nano()
		r.RSSBytes = rssBytes()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		r.HeapInuse = ms.HeapInuse
		r.Goroutines = runtime.NumGoroutine()
		enc.Encode(r)
	}
	if e != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.Shutdown(ctx)
	}
	return 0
}

// childPolicy is the admission policy of the "emfile-policy" child.
func childPolicy() (AdmissionPolicy, error) {
	adm, err := admission.NewAdmitter(admission.Config{MemoryLimitBytes: -1,
		Gate: admission.GateConfig{FDPause: 100 * time.Millisecond}})
	return AdmissionPolicy{Admitter: adm}, err
}

// rssBytes reads VmRSS from /proc/self/status.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return -1
}

// child is a running child process.
type child struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	addr string
}

func startChild(t testing.TB, role string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := &child{cmd: cmd, in: in, out: bufio.NewReader(outPipe)}
	t.Cleanup(ch.stop)
	line, err := ch.out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "addr ") {
		t.Fatalf("child said %q, %v", line, err)
	}
	ch.addr = strings.TrimSpace(strings.TrimPrefix(line, "addr "))
	return ch
}

// report asks the child for a report; cmd "gc" runs a GC first.
func (ch *child) report(t testing.TB, cmd string) childReport {
	t.Helper()
	fmt.Fprintln(ch.in, cmd)
	line, err := ch.out.ReadString('\n')
	if err != nil {
		t.Fatalf("child report: %v", err)
	}
	var r childReport
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("child report %q: %v", line, err)
	}
	return r
}

// stop closes the child's stdin and waits for it (killing it after 10 s).
func (ch *child) stop() {
	if ch.in == nil {
		return
	}
	ch.in.Close()
	ch.in = nil
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, ch.out)
		ch.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		ch.cmd.Process.Kill()
		<-done
	}
}
