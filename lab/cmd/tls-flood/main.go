// Command tls-flood measures what a TLS handshake flood does to
// established connections (docs/TLS.md, the flood): it keeps -echo-conns
// TLS 1.3 connections echoing 64-byte length-prefixed frames in a closed
// loop, one in flight each, and records each round trip, while -flood-conns
// goroutines replay one captured ClientHello on fresh connections as fast
// as they can (each costs the server a full handshake: its key exchange
// and signature; it costs the flooder a dial and a write), reading the
// server's first flight before closing. With -flood-conns 0 it measures
// the same echo without the flood. It prints one JSON line: the echo's
// rate and latency percentiles, and the ClientHellos answered per second.
//
//	go run ./cmd/tls-flood -addr 127.0.0.1:7000 -flood-conns 64 -duration 5s
package main

import (
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "tls-flood:", err)
		os.Exit(1)
	}
}

// result is the JSON line tls-flood prints.
type result struct {
	EchoConns    int     `json:"echo_conns"`
	FloodConns   int     `json:"flood_conns"`
	Seconds      float64 `json:"seconds"`
	EchoPerSec   float64 `json:"echo_per_sec"`
	EchoP50Micro int64   `json:"echo_p50_us"`
	EchoP99Micro int64   `json:"echo_p99_us"`
	HellosPerSec float64 `json:"hellos_answered_per_sec"`
	EchoErrors   int64   `json:"echo_errors"`
}

func run() error {
	addr := flag.String("addr", "", "the TLS echo server (length-prefixed frames, 4-byte big-endian header)")
	echoConns := flag.Int("echo-conns", 16, "established connections echoing, one frame in flight each")
	floodConns := flag.Int("flood-conns", 64, "goroutines replaying a ClientHello on fresh connections (0: no flood)")
	duration := flag.Duration("duration", 5*time.Second, "how long to measure")
	flag.Parse()
	if *addr == "" {
		return errors.New("-addr is required")
	}
	hello, err := captureHello()
	if err != nil {
		return err
	}
	cfg := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13} // a measurement, not a trust decision
	conns := make([]*tls.Conn, *echoConns)
	for i := range conns {
		if conns[i], err = tls.Dial("tcp", *addr, cfg); err != nil {
			return fmt.Errorf("echo connection %d: %w", i, err)
		}
		defer conns[i].Close()
	}
	var stop atomic.Bool
	var answered, echoErrs atomic.Int64
	var wg sync.WaitGroup
	for range *floodConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1)
			for !stop.Load() {
				c, err := net.DialTimeout("tcp", *addr, time.Second)
				if err != nil {
					continue // the listen gate holds it in the backlog, or the backlog is full
				}
				c.SetDeadline(time.Now().Add(time.Second))
				if _, err := c.Write(hello); err == nil {
					if _, err := c.Read(buf); err == nil {
						answered.Add(1)
					}
				}
				c.Close()
			}
		}()
	}
	hists := make([]*hdrhistogram.Histogram, len(conns))
	start := time.Now()
	end := start.Add(*duration)
	var ewg sync.WaitGroup
	for i, c := range conns {
		hists[i] = hdrhistogram.New(1, int64(10*time.Second/time.Microsecond), 3)
		ewg.Add(1)
		go func() {
			defer ewg.Done()
			msg := binary.BigEndian.AppendUint32(nil, 64)
			msg = append(msg, make([]byte, 64)...)
			back := make([]byte, len(msg))
			for time.Now().Before(end) {
				t0 := time.Now()
				c.SetDeadline(t0.Add(10 * time.Second))
				if _, err := c.Write(msg); err != nil {
					echoErrs.Add(1)
					return
				}
				if _, err := io.ReadFull(c, back); err != nil {
					echoErrs.Add(1)
					return
				}
				hists[i].RecordValue(max(1, time.Since(t0).Microseconds()))
			}
		}()
	}
	ewg.Wait()
	elapsed := time.Since(start).Seconds()
	stop.Store(true)
	wg.Wait()
	all := hdrhistogram.New(1, int64(10*time.Second/time.Microsecond), 3)
	for _, h := range hists {
		all.Merge(h)
	}
	return json.NewEncoder(os.Stdout).Encode(result{
		EchoConns: *echoConns, FloodConns: *floodConns, Seconds: elapsed,
		EchoPerSec:   float64(all.TotalCount()) / elapsed,
		EchoP50Micro: all.ValueAtQuantile(50), EchoP99Micro: all.ValueAtQuantile(99),
		HellosPerSec: float64(answered.Load()) / elapsed,
		EchoErrors:   echoErrs.Load(),
	})
}

// captureHello returns the bytes of one TLS 1.3 ClientHello as crypto/tls
// writes it (X25519 key share offered), for the flood to replay.
func captureHello() ([]byte, error) {
	rec := &recorder{}
	c := tls.Client(rec, &tls.Config{InsecureSkipVerify: true, ServerName: "localhost",
		MinVersion: tls.VersionTLS13, CurvePreferences: []tls.CurveID{tls.X25519}})
	_ = c.Handshake() // fails after the hello: the recorder has no server
	if len(rec.out) == 0 {
		return nil, errors.New("no ClientHello written")
	}
	return rec.out, nil
}

// recorder is a net.Conn that keeps what is written and has nothing to read.
type recorder struct{ out []byte }

func (r *recorder) Write(b []byte) (int, error) { r.out = append(r.out, b...); return len(b), nil }
func (r *recorder) Read([]byte) (int, error)    { return 0, io.EOF }
func (r *recorder) Close() error                { return nil }
func (r *recorder) LocalAddr() net.Addr         { return &net.TCPAddr{} }
func (r *recorder) RemoteAddr() net.Addr        { return &net.TCPAddr{} }
func (r *recorder) SetDeadline(time.Time) error { return nil }
func (r *recorder) SetReadDeadline(time.Time) error {
	return nil
}
func (r *recorder) SetWriteDeadline(time.Time) error { return nil }
