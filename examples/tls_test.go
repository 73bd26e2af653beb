package examples

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sluicenet/sluice/internal/testcert"
)

// tlsExample runs examples/tls twice: with its self-signed certificate
// (a client verifying the PEM it wrote gets its line back, prefixed
// "anonymous"; a client certificate it cannot verify is refused only when
// asked for) and with a certificate pair it reloads on SIGHUP (the next
// handshake verifies against the new one), and with -client-ca a verified
// client's name prefixes its lines.
func tlsExample(t *testing.T, bin string) {
	dir := t.TempDir()
	caOut := filepath.Join(dir, "ca.pem")
	addr, stop := startExample(t, bin, "-ca-out", caOut)
	pemBytes, err := os.ReadFile(caOut)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	tlsLine(t, addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}, "hi\n", "anonymous: hi\n")
	stop()

	// a pair from files, a client CA, a reload
	first, err := testcert.New()
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := first.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	clientCA := filepath.Join(dir, "client-ca.pem")
	if err := os.WriteFile(clientCA, first.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	addr, cmd, stop := startExampleCmd(t, bin, "-cert", certFile, "-key", keyFile, "-client-ca", clientCA)
	defer stop()
	alice, err := first.Issue("alice", false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{RootCAs: first.Pool, ServerName: "localhost", Certificates: []tls.Certificate{alice}}
	tlsLine(t, addr, cfg, "hello\n", "alice: hello\n")
	second, err := testcert.New()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := second.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: second.Pool, ServerName: "localhost"})
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reloaded certificate was never served: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	tlsLine(t, addr, &tls.Config{RootCAs: second.Pool, ServerName: "localhost"}, "again\n", "anonymous: again\n")
	stop()
}

// tlsLine dials addr over TLS with cfg, writes line and checks the reply.
func tlsLine(t *testing.T, addr string, cfg *tls.Config, line, want string) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatalf("%s: %v", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(line)); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != want {
		t.Fatalf("%s: got %q (%v), want %q", addr, got, err, want)
	}
}
