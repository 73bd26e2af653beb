package tlsutil_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluicenet/sluice/tlsutil"
)

// ioTimeout bounds every network step of these tests, so a broken
// handshake fails the test instead of hanging it.
const ioTimeout = 10 * time.Second

// tlsServer accepts TLS connections on loopback with cfg and hands each,
// handshake done, to serve (nil: echo). A failed handshake is sent on
// handshakeErrs. It stops with the test.
type tlsServer struct {
	ln            net.Listener
	handshakeErrs chan error
}

func newTLSServer(t *testing.T, cfg *tls.Config, serve func(*tls.Conn)) *tlsServer {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &tlsServer{ln: ln, handshakeErrs: make(chan error, 16)}
	if serve == nil {
		serve = func(c *tls.Conn) { _, _ = io.Copy(c, c) }
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				tc := nc.(*tls.Conn)
				_ = tc.SetDeadline(time.Now().Add(ioTimeout))
				if err := tc.Handshake(); err != nil {
					select {
					case s.handshakeErrs <- err:
					default:
					}
					return
				}
				serve(tc)
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	return s
}

func (s *tlsServer) addr() string { return s.ln.Addr().String() }

// echoOnce dials addr with cfg, writes msg and reads it back.
func echoOnce(addr string, cfg *tls.Config, msg string) (tls.ConnectionState, error) {
	d := &net.Dialer{Timeout: ioTimeout}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(ioTimeout))
	if _, err := io.WriteString(c, msg); err != nil {
		return tls.ConnectionState{}, err
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return tls.ConnectionState{}, err
	}
	if string(got) != msg {
		return tls.ConnectionState{}, errors.New("echo differs: " + string(got))
	}
	return c.ConnectionState(), nil
}

func TestSelfSignedRoundTrip(t *testing.T) {
	cert, pool, err := tlsutil.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	leaf := cert.Leaf
	if leaf == nil || !leaf.IsCA || leaf.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Fatalf("leaf %+v: want a CA that signs certificates", leaf)
	}
	if now := time.Now(); !leaf.NotBefore.Before(now.Add(-30*time.Minute)) || !leaf.NotAfter.After(now.AddDate(0, 0, 364)) {
		t.Fatalf("valid %v to %v, want from about an hour ago for a year", leaf.NotBefore, leaf.NotAfter)
	}
	s := newTLSServer(t, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}, nil)
	_, port, _ := net.SplitHostPort(s.addr())
	// By IP address (the default hosts' 127.0.0.1) and by DNS name.
	for _, name := range []string{"", "localhost"} {
		st, err := echoOnce(s.addr(), &tls.Config{RootCAs: pool, ServerName: name}, "hello")
		if err != nil {
			t.Fatalf("server name %q: %v", name, err)
		}
		if st.Version != tls.VersionTLS13 || len(st.VerifiedChains) == 0 {
			t.Fatalf("server name %q: version %x, chains %d", name, st.Version, len(st.VerifiedChains))
		}
	}
	// A name the certificate does not hold fails verification.
	if _, err := echoOnce(net.JoinHostPort("127.0.0.1", port), &tls.Config{RootCAs: pool, ServerName: "example.com"}, "x"); err == nil {
		t.Fatal("a name outside the certificate verified")
	}
}

func TestSelfSignedHosts(t *testing.T) {
	cert, pool, err := tlsutil.SelfSigned("svc.internal", "10.1.2.3", "::2")
	if err != nil {
		t.Fatal(err)
	}
	leaf := cert.Leaf
	if len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != "svc.internal" || len(leaf.IPAddresses) != 2 {
		t.Fatalf("DNS %v, IP %v", leaf.DNSNames, leaf.IPAddresses)
	}
	for _, name := range []string{"svc.internal", "10.1.2.3", "::2"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: pool}); err == nil {
		t.Error("localhost verified though not asked for")
	}
}

