//go:build linux

package bench

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluicenet/sluice/internal/tlstest"
	"github.com/sluicenet/sluice/tlsutil"
)

// tlsEchoServer is a TLS 1.3 echo server on loopback with a new
// self-signed certificate, closed with the test; corrupt makes it flip a
// byte of every 10th read. It returns the address and a pool that trusts
// the certificate.
func tlsEchoServer(t *testing.T, corrupt bool) (string, *x509.CertPool) {
	t.Helper()
	cert, pool, err := tlsutil.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	var tamper func(int, []byte)
	if corrupt {
		tamper = func(i int, b []byte) {
			if i%10 == 9 {
				b[len(b)/2] ^= 0x20
			}
		}
	}
	addr := tlstest.Echo(t, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}, 64<<10, tamper)
	return addr, pool
}

func TestTLSClosedLoop(t *testing.T) {
	addr, pool := tlsEchoServer(t, false)
	for _, codec := range []Codec{CodecLength, CodecRaw, CodecLine} {
		// No ServerName: the generator verifies the certificate for the
		// address's host, 127.0.0.1.
		clientTLS := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}
		res, _, err := loadUntil(t, LoadConfig{
			Addr: addr, Codec: codec, Conns: 3, InFlight: 4, Size: SizeSpec{Min: 16, Max: 300},
			Warmup: 20 * time.Millisecond, Duration: 200 * time.Millisecond, TLS: clientTLS,
		}, flowing)
		if err != nil {
			t.Fatalf("%v: %v", codec, err)
		}
		if res.Mode != "closed" || res.Msgs == 0 || len(res.Errors) != 0 || res.ConnsOpen != 3 || res.ConnsLost != 0 {
			t.Fatalf("%v: mode %s, msgs %d, errors %v (%s), conns %d open %d lost", codec, res.Mode, res.Msgs, res.Errors, res.FirstError, res.ConnsOpen, res.ConnsLost)
		}
		if res.Latency.Count != res.Msgs || res.HistogramV2 == "" || res.TLSVersion != "TLS 1.3" || res.TLSCipherSuite == "" {
			t.Fatalf("%v: latency count %d of %d msgs, version %q %q", codec, res.Latency.Count, res.Msgs, res.TLSVersion, res.TLSCipherSuite)
		}
		if res.Unfinished > int64(3*4) {
			t.Fatalf("%v: %d unfinished, more than the 12 in flight", codec, res.Unfinished)
		}
		if clientTLS.ServerName != "" {
			t.Fatal("the caller's tls.Config was changed")
		}
		t.Logf("%v:\n%s", codec, FormatLoadResult(res))
		if !strings.Contains(FormatLoadResult(res), "TLS 1.3") {
			t.Fatalf("summary without the TLS version:\n%s", FormatLoadResult(res))
		}
	}
}

func TestTLSOpenLoop(t *testing.T) {
	addr, pool := tlsEchoServer(t, false)
	res, _, err := loadUntil(t, LoadConfig{
		Addr: addr, Codec: CodecLength, Conns: 2, Size: FixedSize(64), RatePerSec: 2000,
		Warmup: 20 * time.Millisecond, Duration: 200 * time.Millisecond,
		TLS: &tls.Config{RootCAs: pool, ServerName: "localhost"},
	}, flowing)
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != "open" || res.Msgs == 0 || len(res.Errors) != 0 || res.Intended == 0 || res.SendLag == nil {
		t.Fatalf("mode %s, msgs %d, errors %v (%s), intended %d", res.Mode, res.Msgs, res.Errors, res.FirstError, res.Intended)
	}
	// 2000/s over the window: as many sends intended, however the
	// responses went, and each answered, unfinished or missed (give or
	// take the sends around the window's edges).
	if want := int64(2000 * res.Config.Duration.Seconds()); res.Intended < want-10 || res.Intended > want+10 {
		t.Fatalf("intended %d, want about %d", res.Intended, want)
	}
	if res.Msgs+res.Unfinished+res.Missed < res.Intended-20 {
		t.Fatalf("msgs %d + unfinished %d + missed %d fall short of %d intended", res.Msgs, res.Unfinished, res.Missed, res.Intended)
	}
}

func TestTLSDetectsCorruption(t *testing.T) {
	addr, pool := tlsEchoServer(t, true)
	res, _, err := loadUntil(t, LoadConfig{
		Addr: addr, Codec: CodecLength, Conns: 2, InFlight: 2, Size: FixedSize(64),
		Duration: 200 * time.Millisecond, TLS: &tls.Config{RootCAs: pool},
	}, func(r *LoadResult) bool { return r.ConnsLost == 2 })
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors["mismatch"] == 0 || !strings.Contains(res.FirstError, ErrMismatch.Error()) {
		t.Fatalf("errors %v, first %q", res.Errors, res.FirstError)
	}
}

