package kv

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/server"
)

// redisCLI runs redis-cli against port with formatted output (as on a
// terminal: "(integer) 1", "(nil)", "(error) ...") and returns its stdout.
func redisCLI(t *testing.T, port string, args ...string) string {
	t.Helper()
	bin := needTool(t, "redis-cli")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append([]string{"-h", "127.0.0.1", "-p", port, "--no-raw"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %q: %v\n%s", args, err, out)
	}
	return strings.TrimRight(string(out), "\n")
}

// TestRedisCLI runs every supported command through redis-cli.
func TestRedisCLI(t *testing.T) {
	needTool(t, "redis-cli")
	s := startServer(t, Options{})
	port := portOf(t, s)
	steps := []struct {
		args []string
		want string // exact, or a prefix when it ends in "..."
	}{
		{[]string{"PING"}, "PONG"},
		{[]string{"PING", "hello"}, `"hello"`},
		{[]string{"ECHO", "hi there"}, `"hi there"`},
		{[]string{"SET", "foo", "bar"}, "OK"},
		{[]string{"GET", "foo"}, `"bar"`},
		{[]string{"GET", "missing"}, "(nil)"},
		{[]string{"SET", "foo", "baz", "NX"}, "(nil)"},
		{[]string{"SET", "foo", "baz", "XX", "PX", "60000"}, "OK"},
		{[]string{"SET", "gone", "x", "EX", "100"}, "OK"},
		{[]string{"GET", "foo"}, `"baz"`},
		{[]string{"SET", "foo"}, "(error) ERR wrong number of arguments for 'set' command"},
		{[]string{"SET", "foo", "v", "PX", "0"}, "(error) ERR invalid expire time in 'set' command"},
		{[]string{"INCR", "counter"}, "(integer) 1"},
		{[]string{"INCR", "counter"}, "(integer) 2"},
		{[]string{"INCR", "foo"}, "(error) ERR value is not an integer or out of range"},
		{[]string{"EXISTS", "foo", "nope", "counter"}, "(integer) 2"},
		{[]string{"MSET", "a", "1", "b", "2"}, "OK"},
		{[]string{"MGET", "a", "b", "nope"}, "1) \"1\"\n2) \"2\"\n3) (nil)"},
		{[]string{"DEL", "a", "b", "nope"}, "(integer) 2"},
		{[]string{"EXISTS", "a"}, "(integer) 0"},
		{[]string{"COMMAND", "COUNT"}, "(integer) 14"},
		{[]string{"COMMAND", "DOCS", "get"}, "1) \"get\"\n2) 1) \"summary\"\n   2) \"Returns the string value of a key.\"..."},
		{[]string{"COMMAND", "INFO", "set"}, "1)  1) \"set\"\n    2) (integer) -3..."},
		{[]string{"CONFIG", "GET", "save"}, "1) \"save\"\n2) \"\""},
		{[]string{"CONFIG", "GET", "appendonly"}, "1) \"appendonly\"\n2) \"no\""},
		{[]string{"SELECT", "0"}, "OK"},
		{[]string{"QUIT"}, "OK"},
		{[]string{"FLUSHALL"}, "(error) ERR unknown command 'FLUSHALL', with args beginning with:"},
	}
	for i, st := range steps {
		got := redisCLI(t, port, st.args...)
		if p, ok := strings.CutSuffix(st.want, "..."); ok {
			if !strings.HasPrefix(got, p) {
				t.Errorf("%d: redis-cli %q:\n got %q\nwant prefix %q", i, st.args, got, p)
			}
		} else if strings.TrimRight(got, " ") != st.want {
			t.Errorf("%d: redis-cli %q:\n got %q\nwant %q", i, st.args, got, st.want)
		}
	}
	info := redisCLI(t, port, "INFO", "sluice")
	for _, want := range []string{"# sluice", "loops:2", "conns_open:1", "frames:", "bytes_out:", "closed_local:"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO sluice lacks %q:\n%s", want, info)
		}
	}
	if !strings.Contains(redisCLI(t, port, "INFO"), "db0:keys=3") {
		t.Error("INFO lacks the keyspace line db0:keys=3 (foo, gone, counter)")
	}
	// expiry, end to end
	if got := redisCLI(t, port, "SET", "brief", "v", "PX", "50"); got != "OK" {
		t.Fatalf("SET PX: %q", got)
	}
	time.Sleep(150 * time.Millisecond)
	if got := redisCLI(t, port, "GET", "brief"); got != "(nil)" {
		t.Fatalf("GET after PX expiry: %q, want (nil)", got)
	}
}

