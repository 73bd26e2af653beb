package examples

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// certAuthority is a self-signed certificate for 127.0.0.1 and localhost
// that also signs client certificates. (The harness makes its own: the
// examples' tests import nothing internal.)
type certAuthority struct {
	cert    tls.Certificate
	pool    *x509.CertPool
	certPEM []byte
	keyPEM  []byte
}

func newCA(t *testing.T) *certAuthority {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "examples test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return &certAuthority{tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool,
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})}
}

// writeFiles writes the pair as cert.pem and key.pem in dir.
func (ca *certAuthority) writeFiles(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, ca.certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, ca.keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// issue makes a client certificate for cn signed by ca.
func (ca *certAuthority) issue(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert.Leaf, &key.PublicKey, ca.cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

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
	first := newCA(t)
	certFile, keyFile := first.writeFiles(t, dir)
	clientCA := filepath.Join(dir, "client-ca.pem")
	if err := os.WriteFile(clientCA, first.certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	addr, cmd, stop := startExampleCmd(t, bin, "-cert", certFile, "-key", keyFile, "-client-ca", clientCA)
	defer stop()
	alice := first.issue(t, "alice")
	cfg := &tls.Config{RootCAs: first.pool, ServerName: "localhost", Certificates: []tls.Certificate{alice}}
	tlsLine(t, addr, cfg, "hello\n", "alice: hello\n")
	second := newCA(t)
	second.writeFiles(t, dir)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: second.pool, ServerName: "localhost"})
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reloaded certificate was never served: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	tlsLine(t, addr, &tls.Config{RootCAs: second.pool, ServerName: "localhost"}, "again\n", "anonymous: again\n")
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
