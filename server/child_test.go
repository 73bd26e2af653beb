package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary re-executes itself (TestMain checks childEnv) to run a
// server in a separate process: lowering RLIMIT_NOFILE or measuring
// resident memory must not touch the parent. The child prints "addr HOST:PORT"
// and then answers one JSON line (childReport) per line it reads on stdin;
// stdin's end of file shuts it down.

// childReport is what a child says about itself.
type childReport struct {
	Stats      Stats
	CPUNanos   int64 // user + system CPU time of the child so far
	RSSBytes   int64 // VmRSS
	Goroutines int
}

// runChild runs a subprocess role: "emfile" (an echo engine under a
// RLIMIT_NOFILE a few fds above what it has open), "serve" (an echo engine)
// or "netserve" (a goroutine-per-connection net echo server, for
// comparison).
func runChild(role string) int {
	var e *Engine
	var addr string
	var netConns atomic.Int64 // netserve: connections accepted
	switch role {
	case "emfile", "serve", "emfile-policy":
		begin := func() error {
			var err error
			cfg := Config{Loops: 1, AcceptRetryDelay: 100 * time.Millisecond}
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
		if role != "serve" {
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
	case "netserve":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Println("error", err)
			return 1
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

// TestEMFILE: with RLIMIT_NOFILE lowered (in a child process), accept4
// fails with EMFILE; the engine pauses its listener instead of spinning (CPU
// stays low, a bounded number of retries), keeps serving the connections it
// has, and accepts the waiting ones once fds are free.
func TestEMFILE(t *testing.T) {
	ch := startChild(t, "emfile")
	const total = 12
	conns := dialN(t, ch.addr, total)
	var r0 childReport
	waitUntil(t, 10*time.Second, "EMFILE pause", func() bool {
		r0 = ch.report(t, "")
		return r0.Stats.AcceptPauses > 0
	})
	accepted := r0.Stats.Accepted
	if accepted == 0 || accepted >= total {
		t.Fatalf("accepted %d of %d under the lowered limit", accepted, total)
	}
	t0 := time.Now()
	time.Sleep(time.Second)
	r1 := ch.report(t, "")
	window := time.Since(t0) // measured: a loaded machine sleeps longer
	cpu := time.Duration(r1.CPUNanos - r0.CPUNanos)
	retries := r1.Stats.AcceptPauses - r0.Stats.AcceptPauses
	t.Logf("over %v at EMFILE: child CPU %v, %d accept retries, %d accepted", window, cpu, retries, r1.Stats.Accepted)
	if cpu > window/4 { // a spinning loop would burn the whole window
		t.Errorf("child used %v CPU in %v at EMFILE", cpu, window)
	}
	if retries > uint64(window/(100*time.Millisecond))+5 { // r0 was read just before t0
		t.Errorf("%d accept retries in %v with a 100ms retry delay", retries, window)
	}
	// the accepted connections keep working
	if err := echoOnce(conns[0], "still here"); err != nil {
		t.Fatalf("accepted connection at EMFILE: %v", err)
	}
	serveWaiting(t, conns, int(accepted))
	waitUntil(t, 10*time.Second, "every connection accepted", func() bool {
		return ch.report(t, "").Stats.Accepted >= total
	})
}

// dialN opens n connections to addr, closed when the test ends.
func dialN(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	for i := 0; i < n; i++ {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		conns = append(conns, c)
	}
	return conns
}

// serveWaiting frees the fds of the first accepted connections (closing
// them) and then expects the waiting rest to be accepted as fds free up,
// echoing each, a batch of at most accepted (at least one) at a time.
func serveWaiting(t *testing.T, conns []net.Conn, accepted int) {
	t.Helper()
	for _, c := range conns[:accepted] {
		c.Close()
	}
	rest := conns[accepted:]
	for len(rest) > 0 {
		batch := rest[:min(max(accepted, 1), len(rest))]
		for i, c := range batch {
			if err := echoOnce(c, fmt.Sprint("late ", i)); err != nil {
				t.Fatalf("waiting connection after fds were freed: %v", err)
			}
		}
		for _, c := range batch {
			c.Close()
		}
		rest = rest[len(batch):]
	}
}

// echoOnce sends msg and expects it back within 5 s.
func echoOnce(c net.Conn, msg string) error {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(msg)); err != nil {
		return err
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != msg {
		return fmt.Errorf("echo %q, want %q", buf, msg)
	}
	return nil
}
