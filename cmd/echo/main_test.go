package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the echo command: with ECHO_TEST_MAIN=1 it
// runs main with the arguments after "--".
func TestMain(m *testing.M) {
	if os.Getenv("ECHO_TEST_MAIN") == "1" {
		for i, a := range os.Args {
			if a == "--" {
				os.Args = append([]string{"echo"}, os.Args[i+1:]...)
				break
			}
		}
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// command is the echo command running in a child process.
type command struct {
	cmd    *exec.Cmd
	addr   string        // from the "listening on" line
	stdout *bufio.Reader // what follows that line

	mu     sync.Mutex
	stderr strings.Builder
	admin  chan string // the "admin on http://..." address, once
	errEOF chan struct{}
}

// startCommand runs the command with args, reads its first stdout line
// and returns once it is listening. It is killed (by pid) at cleanup if the
// test did not stop it.
func startCommand(t *testing.T, args ...string) *command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c := &command{admin: make(chan string, 1), errEOF: make(chan struct{})}
	c.cmd = exec.CommandContext(ctx, os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...)
	c.cmd.Env = append(os.Environ(), "ECHO_TEST_MAIN=1")
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := c.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
	})
	go func() { // collect stderr, and pick out the admin line
		defer close(c.errEOF)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			line := sc.Text()
			c.mu.Lock()
			c.stderr.WriteString(line + "\n")
			c.mu.Unlock()
			if a, ok := strings.CutPrefix(line, "admin on http://"); ok {
				c.admin <- a
			}
		}
	}()
	c.stdout = bufio.NewReader(out)
	line, err := c.stdout.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		t.Fatalf("first line %q (%v), want \"listening on HOST:PORT\"; stderr:\n%s", line, err, c.errText())
	}
	c.addr = addr
	return c
}

func (c *command) errText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

// stop sends SIGTERM and checks exit status 0 and that stdout held
// nothing after the listening line.
func (c *command) stop(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(c.stdout)
	<-c.errEOF
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v; stderr:\n%s", err, c.errText())
	}
	if len(rest) != 0 {
		t.Errorf("stdout after the listening line: %q (the bench runner expects one line)", rest)
	}
}

func echoOnce(t *testing.T, addr, msg string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(conn, got); err != nil || string(got) != msg {
		t.Fatalf("echo %q %v, want %q", got, err, msg)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestAdminAddr: with -admin-addr the command serves /metrics with the
// engine's metrics (histograms and the log limiter's counter included)
// and /readyz, announces the admin address on stderr, keeps stdout to the
// one listening line, and exits 0 on SIGTERM.
func TestAdminAddr(t *testing.T) {
	c := startCommand(t, "-addr", "127.0.0.1:0", "-codec", "line", "-admin-addr", "127.0.0.1:0")
	var adm string
	select {
	case adm = <-c.admin:
	case <-time.After(10 * time.Second):
		t.Fatalf("no admin line on stderr:\n%s", c.errText())
	}
	echoOnce(t, c.addr, "hello\n")
	base := "http://" + adm
	if code, body := get(t, base+"/readyz"); code != 200 {
		t.Errorf("/readyz: %d %q", code, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := get(t, base+"/metrics")
		missing := ""
		for _, want := range []string{
			"sluice_connections_accepted_total 1\n",
			"sluice_frames_decoded_total 1\n",
			"sluice_request_duration_seconds_count 1\n",
			"sluice_loop_turn_duration_seconds_bucket{le=",
			`sluice_accept_errors_total{errno="EPERM"} 0`,
			"sluice_log_records_suppressed_total 0\n",
			"process_resident_memory_bytes ",
		} {
			if !strings.Contains(body, want) {
				missing += "\n  " + want
			}
		}
		if code == 200 && missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics: status %d, missing:%s", code, missing)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.stop(t)
}

// TestSignalRightAfterListening: SIGTERM as soon as the listening line is
// read ends the command cleanly (the handler is installed before the line).
func TestSignalRightAfterListening(t *testing.T) {
	for range 3 {
		c := startCommand(t, "-addr", "127.0.0.1:0")
		c.stop(t)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-codec", "xml"},
		{"-accept", "sideways"},
		{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:notaport"},
	} {
		if err := run(args); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
	if err := run([]string{"-h"}); err != nil {
		t.Errorf("-h: %v", err)
	}
}

// TestLength16Codec: -codec length16 frames with a 2-byte big-endian length
// (protocol.LengthField) and echoes each frame with its header.
func TestLength16Codec(t *testing.T) {
	c := startCommand(t, "-addr", "127.0.0.1:0", "-codec", "length16")
	echoOnce(t, c.addr, "\x00\x05hello\x00\x00\x00\x03abc")
	c.stop(t)
}