// TestTLSWrongCA: no connection verifies the server, so the run cannot
// happen; the error says why.
func TestTLSWrongCA(t *testing.T) {
	addr, _ := tlsEchoServer(t, false)
	_, otherPool, err := tlsutil.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Load(context.Background(), LoadConfig{
		Addr: addr, Codec: CodecLength, Conns: 2, Size: FixedSize(64), Duration: time.Second,
		TLS: &tls.Config{RootCAs: otherPool},
	})
	if !errors.Is(err, ErrNoConnections) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("err = %v, want no connections for a certificate that does not verify", err)
	}
}

func TestTLSHandshakes(t *testing.T) {
	addr, pool := tlsEchoServer(t, false)
	for _, resume := range []bool{false, true} {
		clientTLS := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}
		if resume {
			clientTLS.ClientSessionCache = tls.NewLRUClientSessionCache(8)
		}
		res, _, err := loadUntil(t, LoadConfig{
			Addr: addr, Codec: CodecLength, Conns: 2, Size: FixedSize(64), Handshakes: true,
			Warmup: 20 * time.Millisecond, Duration: 200 * time.Millisecond, TLS: clientTLS,
		}, func(r *LoadResult) bool { return r.Handshakes > 0 || len(r.Errors) > 0 })
		if err != nil {
			t.Fatalf("resume %v: %v", resume, err)
		}
		if res.Mode != "handshakes" || res.Handshakes == 0 || len(res.Errors) != 0 || len(res.HandshakeFailures) != 0 {
			t.Fatalf("resume %v: mode %s, %d handshakes, errors %v (%s), failures %v", resume, res.Mode, res.Handshakes, res.Errors, res.FirstError, res.HandshakeFailures)
		}
		hl := res.HandshakeLatency
		if hl == nil || hl.Count != res.Handshakes || res.HandshakeHistogramV2 == "" || res.HandshakesPerSec <= 0 || res.Msgs != res.Handshakes {
			t.Fatalf("resume %v: %d handshakes, latency %+v, %d msgs", resume, res.Handshakes, hl, res.Msgs)
		}
		// Sessions from the warm-up's tickets resume in the window (the
		// first handshake of each worker may be a full one).
		if resume && res.Resumed == 0 || !resume && res.Resumed != 0 {
			t.Fatalf("resume %v: %d of %d resumed", resume, res.Resumed, res.Handshakes)
		}
		if res.ResumedShare != float64(res.Resumed)/float64(res.Handshakes) {
			t.Fatalf("share %v of %d/%d", res.ResumedShare, res.Resumed, res.Handshakes)
		}
		t.Logf("resume %v:\n%s", resume, FormatLoadResult(res))
		if out := FormatLoadResult(res); !strings.Contains(out, "handshakes  ") || !strings.Contains(out, "handshake   p50") {
			t.Fatalf("summary:\n%s", out)
		}
	}
}

// TestTLSHandshakeFailures: against a certificate the generator does not
// trust every cycle fails, counted by reason.
func TestTLSHandshakeFailures(t *testing.T) {
	addr, _ := tlsEchoServer(t, false)
	_, otherPool, err := tlsutil.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := loadUntil(t, LoadConfig{
		Addr: addr, Codec: CodecLength, Conns: 2, Size: FixedSize(64), Handshakes: true,
		Duration: 100 * time.Millisecond, TLS: &tls.Config{RootCAs: otherPool},
	}, func(r *LoadResult) bool { return r.HandshakeFailures["bad_certificate"] > 0 })
	if err != nil {
		t.Fatal(err)
	}
	if res.Handshakes != 0 || res.HandshakeFailures["bad_certificate"] == 0 || res.Errors["tls"] == 0 || len(res.HandshakeFailures) != 1 {
		t.Fatalf("%d handshakes, failures %v, errors %v", res.Handshakes, res.HandshakeFailures, res.Errors)
	}
}

func TestTLSValidates(t *testing.T) {
	tc := &tls.Config{InsecureSkipVerify: true}
	base := LoadConfig{Addr: "127.0.0.1:1", Conns: 1, Size: FixedSize(8), Duration: time.Second}
	bad := []func(*LoadConfig){
		func(c *LoadConfig) { c.Handshakes = true },                              // no TLS
		func(c *LoadConfig) { c.TLS, c.Workers = tc, 2 },                         // event loops
		func(c *LoadConfig) { c.TLS, c.Handshakes, c.RatePerSec = tc, true, 10 }, // no rate
		func(c *LoadConfig) { c.TLS, c.Handshakes, c.InFlight = tc, true, 4 },    // one request
	}
	for i, mod := range bad {
		cfg := base
		mod(&cfg)
		if _, err := Load(context.Background(), cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%d: %v", i, err)
		}
	}
}

func TestTLSFailureNames(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, "bad_certificate"},
		{tls.RecordHeaderError{Msg: "x"}, "not_tls"},
		{&net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}, "alert"},
		{errPeerClosed, "peer_closed"},
		{ErrResponseTimeout, "timeout"},
		{ErrMismatch, "mismatch"},
		{errors.New("?"), "other"},
	} {
		if got := handshakeReasons[handshakeReason(c.err)]; got != c.want {
			t.Errorf("%v: %s, want %s", c.err, got, c.want)
		}
	}
}
