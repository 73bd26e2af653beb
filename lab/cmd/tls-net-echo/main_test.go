package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// mainEnv makes the test binary run main instead of the tests, so that a
// test can check the command's output and exit status.
const mainEnv = "TLS_NET_ECHO_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// writePair writes a self-signed ECDSA P-256 certificate for 127.0.0.1 and
// its key as PEM files in dir, and returns their paths and a pool that
// trusts the certificate.
func writePair(t *testing.T, dir string) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "localhost"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots = x509.NewCertPool()
	roots.AddCert(cert)
	return certFile, keyFile, roots
}

// logBuf collects the server's log lines.
type logBuf struct {
	mu    sync.Mutex
	lines []string
}

func (l *logBuf) printf(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// start runs serve with a fresh certificate until the test ends, and
// returns its address, the client configuration that trusts it, a stop
// function that returns serve's error, and its log.
func start(t *testing.T, tls13Only bool) (addr string, client *tls.Config, stop func() error, logs *logBuf) {
	t.Helper()
	certFile, keyFile, roots := writePair(t, t.TempDir())
	cfg, err := tlsConfig(certFile, keyFile, tls13Only)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	logs = &logBuf{}
	go func() { errc <- serve(ctx, "127.0.0.1:0", cfg, func(a string) { ready <- a }, logs.printf) }()
	select {
	case addr = <-ready:
	case err := <-errc:
		cancel()
		t.Fatalf("serve: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("no listening address")
	}
	var once sync.Once
	var serr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case serr = <-errc:
			case <-time.After(20 * time.Second):
				serr = errors.New("serve did not return 20 s after its context ended")
			}
		})
		return serr
	}
	t.Cleanup(func() { _ = stop() })
	return addr, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}, stop, logs
}

// frame returns body with its 4-byte big-endian length prefix.
func frame(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// dial connects with cfg; every read and write has a deadline.
func dial(t *testing.T, addr string, cfg *tls.Config) (*tls.Conn, *bufio.Reader) {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	return c, bufio.NewReader(c)
}

// expect reads one frame from r and checks that its body is want.
func expect(t *testing.T, r *bufio.Reader, want []byte) {
	t.Helper()
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		t.Fatalf("want a %d-byte frame: %v", len(want), err)
	}
	got := make([]byte, binary.BigEndian.Uint32(h[:]))
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatalf("want a %d-byte frame: %v", len(want), err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got a %d-byte frame %.40q, want %d bytes %.40q", len(got), got, len(want), want)
	}
}

// TestEchoFrames checks the framing over TLS 1.3: a frame written one byte
// per TLS record, frames coalesced in one record (the last of them split
// with the next write), an empty frame, a frame larger than a TLS record
// and larger than bufio's buffer, and a 64-byte pipeline as a load
// generator sends it.
func TestEchoFrames(t *testing.T) {
	addr, client, _, _ := start(t, true)
	c, r := dial(t, addr, client)
	if st := c.ConnectionState(); st.Version != tls.VersionTLS13 || st.CurveID != tls.X25519 {
		t.Fatalf("negotiated %s with %s, want TLS 1.3 with X25519", tls.VersionName(st.Version), st.CurveID)
	}
	send := func(b []byte) {
		t.Helper()
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
	}

	split := []byte("split into one record per byte")
	for _, b := range frame(split) {
		send([]byte{b})
	}
	expect(t, r, split)

	bodies := [][]byte{[]byte("one"), {}, []byte("three"), []byte("four, split")}
	var burst []byte
	for _, b := range bodies {
		burst = append(burst, frame(b)...)
	}
	cut := len(burst) - 5
	send(burst[:cut])
	time.Sleep(20 * time.Millisecond) // the last frame's tail arrives in a later record
	send(burst[cut:])
	for _, b := range bodies {
		expect(t, r, b)
	}

	big := bytes.Repeat([]byte("0123456789abcdef"), 100<<10/16) // 100 KiB: several records
	send(frame(big))
	expect(t, r, big)

	var pipe []byte
	msgs := make([][]byte, 8)
	for i := range msgs {
		msgs[i] = bytes.Repeat([]byte{byte('a' + i)}, 64)
		pipe = append(pipe, frame(msgs[i])...)
	}
	for range 100 {
		send(pipe)
		for _, m := range msgs {
			expect(t, r, m)
		}
	}
}

