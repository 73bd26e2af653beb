package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicenet/sluice/tlsutil"
)

// TestTLSRedisClients: redis-cli --tls (verifying the certificate) sets
// and reads a key over TLS, and redis-benchmark --tls completes its
// requests against the RESP server.
func TestTLSRedisClients(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-cli is not installed")
		}
		t.Skip("redis-cli is not installed")
	}
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := tlsutil.WriteSelfSigned(cert, key); err != nil {
		t.Fatal(err)
	}
	addr, stop := startCommand(t, "-addr", "127.0.0.1:0", "-tls-cert", cert, "-tls-key", key)
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	redis := func(args ...string) string {
		t.Helper()
		all := append([]string{"--tls", "--cacert", cert, "-h", host, "-p", port}, args...)
		out, err := exec.CommandContext(ctx, cli, all...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := redis("SET", "greeting", "over tls"); got != "OK" {
		t.Errorf("SET: %q", got)
	}
	if got := redis("GET", "greeting"); got != "over tls" {
		t.Errorf("GET: %q", got)
	}
	if bench, err := exec.LookPath("redis-benchmark"); err == nil {
		out, err := exec.CommandContext(ctx, bench, "--tls", "--cacert", cert, "-h", host, "-p", port,
			"-t", "set,get", "-n", "2000", "-c", "8", "-q").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "GET:") || !strings.Contains(string(out), "requests per second") {
			t.Errorf("redis-benchmark --tls: %v\n%s", err, out)
		}
	}
	stop()
}
