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

	"github.com/sluicenet/sluice/tlsutil"
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
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := tlsutil.WriteSelfSigned(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	first, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	firstPool := x509.NewCertPool()
	firstPEM, _ := os.ReadFile(certFile)
	firstPool.AppendCertsFromPEM(firstPEM)
	addr, cmd, stop := startExampleCmd(t, bin, "-cert", certFile, "-key", keyFile, "-client-ca", certFile)
	defer stop()
	alice, err := tlsutil.IssueClient(first, "alice")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{RootCAs: firstPool, ServerName: "localhost", Certificates: []tls.Certificate{alice}}
	tlsLine(t, addr, cfg, "hello\n", "alice: hello\n")
	if err := tlsutil.WriteSelfSigned(certFile, keyFile); err != nil { // a renewed pair in place
		t.Fatal(err)
	}
	secondPEM, _ := os.ReadFile(certFile)
	secondPool := x509.NewCertPool()
	secondPool.AppendCertsFromPEM(secondPEM)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: secondPool, ServerName: "localhost"})
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reloaded certificate was never served: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	tlsLine(t, addr, &tls.Config{RootCAs: secondPool, ServerName: "localhost"}, "again\n", "anonymous: again\n")
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
