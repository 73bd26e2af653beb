package client

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicenet/sluice/resilience"
	"github.com/sluicenet/sluice/tlsutil"
)

// tlsServer starts an echoing envelope server with a new self-signed
// certificate and returns it with the pool that trusts it.
func tlsServer(t *testing.T) (*envServer, *tls.Config) {
	t.Helper()
	cert, pool, err := tlsutil.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	s := newTLSEnvServer(t, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}, echo)
	return s, &tls.Config{RootCAs: pool}
}

func TestTLSCall(t *testing.T) {
	s, clientTLS := tlsServer(t)
	// No ServerName: the client verifies the certificate for the address's
	// host (127.0.0.1, which SelfSigned certifies) on a clone.
	c := newClient(t, Config{Addr: s.addr(), Conns: 2, TLS: clientTLS})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			payload := []byte{byte('a' + i)}
			got, err := c.Call(context.Background(), "GET", payload)
			if err != nil || string(got) != string(payload) {
				t.Errorf("Call = %q, %v", got, err)
			}
		})
	}
	wg.Wait()
	if clientTLS.ServerName != "" {
		t.Fatalf("the caller's tls.Config was changed: ServerName %q", clientTLS.ServerName)
	}
	if n := len(s.requests()); n != 8 {
		t.Fatalf("the server saw %d requests, want 8", n)
	}
}

// TestTLSWrongCA: the server's certificate is not one the client trusts.
// The handshake fails, which is a dial failure: a *DialError, nothing sent,
// and, a certificate that will not verify on a second try either, not
// retried.
func TestTLSWrongCA(t *testing.T) {
	s, _ := tlsServer(t)
	_, otherPool, err := tlsutil.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, Config{Addr: s.addr(), Retry: fast, TLS: &tls.Config{RootCAs: otherPool}})
	_, err = c.Call(context.Background(), "PUT", []byte("x"))
	var de *DialError
	if !errors.As(err, &de) || !de.Handshake || de.Addr != s.addr() {
		t.Fatalf("err = %v, want a handshake *DialError for %s", err, s.addr())
	}
	var cve *tls.CertificateVerificationError
	if !errors.As(err, &cve) {
		t.Fatalf("err = %v, want the certificate verification error inside", err)
	}
	var re *resilience.RetryError
	if !errors.As(err, &re) || re.Attempts != 1 || resilience.Classify(de) != resilience.ClassFailed {
		t.Fatalf("err = %v (class %v), want one attempt, not retried", err, resilience.Classify(de))
	}
	if n := len(s.requests()); n != 0 {
		t.Fatalf("the server saw %d requests", n)
	}
}

// TestTLSHandshakeTimeout: a server that accepts and never answers the
// ClientHello. Each dial gives up at the dial timeout, a retryable dial
// failure, so the call is retried up to its attempts.
func TestTLSHandshakeTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, nc)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
		mu.Lock()
		for _, nc := range held {
			_ = nc.Close()
		}
		mu.Unlock()
	})
	_, pool, err := tlsutil.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, Config{Addr: ln.Addr().String(), Retry: fast, DialTimeout: 30 * time.Millisecond, TLS: &tls.Config{RootCAs: pool}})
	_, err = c.Call(context.Background(), "PUT", nil)
	var de *DialError
	var re *resilience.RetryError
	if !errors.As(err, &de) || !de.Handshake || !errors.As(err, &re) || re.Attempts != 3 {
		t.Fatalf("err = %v, want 3 attempts ending in a handshake *DialError", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("err = %v, want a timeout", err)
	}
}

// TestTLSCustomDial: a Config.Dial transport with TLS on top.
func TestTLSCustomDial(t *testing.T) {
	s, clientTLS := tlsServer(t)
	var dials atomic.Int32
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		if _, ok := ctx.Deadline(); !ok {
			t.Error("the dial has no deadline")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	clientTLS.ServerName = "localhost"
	c := newClient(t, Config{Addr: s.addr(), Conns: 1, Dial: dial, TLS: clientTLS})
	for range 3 {
		if got, err := c.Call(context.Background(), "GET", []byte("hi")); err != nil || string(got) != "hi" {
			t.Fatalf("Call = %q, %v", got, err)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d dials, want 1", n)
	}
}

func TestDialErrorPlain(t *testing.T) {
	s := newEnvServer(t, echo)
	addr := s.addr()
	s.close()
	c := newClient(t, Config{Addr: addr, Retry: resilience.RetryPolicy{MaxAttempts: 1}})
	_, err := c.Call(context.Background(), "GET", nil)
	var de *DialError
	if !errors.As(err, &de) || de.Handshake || resilience.Classify(de) != resilience.ClassRetryable {
		t.Fatalf("err = %v, want a retryable dial *DialError", err)
	}
}

func TestTLSConfigNeedsHost(t *testing.T) {
	if _, err := New(Config{Addr: "no-port", TLS: &tls.Config{}}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("TLS with Addr %q: %v", "no-port", err)
	}
	c, err := New(Config{Addr: "no-port", TLS: &tls.Config{ServerName: "x"}})
	if err != nil {
		t.Fatalf("with a ServerName: %v", err)
	}
	_ = c.Close()
}
