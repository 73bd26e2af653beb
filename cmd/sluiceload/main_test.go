//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicenet/sluice/bench"
	"github.com/sluicenet/sluice/internal/loadcmd"
)

// echoServer is a loopback echo server in this process, closed with the test.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(c, c) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// TestSluiceloadAgainstEcho runs the command for about a second against an
// echo server on loopback: a closed loop with the JSON result and the SVG
// chart, then an open loop with the summary.
func TestSluiceloadAgainstEcho(t *testing.T) {
	addr := echoServer(t)
	svg := filepath.Join(t.TempDir(), "latency.svg")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	var out, errOut bytes.Buffer
	var res bench.LoadResult
	// The window is wall time, not work: when a run answered nothing and
	// nothing failed (a loaded machine may not, in 600 ms), it runs again
	// with a window twice as long, up to 4.8 s.
	for window := 600 * time.Millisecond; ; window *= 2 {
		out.Reset()
		err := loadcmd.Run(ctx, "sluiceload", []string{"-addr", addr, "-codec", "length", "-conns", "8", "-inflight", "4",
			"-size", "64", "-warmup", "100ms", "-duration", window.String(), "-json", "-svg", svg}, &out, &errOut)
		if err != nil {
			t.Fatalf("closed loop: %v (%s)", err, errOut.String())
		}
		res = bench.LoadResult{}
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("JSON result: %v\n%s", err, out.String())
		}
		if res.Msgs > 0 || len(res.Errors) > 0 || window >= 4*time.Second {
			break
		}
		t.Logf("no message answered in a %v window: again with %v", window, 2*window)
	}
	if res.Mode != "closed" || res.Msgs == 0 || len(res.Errors) != 0 || res.Latency.P99Micros <= 0 {
		t.Fatalf("closed loop: mode %s, %d msgs, errors %v, p99 %v", res.Mode, res.Msgs, res.Errors, res.Latency.P99Micros)
	}
	chart, err := os.ReadFile(svg)
	if err != nil || !bytes.Contains(chart, []byte("<svg")) || !bytes.Contains(chart, []byte("99.9%")) {
		t.Fatalf("chart: %v, %d bytes", err, len(chart))
	}

	out.Reset()
	err = loadcmd.Run(ctx, "sluiceload", []string{"-addr", addr, "-codec", "line", "-conns", "4", "-rate", "2000",
		"-size", "32", "-warmup", "50ms", "-duration", "300ms"}, &out, &errOut)
	if err != nil {
		t.Fatalf("open loop: %v (%s)", err, errOut.String())
	}
	for _, want := range []string{"open loop, line codec", "throughput", "latency     p50", "offered 2.00k/s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSluiceloadUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := loadcmd.Run(context.Background(), "sluiceload", []string{"-bogus"}, &out, &errOut); !errors.Is(err, loadcmd.ErrUsage) {
		t.Fatalf("unknown flag: %v", err)
	}
	if !strings.Contains(errOut.String(), "-codec") {
		t.Fatalf("no usage on stderr:\n%s", errOut.String())
	}
	// lab/tls-compare.sh runs only generators whose usage lists these.
	listed := map[string]bool{}
	for _, line := range strings.Split(errOut.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(line, "  -") {
			listed[f[0]] = true
		}
	}
	for _, flag := range []string{"-tls", "-tls-ca", "-tls-insecure", "-tls-resume", "-handshakes"} {
		if !listed[flag] {
			t.Errorf("usage lacks %s", flag)
		}
	}
	if err := loadcmd.Run(context.Background(), "sluiceload", []string{"-codec", "varint"}, &out, &errOut); !errors.Is(err, bench.ErrInvalidConfig) {
		t.Fatalf("unknown codec: %v", err)
	}
}
