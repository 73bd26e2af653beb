package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicenet/sluice/tlsutil"
)

// certFiles writes a self-signed certificate for 127.0.0.1 and localhost
// (tlsutil.WriteSelfSigned), and its key, as PEM files in a temporary
// directory.
func certFiles(t *testing.T) (cert, key string) {
	t.Helper()
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := tlsutil.WriteSelfSigned(cert, key); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// needTool skips a test whose real client is not installed, except in CI
// (.ci/run installs them), where its absence fails the test.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed", name)
		}
		t.Skipf("%s is not installed", name)
	}
	return p
}

// sClient runs openssl s_client against addr with extra arguments and
// plays steps: each writes its input, then reads output until its want
// appears (or the client exits). It returns the output. The process is
// killed by its pid at the end.
func sClient(t *testing.T, addr, ca string, steps [][2]string, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	args := append([]string{"s_client", "-connect", addr, "-CAfile", ca, "-verify_return_error", "-servername", "localhost"}, extra...)
	cmd := exec.CommandContext(ctx, needTool(t, "openssl"), args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	var seen strings.Builder
	sc := bufio.NewScanner(out)
	for _, st := range steps {
		if _, err := in.Write([]byte(st[0])); err != nil {
			break // the client exited
		}
		for !strings.Contains(seen.String(), st[1]) && sc.Scan() {
			seen.WriteString(sc.Text() + "\n")
		}
	}
	return seen.String()
}

// TestTLSOpenSSL: openssl s_client verifies the echo server's certificate
// and gets its line back over TLS 1.3 and 1.2; a renegotiation attempt
// (TLS 1.2) closes that connection with the tls cause, and the server
// goes on serving.
func TestTLSOpenSSL(t *testing.T) {
	cert, key := certFiles(t)
	c := startCommand(t, "-addr", "127.0.0.1:0", "-codec", "line", "-tls-cert", cert, "-tls-key", key, "-admin-addr", "127.0.0.1:0")
	var adm string
	select {
	case adm = <-c.admin:
	case <-time.After(10 * time.Second):
		t.Fatalf("no admin line on stderr:\n%s", c.errText())
	}
	for _, v := range []string{"-tls1_3", "-tls1_2"} {
		out := sClient(t, c.addr, cert, [][2]string{{"hello over tls\n", "hello over tls\n"}}, "-quiet", v)
		if !strings.Contains(out, "hello over tls\n") {
			t.Errorf("openssl s_client %s: no echo in\n%s", v, out)
		}
	}
	// s_client renegotiates on a line that is just "R"
	out := sClient(t, c.addr, cert, [][2]string{{"before\n", "\nbefore\n"}, {"R\n", "RENEGOTIATING"}, {"", "no renegotiation"}}, "-tls1_2")
	if !strings.Contains(out, "\nbefore\n") || !strings.Contains(out, "RENEGOTIATING") {
		t.Errorf("renegotiation attempt: \n%s", out)
	}
	waitMetric(t, "http://"+adm+"/metrics", `sluice_connections_closed_total{cause="tls"} 1`)
	out = sClient(t, c.addr, cert, [][2]string{{"after\n", "after\n"}}, "-quiet")
	if !strings.Contains(out, "after\n") {
		t.Errorf("after the renegotiation attempt: no echo in\n%s", out)
	}
	c.stop(t)
}

// waitMetric polls url until its body contains want.
func waitMetric(t *testing.T, url, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := get(t, url)
		if strings.Contains(body, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never showed %q", url, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTLSCurl: curl, verifying the certificate, gets the HTTP codec's
// answers over TLS, a request on / and a body echoed on /echo.
func TestTLSCurl(t *testing.T) {
	curl := needTool(t, "curl")
	cert, key := certFiles(t)
	c := startCommand(t, "-addr", "127.0.0.1:0", "-codec", "http", "-tls-cert", cert, "-tls-key", key)
	_, port, _ := net.SplitHostPort(c.addr)
	base := "https://localhost:" + port
	resolve := "localhost:" + port + ":127.0.0.1"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, curl, "-sS", "--cacert", cert, "--resolve", resolve, base+"/").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Hello, World!") {
		t.Errorf("curl /: %v\n%s", err, out)
	}
	out, err = exec.CommandContext(ctx, curl, "-sS", "--cacert", cert, "--resolve", resolve, "--data-binary", "ping over tls", base+"/echo").CombinedOutput()
	if err != nil || string(out) != "ping over tls" {
		t.Errorf("curl /echo: %v\n%q", err, out)
	}
	c.stop(t)
}

// TestTLSReloadOnHUP: on SIGHUP the command serves the pair now in the
// files to the next handshakes; a pair that does not load is logged and
// the previous one stays.
func TestTLSReloadOnHUP(t *testing.T) {
	cert, key := certFiles(t)
	c := startCommand(t, "-addr", "127.0.0.1:0", "-codec", "line", "-tls-cert", cert, "-tls-key", key)
	leaf := func() []byte {
		t.Helper()
		conn, err := tls.Dial("tcp", c.addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Raw
	}
	waitLog := func(want string) {
		t.Helper()
		for end := time.Now().Add(20 * time.Second); !strings.Contains(c.errText(), want); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("no %q in the command's log: %s", want, c.errText())
			}
		}
	}
	first := leaf()
	if err := tlsutil.WriteSelfSigned(cert, key, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(leaf(), first) {
		t.Fatal("a new pair served before SIGHUP")
	}
	if err := c.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog("tls certificate reloaded")
	second := leaf()
	if bytes.Equal(second, first) {
		t.Fatal("the old pair still served after SIGHUP and its reload")
	}
	if err := os.WriteFile(cert, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog("reload failed")
	if !bytes.Equal(leaf(), second) {
		t.Error("a failed reload changed the pair served")
	}
	c.stop(t)
}