// TestFrameTooLarge checks that a header over 1 MiB closes the connection
// without a reply, and that the server serves the next one.
func TestFrameTooLarge(t *testing.T) {
	addr, client, _, _ := start(t, true)
	c, r := dial(t, addr, client)
	if _, err := c.Write(binary.BigEndian.AppendUint32(nil, maxFrameBytes+1)); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Read(make([]byte, 16)); err == nil {
		t.Fatalf("read %d bytes after an oversized header, want the connection closed", n)
	}
	c2, r2 := dial(t, addr, client)
	if _, err := c2.Write(frame([]byte("next"))); err != nil {
		t.Fatal(err)
	}
	expect(t, r2, []byte("next"))
}

// TestResumeAndVersions checks session resumption with the standard
// library's tickets, that TLS 1.2 is refused by default and accepted with
// -tls13-only=false, and the handshake tally logged at shutdown.
func TestResumeAndVersions(t *testing.T) {
	addr, client, stop, logs := start(t, true)
	client.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	for i, wantResumed := range []bool{false, true} {
		c, r := dial(t, addr, client)
		// A TLS 1.3 ticket arrives after the handshake: a round trip reads it.
		if _, err := c.Write(frame([]byte("x"))); err != nil {
			t.Fatal(err)
		}
		expect(t, r, []byte("x"))
		if got := c.ConnectionState().DidResume; got != wantResumed {
			t.Fatalf("connection %d: DidResume %v, want %v", i, got, wantResumed)
		}
		_ = c.Close()
	}

	old := client.Clone()
	old.ClientSessionCache = nil
	old.MaxVersion = tls.VersionTLS12
	if c, err := tls.Dial("tcp", addr, old); err == nil {
		_ = c.Close()
		t.Fatal("a TLS 1.2 client was accepted with -tls13-only")
	}

	if err := stop(); err != nil {
		t.Fatalf("serve after its context ended: %v", err)
	}
	got := logs.String()
	for _, want := range []string{"full TLS 1.3 ", "resumed TLS 1.3 ", " X25519: 1"} {
		if !strings.Contains(got, want) {
			t.Errorf("tally %q lacks %q", got, want)
		}
	}

	addr12, client12, _, _ := start(t, false)
	client12.MaxVersion = tls.VersionTLS12
	c, r := dial(t, addr12, client12)
	if v := c.ConnectionState().Version; v != tls.VersionTLS12 {
		t.Fatalf("negotiated %s, want TLS 1.2", tls.VersionName(v))
	}
	if _, err := c.Write(frame([]byte("1.2"))); err != nil {
		t.Fatal(err)
	}
	expect(t, r, []byte("1.2"))
}

// TestShutdownClosesConnections checks that serve returns nil once its
// context ends, with an idle connection and one mid-frame still open.
func TestShutdownClosesConnections(t *testing.T) {
	addr, client, stop, _ := start(t, true)
	_, r1 := dial(t, addr, client)
	c2, r2 := dial(t, addr, client)
	if _, err := c2.Write(frame([]byte("half"))[:5]); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	for i, r := range []*bufio.Reader{r1, r2} {
		if _, err := r.ReadByte(); err == nil {
			t.Fatalf("connection %d: read a byte after shutdown, want it closed", i)
		}
	}
}

// TestCommand runs the command: exactly one stdout line "listening on
// 127.0.0.1:PORT", an echo there, and exit status 0 after SIGTERM.
func TestCommand(t *testing.T) {
	certFile, keyFile, roots := writePair(t, t.TempDir())
	cmd := exec.Command(os.Args[0], "-addr", "127.0.0.1:0", "-cert", certFile, "-key", keyFile)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	lines := bufio.NewScanner(stdout)
	linec := make(chan string, 1)
	go func() {
		if lines.Scan() {
			linec <- lines.Text()
		}
		close(linec)
	}()
	var line string
	select {
	case line = <-linec:
	case <-time.After(30 * time.Second):
		t.Fatal("no listening line")
	}
	addr, ok := strings.CutPrefix(line, "listening on ")
	if !ok || !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
		t.Fatalf("first line %q, want \"listening on 127.0.0.1:PORT\" (stderr: %s)", line, stderr.String())
	}
	conn, r := dial(t, addr, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	if _, err := conn.Write(frame([]byte("hello"))); err != nil {
		t.Fatal(err)
	}
	expect(t, r, []byte("hello"))

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for lines.Scan() {
			t.Errorf("another stdout line: %q", lines.Text())
		}
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v (stderr: %s)", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("still running 20 s after SIGTERM")
	}
	if !strings.Contains(stderr.String(), "handshakes: full TLS 1.3 TLS_") {
		t.Fatalf("stderr %q lacks the handshake tally", stderr.String())
	}
}
