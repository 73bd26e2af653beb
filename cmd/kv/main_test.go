package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the kv command: with KV_TEST_MAIN=1 it runs
// main with the arguments after "--".
func TestMain(m *testing.M) {
	if os.Getenv("KV_TEST_MAIN") == "1" {
		for i, a := range os.Args {
			if a == "--" {
				os.Args = append([]string{"kv"}, os.Args[i+1:]...)
				break
			}
		}
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestCommand starts the command on a free port for each protocol, checks
// the "listening on" line and one request, then stops it with SIGTERM and
// expects exit status 0.
func TestCommand(t *testing.T) {
	tests := []struct {
		args      []string
		req, want string
	}{
		{[]string{"-addr", "127.0.0.1:0"}, "*1\r\n$4\r\nPING\r\n", "+PONG\r\n"},
		{[]string{"-proto", "envelope", "-addr", "127.0.0.1:0", "-dep-latency", "1ms"},
			// PING request id 7 (docs/ENVELOPE.md layout)
			"\x00\x00\x00\x15\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x04\x00\x00PING", ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			addr, stop := startCommand(t, tt.args...)
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(c, tt.req); err != nil {
				t.Fatal(err)
			}
			if tt.want != "" {
				got := make([]byte, len(tt.want))
				if _, err := io.ReadFull(c, got); err != nil || string(got) != tt.want {
					t.Fatalf("reply %q %v, want %q", got, err, tt.want)
				}
			} else {
				hdr := make([]byte, 21)
				if _, err := io.ReadFull(c, hdr); err != nil || hdr[5] != 2 || hdr[15] != 7 {
					t.Fatalf("envelope reply header %x %v, want a response to request 7", hdr, err)
				}
			}
			stop()
		})
	}
}

func TestCommandBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-proto", "http"}, {"-idempotency", "disk", "-proto", "envelope"}, {"stray"}} {
		if err := run(args); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
	if err := run([]string{"-h"}); err != nil {
		t.Errorf("-h: %v", err)
	}
}

// startCommand runs the command with args and returns its address and a
// function that sends SIGTERM and checks the exit status.
func startCommand(t *testing.T, args ...string) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "KV_TEST_MAIN=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("first line %q (%v), want \"listening on HOST:PORT\"; stderr:\n%s", line, err, stderr.String())
	}
	stopped := false
	stop := func() {
		stopped = true
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("exit after SIGTERM: %v; stderr:\n%s", err, stderr.String())
		}
	}
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return addr, stop
}
