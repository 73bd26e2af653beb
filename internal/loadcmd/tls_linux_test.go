//go:build linux

package loadcmd

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicenet/sluice/bench"
	"github.com/sluicenet/sluice/internal/tlstest"
	"github.com/sluicenet/sluice/tlsutil"
)

// tlsEcho is a TLS echo server on loopback whose certificate and key are
// PEM files (the certificate is its own CA: -tls-ca takes certFile). It
// stops with the test.
func tlsEcho(t *testing.T) (addr, certFile string) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := tlsutil.WriteSelfSigned(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return tlstest.Echo(t, &tls.Config{Certificates: []tls.Certificate{pair}}, 32<<10, nil), certFile
}

// runJSON runs the command with args and -json and decodes its result;
// while the run answered nothing and nothing failed (a loaded machine may
// not, in a short window), it runs again with a window twice as long, up
// to 1.6 s.
func runJSON(t *testing.T, args ...string) *bench.LoadResult {
	t.Helper()
	for window := 200 * time.Millisecond; ; window *= 2 {
		var out, errOut bytes.Buffer
		full := append([]string{"-warmup", "50ms", "-duration", window.String(), "-json"}, args...)
		if err := Run(context.Background(), "sluiceload", full, &out, &errOut); err != nil {
			t.Fatalf("%v: %v (%s)", args, err, errOut.String())
		}
		var res bench.LoadResult
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("JSON result: %v\n%s", err, out.String())
		}
		if res.Msgs > 0 || len(res.Errors) > 0 || window >= 1600*time.Millisecond {
			return &res
		}
		t.Logf("no message answered in a %v window: again with %v", window, 2*window)
	}
}

func TestTLSFlags(t *testing.T) {
	addr, ca := tlsEcho(t)
	res := runJSON(t, "-addr", addr, "-tls", "-tls-ca", ca, "-codec", "length", "-conns", "2", "-inflight", "4", "-size", "64")
	if res.Mode != "closed" || res.Msgs == 0 || len(res.Errors) != 0 || res.TLSVersion != "TLS 1.3" {
		t.Fatalf("closed loop: mode %s, %d msgs, errors %v (%s), version %q", res.Mode, res.Msgs, res.Errors, res.FirstError, res.TLSVersion)
	}
	res = runJSON(t, "-addr", addr, "-tls", "-tls-insecure", "-codec", "line", "-conns", "2", "-rate", "1000", "-size", "32")
	if res.Mode != "open" || res.Msgs == 0 || len(res.Errors) != 0 {
		t.Fatalf("open loop, insecure: mode %s, %d msgs, errors %v (%s)", res.Mode, res.Msgs, res.Errors, res.FirstError)
	}
}

// TestTLSHandshakeMode: -handshakes with -tls-resume reports handshakes,
// the share resumed and their latency in JSON and in the summary, and
// charts the handshakes' latency.
func TestTLSHandshakeMode(t *testing.T) {
	addr, ca := tlsEcho(t)
	res := runJSON(t, "-addr", addr, "-tls", "-tls-ca", ca, "-tls-resume", "-handshakes", "-conns", "2", "-size", "64")
	if res.Mode != "handshakes" || res.Handshakes == 0 || res.HandshakesPerSec <= 0 || len(res.Errors) != 0 {
		t.Fatalf("mode %s, %d handshakes (%v/s), errors %v (%s)", res.Mode, res.Handshakes, res.HandshakesPerSec, res.Errors, res.FirstError)
	}
	if res.Resumed == 0 || res.ResumedShare <= 0 || res.HandshakeLatency == nil || res.HandshakeLatency.P99Micros <= 0 {
		t.Fatalf("resumed %d (%v), latency %+v", res.Resumed, res.ResumedShare, res.HandshakeLatency)
	}

	// The summary and the chart; a window that completed no handshake has
	// no chart to draw, so it runs again with a longer one.
	svg := filepath.Join(t.TempDir(), "hs.svg")
	var out, errOut bytes.Buffer
	for window := 200 * time.Millisecond; ; window *= 2 {
		out.Reset()
		err := Run(context.Background(), "sluiceload", []string{"-addr", addr, "-tls", "-tls-ca", ca, "-handshakes", "-conns", "1",
			"-warmup", "0s", "-duration", window.String(), "-svg", svg}, &out, &errOut)
		if err == nil {
			break
		}
		if !errors.Is(err, errNoHistogram) || window >= 1600*time.Millisecond {
			t.Fatalf("%v (%s)", err, errOut.String())
		}
	}
	for _, want := range []string{"handshakes, length codec, 1 workers", "handshakes  ", "handshake   p50", "TLS 1.3"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	chart, err := os.ReadFile(svg)
	if err != nil || !bytes.Contains(chart, []byte("handshakes/s")) {
		t.Fatalf("chart: %v\n%s", err, chart)
	}
}

func TestTLSFlagErrors(t *testing.T) {
	addr, ca := tlsEcho(t)
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-tls"}, "-tls-insecure"},
		{[]string{"-tls-resume"}, "-tls-resume needs -tls"},
		{[]string{"-handshakes"}, "-handshakes needs -tls"},
		{[]string{"-tls", "-tls-insecure", "-tls-ca", ca}, "not both"},
		{[]string{"-tls", "-tls-ca", filepath.Join(t.TempDir(), "none.pem")}, "-tls-ca"},
		{[]string{"-tls", "-tls-ca", notPEM}, "no PEM certificate"},
		{[]string{"-tls", "-tls-insecure", "-handshakes", "-rate", "100"}, "rate"},
		{[]string{"-tls", "-tls-insecure", "-workers", "2"}, "workers"},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"-addr", addr, "-duration", "100ms"}, c.args...)
		err := Run(context.Background(), "sluiceload", args, &out, &errOut)
		if err == nil || errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want one that mentions %q", c.args, err, c.want)
		}
	}
}
