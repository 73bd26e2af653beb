// Package examples holds no code of its own: its test builds every example
// program, runs each on loopback, checks one exchange with it and stops it
// by its pid (make examples).
package examples

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testTimeout bounds each example's whole run: start, exchange, stop.
const testTimeout = 20 * time.Second

// buildExamples builds every example's binary into a temporary directory.
func buildExamples(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// startExample runs bin on a free loopback port and returns its address,
// read from its "listening on HOST:PORT" line, and a stop function that
// sends SIGTERM to its pid and waits for a clean exit.
func startExample(t *testing.T, bin string, args ...string) (addr string, stop func()) {
	t.Helper()
	addr, _, stop = startExampleCmd(t, bin, args...)
	return addr, stop
}

// startExampleCmd is startExample that also returns the process, to
// signal it.
func startExampleCmd(t *testing.T, bin string, args ...string) (addr string, cmd *exec.Cmd, stop func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	cmd = exec.CommandContext(ctx, bin, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		defer cancel()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("%s: SIGTERM to pid %d: %v", filepath.Base(bin), cmd.Process.Pid, err)
		}
		go func() { _, _ = io.Copy(io.Discard, out) }() // drain stdout until exit
		if err := cmd.Wait(); err != nil {
			t.Errorf("%s: exit after SIGTERM: %v\n%s", filepath.Base(bin), err, stderr.String())
		}
	}
	t.Cleanup(stop)
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		t.Fatalf("%s: first line %q (%v); stderr:\n%s", filepath.Base(bin), line, err, stderr.String())
	}
	return addr, cmd, stop
}

// syncBuffer is a bytes.Buffer a process writes while a test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// exchange dials addr, writes req and reads until want has arrived.
func exchange(t *testing.T, addr string, req []byte, want string) {
	t.Helper()
	if got, err := roundTrip(t, addr, req, len(want)); err != nil || got != want {
		t.Fatalf("%s: got %q (%v), want %q", addr, got, err, want)
	}
}

// roundTrip dials addr, writes req and reads n bytes.
func roundTrip(t *testing.T, addr string, req []byte, n int) (string, error) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	_, err = io.ReadFull(c, got)
	return string(got), err
}

// exchangeShedding is exchange for the admission example, whose loop sheds
// lines that queued past its 50 ms MaxQueueDelay or CoDel's target: on a
// loaded machine the loop can be off the CPU that long (four CPU hogs:
// "-REJECT queue 50" for the first line), and the example then sheds as it
// is built to. An answer with such a refusal is not the one under test, so
// the exchange is tried again, up to 5 times, once the tenant's quota has
// refilled (refill: burst/rate; every connection from 127.0.0.1 is one
// tenant, charged before the queue is judged).
func exchangeShedding(t *testing.T, addr string, req []byte, want string, refill time.Duration) {
	t.Helper()
	for try := 1; ; try++ {
		got, err := roundTrip(t, addr, req, len(want))
		if err == nil && got == want {
			return
		}
		overload := strings.Contains(got, "-REJECT queue ") || strings.Contains(got, "-REJECT codel ")
		if err != nil || !overload || try == 5 {
			t.Fatalf("%s: got %q (%v), want %q (try %d)", addr, got, err, want, try)
		}
		t.Logf("try %d: %q, the loop shed for its queueing delay: again in %v", try, got, refill)
		time.Sleep(refill)
	}
}

// frame16 is a binproto request: a 2-byte big-endian length, then body.
func frame16(body string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(body))), body...)
}

func TestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs every example")
	}
	dir := buildExamples(t)
	servers := []struct {
		name string
		req  []byte
		want string
	}{
		{"echo", []byte("hello"), "hello"},
		{"binproto", append(append(append(frame16("Nusers"), frame16("Sada=1")...), frame16("Gada")...), frame16("Gbob")...),
			string(frame16("+OK")) + string(frame16("+OK")) + string(frame16("+1")) + string(frame16("-missing"))},
		{"kv", []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\nGET k\r\nPING\r\n"), "+OK\r\n$1\r\nv\r\n+PONG\r\n"},
		{"pool", []byte("alpha\n"), "alpha=value\n"}, // replies to several lines may come in any order
		{"admission", []byte("a\nb\nc\n"), "ok\nok\n-REJECT tenant "},
	}
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			if s.name == "admission" {
				addr, stop := startExample(t, filepath.Join(dir, s.name), "-rate", "1", "-burst", "2")
				exchangeShedding(t, addr, s.req, s.want, 2*time.Second+100*time.Millisecond)
				stop()
				return
			}
			addr, stop := startExample(t, filepath.Join(dir, s.name))
			exchange(t, addr, s.req, s.want)
			stop()
		})
	}
	t.Run("http", func(t *testing.T) {
		addr, stop := startExample(t, filepath.Join(dir, "http"))
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := hc.Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || string(body) != "Hello, World!\n" {
			t.Fatalf("GET /: %d %q %v", resp.StatusCode, body, err)
		}
		stop()
	})
	t.Run("tls", func(t *testing.T) { tlsExample(t, filepath.Join(dir, "tls")) })
	t.Run("pubsub", func(t *testing.T) {
		// 40 subscribers on 4 topics, a publisher per topic, 500 messages
		// each: 20,000 deliveries, all of them, in order; one more
		// subscriber that never reads is closed as a slow consumer once
		// 1 KiB messages fill its buffers, and costs the others nothing.
		addr, stop := startExample(t, filepath.Join(dir, "pubsub"), "-loops", "2", "-slow", "500ms")
		defer stop()
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"-subs", "40", "-topics", "4", "-pubs", "4", "-msgs", "500"}, "delivered 20000 of 20000, 40 of 40 subscribers complete and in order"},
			{[]string{"-subs", "8", "-topics", "2", "-pubs", "2", "-msgs", "8000", "-size", "1024", "-stuck", "1"}, "delivered 64000 of 64000, 8 of 8 subscribers complete and in order"},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			out, err := exec.CommandContext(ctx, filepath.Join(dir, "pubsubload"), append([]string{"-addr", addr}, tc.args...)...).CombinedOutput()
			cancel()
			if err != nil || !strings.Contains(string(out), tc.want) {
				t.Fatalf("pubsubload %v: %v\n%s\nwant %q", tc.args, err, out, tc.want)
			}
		}
	})
	t.Run("envclient", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, filepath.Join(dir, "envclient")).CombinedOutput()
		want := "INCR key=call-1 -> 1 (attempts 2, replayed false)\n" +
			"INCR key=call-2 -> 2 (attempts 2, replayed false)\n" +
			"INCR key=call-1 -> 1 (attempts 1, replayed true)\n"
		if err != nil || string(out) != want {
			t.Fatalf("envclient: %v\n%s\nwant\n%s", err, out, want)
		}
	})
}
