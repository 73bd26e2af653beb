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
	"syscall"
	"testing"
	"time"
)

// TestAdminAddr: with -admin-addr the command announces the admin address
// on stderr (stdout keeps the one listening line), serves the engine's
// metrics on /metrics, and exits 0 on SIGTERM.
func TestAdminAddr(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$", "--", "-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "KV_TEST_MAIN=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	admin := make(chan string, 1)
	stderrDone := make(chan string, 1)
	go func() {
		var all strings.Builder
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			if a, ok := strings.CutPrefix(sc.Text(), "admin on http://"); ok {
				admin <- a
			}
		}
		stderrDone <- all.String()
	}()
	stdout := bufio.NewReader(out)
	line, err := stdout.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		t.Fatalf("first line %q (%v), want \"listening on HOST:PORT\"", line, err)
	}
	var adm string
	select {
	case adm = <-admin:
	case <-time.After(10 * time.Second):
		t.Fatal("no admin line on stderr")
	}

	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "*1\r\n$4\r\nPING\r\n"); err != nil {
		t.Fatal(err)
	}
	pong := make([]byte, 7)
	if _, err := io.ReadFull(c, pong); err != nil || string(pong) != "+PONG\r\n" {
		t.Fatalf("PING: %q %v", pong, err)
	}
	c.Close()

	cl := http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := cl.Get("http://" + adm + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 && strings.Contains(string(body), "sluice_connections_accepted_total 1\n") &&
			strings.Contains(string(body), "sluice_request_duration_seconds_count 1\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics %d after 10s:\n%.2000s", resp.StatusCode, body)
		}
		time.Sleep(20 * time.Millisecond)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stdout)
	stderr := <-stderrDone
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v; stderr:\n%s", err, stderr)
	}
	if len(rest) != 0 {
		t.Errorf("stdout after the listening line: %q", rest)
	}
}