func TestWriteSelfSigned(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := tlsutil.WriteSelfSigned(certFile, keyFile, "localhost"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(keyFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v", err, fi.Mode())
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if pair.Leaf == nil || pair.Leaf.DNSNames[0] != "localhost" || !pair.Leaf.IsCA {
		t.Fatalf("loaded leaf %+v", pair.Leaf)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("%d files in the directory, want the two (no temporary left)", len(entries))
	}
}

func TestReloader(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := tlsutil.WriteSelfSigned(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	r, err := tlsutil.NewReloader(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	s := newTLSServer(t, &tls.Config{GetCertificate: r.GetCertificate}, nil)
	// The test checks which certificate the server presents, not whether it
	// is trusted (each pair is its own CA).
	client := &tls.Config{InsecureSkipVerify: true}
	served := func() []byte {
		t.Helper()
		st, err := echoOnce(s.addr(), client, "ping")
		if err != nil {
			t.Fatal(err)
		}
		return st.PeerCertificates[0].Raw
	}
	fileCert := func() []byte {
		t.Helper()
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		return pair.Certificate[0]
	}

	first := fileCert()
	if !bytes.Equal(served(), first) {
		t.Fatal("the server does not present the loaded certificate")
	}
	loaded1 := r.Loaded()

	if err := tlsutil.WriteSelfSigned(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(served(), first) {
		t.Fatal("new files served before Reload")
	}
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	second := fileCert()
	if bytes.Equal(first, second) || !bytes.Equal(served(), second) {
		t.Fatal("the reloaded certificate is not served")
	}
	loaded2 := r.Loaded()
	if loaded2.Before(loaded1) {
		t.Fatalf("Loaded went back: %v then %v", loaded1, loaded2)
	}

	// Garbage (and then a key that belongs to another certificate): Reload
	// fails and the second pair stays.
	if err := os.WriteFile(certFile, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.Reload(); err == nil {
		t.Fatal("Reload of garbage succeeded")
	}
	other := t.TempDir()
	if err := tlsutil.WriteSelfSigned(certFile, filepath.Join(other, "key.pem")); err != nil {
		t.Fatal(err)
	}
	if err := r.Reload(); err == nil {
		t.Fatal("Reload of a mismatched pair succeeded")
	}
	if !bytes.Equal(served(), second) || !r.Loaded().Equal(loaded2) {
		t.Fatal("a failed Reload changed what is served")
	}
}

// TestReloaderConcurrent: handshakes' GetCertificate calls race with
// Reloads (meaningful under -race).
func TestReloaderConcurrent(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := tlsutil.WriteSelfSigned(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	r, err := tlsutil.NewReloader(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				if c, err := r.GetCertificate(nil); err != nil || c == nil || len(c.Certificate) == 0 {
					t.Errorf("GetCertificate = %v, %v", c, err)
					return
				}
				_ = r.Loaded()
			}
		})
	}
	for range 20 {
		if err := r.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

func TestNewReloaderMissingFiles(t *testing.T) {
	dir := t.TempDir()
	if _, err := tlsutil.NewReloader(filepath.Join(dir, "no-cert.pem"), filepath.Join(dir, "no-key.pem")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want one that is os.ErrNotExist", err)
	}
}

func TestIssueClientMutualTLS(t *testing.T) {
	ca, pool, err := tlsutil.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	clientCert, err := tlsutil.IssueClient(ca, "tenant-a")
	if err != nil {
		t.Fatal(err)
	}
	if clientCert.Leaf.IsCA || clientCert.Leaf.NotAfter.After(ca.Leaf.NotAfter) {
		t.Fatalf("client leaf: CA %v, until %v (CA until %v)", clientCert.Leaf.IsCA, clientCert.Leaf.NotAfter, ca.Leaf.NotAfter)
	}
	peers := make(chan string, 4)
	s := newTLSServer(t, &tls.Config{
		Certificates: []tls.Certificate{ca},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS13,
	}, func(c *tls.Conn) {
		st := c.ConnectionState()
		if len(st.VerifiedChains) > 0 {
			peers <- st.PeerCertificates[0].Subject.CommonName
		}
		_, _ = io.Copy(c, c)
	})

	if _, err := echoOnce(s.addr(), &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{clientCert}}, "hi"); err != nil {
		t.Fatal(err)
	}
	select {
	case cn := <-peers:
		if cn != "tenant-a" {
			t.Fatalf("server saw peer %q, want tenant-a", cn)
		}
	case <-time.After(ioTimeout):
		t.Fatal("the server saw no verified peer")
	}

	// No client certificate, and one from another CA: the server refuses
	// both handshakes (in TLS 1.3 the client learns it at its first read).
	otherCA, _, err := tlsutil.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := tlsutil.IssueClient(otherCA, "tenant-a")
	if err != nil {
		t.Fatal(err)
	}
	for name, certs := range map[string][]tls.Certificate{"none": nil, "other CA": {stranger}} {
		if _, err := echoOnce(s.addr(), &tls.Config{RootCAs: pool, Certificates: certs}, "hi"); err == nil {
			t.Fatalf("%s: the server answered", name)
		}
		select {
		case err := <-s.handshakeErrs:
			if err == nil {
				t.Fatalf("%s: a nil handshake error", name)
			}
		case <-time.After(ioTimeout):
			t.Fatalf("%s: no handshake error on the server", name)
		}
	}
}

func TestIssueClientNeedsCA(t *testing.T) {
	ca, _, err := tlsutil.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := tlsutil.IssueClient(ca, "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tlsutil.IssueClient(leaf, "b"); !errors.Is(err, tlsutil.ErrNotCA) {
		t.Fatalf("issued by a client certificate: %v", err)
	}
	if _, err := tlsutil.IssueClient(tls.Certificate{}, "b"); !errors.Is(err, tlsutil.ErrNotCA) {
		t.Fatalf("issued by nothing: %v", err)
	}
}