// TestRedisBenchmark runs a short redis-benchmark: it must finish every
// test without an error reply.
func TestRedisBenchmark(t *testing.T) {
	bin := needTool(t, "redis-benchmark")
	s := startServer(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-h", "127.0.0.1", "-p", portOf(t, s),
		"-t", "ping,set,get", "-n", "20000", "-P", "16", "-c", "10", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	text := string(out)
	for _, test := range []string{"PING_INLINE:", "PING_MBULK:", "SET:", "GET:"} {
		if !strings.Contains(text, test) {
			t.Errorf("redis-benchmark output lacks %q:\n%s", test, text)
		}
	}
	for _, bad := range []string{"ERR", "Error", "WARN"} {
		if strings.Contains(text, bad) {
			t.Errorf("redis-benchmark output contains %q:\n%s", bad, text)
		}
	}
	// 4 tests x 20000 requests, plus redis-benchmark's CONFIG GETs
	eventually(t, "80000 frames decoded", func() bool { return s.Engine.Stats().Frames >= 80000 })
	t.Logf("loaded machine, not a measurement:\n%s", lastLines(text))
}

// lastLines keeps what follows the final carriage return of each line
// (redis-benchmark redraws its progress line with CR).
func lastLines(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if i := strings.LastIndexByte(l, '\r'); i >= 0 {
			l = l[i+1:]
		}
		if strings.TrimSpace(l) != "" {
			b.WriteString(strings.TrimSpace(l) + "\n")
		}
	}
	return b.String()
}

// TestRESPPipelineAndQuit drives the server with raw bytes: 200 pipelined
// INCRs in one write come back in order; QUIT answers and closes, and the
// command after it is not run.
func TestRESPPipelineAndQuit(t *testing.T) {
	s := startServer(t, Options{})
	c := dial(t, s)
	var in strings.Builder
	for range 200 {
		in.WriteString(cmd("INCR", "n"))
	}
	in.WriteString("PING\r\n")
	in.WriteString(cmd("QUIT"))
	in.WriteString(cmd("INCR", "n"))
	if _, err := io.WriteString(c, in.String()); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	for i := 1; i <= 200; i++ {
		line, err := r.ReadString('\n')
		if err != nil || line != fmt.Sprintf(":%d\r\n", i) {
			t.Fatalf("reply %d: %q %v", i, line, err)
		}
	}
	rest, err := io.ReadAll(r)
	if err != nil || string(rest) != "+PONG\r\n+OK\r\n" {
		t.Fatalf("after the INCRs: %q %v, want PONG, OK, then EOF", rest, err)
	}
	c2 := dial(t, s)
	if _, err := io.WriteString(c2, cmd("GET", "n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := c2.Read(buf)
	if err != nil || string(buf[:n]) != "$3\r\n200\r\n" {
		t.Fatalf("GET n: %q %v, want 200 (the INCR after QUIT must not run)", buf[:n], err)
	}
}

// TestRESPProtocolError: malformed input is answered like redis-server
// does, then the connection closes.
func TestRESPProtocolError(t *testing.T) {
	s := startServer(t, Options{})
	tests := []struct{ in, want string }{
		{cmd("PING") + "*1\r\n$x\r\n", "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"},
		{"*1\r\n$2000000\r\n", "-ERR Protocol error: bulk length exceeds limit\r\n"},
		{"*1\r\n+PING\r\n", "-ERR Protocol error: expected '$'\r\n"},
	}
	for i, tt := range tests {
		c := dial(t, s)
		if _, err := io.WriteString(c, tt.in); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(c)
		if err != nil || string(got) != tt.want {
			t.Errorf("%d: %q -> %q %v, want %q then EOF", i, tt.in, got, err, tt.want)
		}
	}
	eventually(t, "3 connections closed as malformed or too large", func() bool {
		st := s.Engine.Stats()
		return st.Closed[server.CauseMalformed]+st.Closed[server.CauseFrameTooLarge] == 3
	})
}

// TestRESPAdmissionReject: a tenant over its quota sees a readable error
// in redis-cli and its connection stays open.
func TestRESPAdmissionReject(t *testing.T) {
	needTool(t, "redis-cli")
	s := startServer(t, Options{TenantQuota: &admission.Quota{Count: 1, Per: time.Hour, Burst: 2}})
	got := redisCLI(t, portOf(t, s), "-r", "4", "PING")
	lines := strings.Split(got, "\n")
	if len(lines) != 4 || lines[0] != "PONG" || lines[1] != "PONG" {
		t.Fatalf("redis-cli -r 4 PING:\n%s\nwant two PONGs then rejects", got)
	}
	for _, l := range lines[2:] {
		if !strings.HasPrefix(l, "(error) ERR sluice: too many requests (tenant), retry in ") || !strings.HasSuffix(l, " ms") {
			t.Fatalf("reject line %q", l)
		}
	}
	eventually(t, "2 rejects over 1 connection", func() bool {
		st := s.Engine.Stats()
		return st.Rejects == 2 && st.Accepted == 1
	})
}
