// Command tls-load drives a TLS echo server (length-prefixed frames, a
// 4-byte big-endian header: cmd/echo -codec length -tls-cert …, or
// lab/cmd/tls-net-echo) for docs/TLS.md's measurements, in three ways:
//
//   - echo: -conns TLS 1.3 connections (AES-128-GCM) echo 64-byte frames in
//     a closed loop, -inflight frames written at once each, every round
//     trip in an HDR histogram;
//   - handshakes (-handshakes): -conns workers each dial, complete a
//     handshake (resumed from a session ticket with -resume), echo one
//     frame and close, again and again;
//   - a flood beside the echo (-flood-conns N): N goroutines replay one
//     captured ClientHello on fresh connections as fast as they can (each
//     costs the server a full handshake: its key exchange and signature; it
//     costs the flooder a dial and a write), reading the server's first
//     flight before closing.
//
// It runs for -duration and prints one JSON line: frames (or handshakes)
// per second, latency percentiles, the ClientHellos answered per second.
//
//	go run ./cmd/tls-load -addr 127.0.0.1:7000 -conns 64 -inflight 8 -duration 5s
//	go run ./cmd/tls-load -addr 127.0.0.1:7000 -conns 16 -handshakes -resume
//	go run ./cmd/tls-load -addr 127.0.0.1:7000 -conns 16 -flood-conns 64
package main

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "tls-load:", err)
		os.Exit(1)
	}
}

// result is the JSON line tls-load prints.
type result struct {
	Mode         string  `json:"mode"` // echo or handshakes
	Conns        int     `json:"conns"`
	Inflight     int     `json:"inflight"`
	FloodConns   int     `json:"flood_conns"`
	Seconds      float64 `json:"seconds"`
	Count        int64   `json:"count"` // frames echoed, or handshakes completed
	PerSec       float64 `json:"per_sec"`
	Resumed      int64   `json:"resumed"` // handshakes that resumed a session
	P50Micro     int64   `json:"p50_us"`  // a round trip, or a dial, handshake and echo
	P99Micro     int64   `json:"p99_us"`
	HellosPerSec float64 `json:"hellos_answered_per_sec"`
	Errors       int64   `json:"errors"`

	ServerCPU      float64 `json:"server_cpu_s,omitempty"`         // -server-pid: its CPU time in the window
	ServerCPUPerOp float64 `json:"server_cpu_us_per_op,omitempty"` // that over Count
}

func run() error {
	addr := flag.String("addr", "", "the TLS echo server")
	conns := flag.Int("conns", 16, "echo connections, or handshake workers with -handshakes")
	inflight := flag.Int("inflight", 1, "echo: frames written at once per connection")
	handshakes := flag.Bool("handshakes", false, "dial, handshake, echo one frame and close, again and again")
	resume := flag.Bool("resume", false, "with -handshakes: resume sessions from tickets")
	floodConns := flag.Int("flood-conns", 0, "goroutines replaying a ClientHello on fresh connections beside the echo")
	serverPid := flag.Int("server-pid", 0, "read this server's CPU time (/proc/PID/stat) at the window's ends: server_cpu_us_per_op")
	duration := flag.Duration("duration", 5*time.Second, "how long to measure")
	flag.Parse()
	if *addr == "" {
		return errors.New("-addr is required")
	}
	if *conns < 1 || *inflight < 1 {
		return errors.New("-conns and -inflight must be at least 1")
	}
	// a measurement, not a trust decision (TLS 1.3: Go picks AES-128-GCM
	// first where the CPU has AES instructions)
	cfg := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}
	if *resume {
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(*conns)
	}
	frame := binary.BigEndian.AppendUint32(nil, 64)
	frame = append(frame, make([]byte, 64)...)
	res := result{Mode: "echo", Conns: *conns, Inflight: *inflight, FloodConns: *floodConns}
	var stop atomic.Bool
	var answered, count, resumed, errs atomic.Int64
	var fwg sync.WaitGroup
	if *floodConns > 0 {
		hello, err := captureHello()
		if err != nil {
			return err
		}
		for range *floodConns {
			fwg.Add(1)
			go func() {
				defer fwg.Done()
				flood(*addr, hello, &stop, &answered)
			}()
		}
	}
	var echo []*tls.Conn
	if !*handshakes {
		echo = make([]*tls.Conn, *conns)
		for i := range echo {
			c, err := tls.Dial("tcp", *addr, cfg)
			if err != nil {
				return fmt.Errorf("echo connection %d: %w", i, err)
			}
			defer c.Close()
			echo[i] = c
		}
	} else {
		res.Mode, res.Inflight = "handshakes", 1
	}
	hists := make([]*hdrhistogram.Histogram, *conns)
	cpu0, err := cpuTime(*serverPid)
	if err != nil {
		return err
	}
	start := time.Now()
	end := start.Add(*duration)
	var wg sync.WaitGroup
	for i := range hists {
		hists[i] = hdrhistogram.New(1, int64(10*time.Second/time.Microsecond), 3)
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := hists[i]
			if *handshakes {
				for time.Now().Before(end) {
					t0 := time.Now()
					did, err := handshakeOnce(*addr, cfg, frame)
					if err != nil {
						errs.Add(1)
						continue
					}
					h.RecordValue(max(1, time.Since(t0).Microseconds()))
					count.Add(1)
					if did {
						resumed.Add(1)
					}
				}
				return
			}
			c := echo[i]
			out := bytes.Repeat(frame, *inflight)
			back := make([]byte, len(out))
			for time.Now().Before(end) {
				t0 := time.Now()
				c.SetDeadline(t0.Add(10 * time.Second))
				if _, err := c.Write(out); err != nil {
					errs.Add(1)
					return
				}
				if _, err := io.ReadFull(c, back); err != nil {
					errs.Add(1)
					return
				}
				h.RecordValue(max(1, time.Since(t0).Microseconds()))
				count.Add(int64(*inflight))
			}
		}()
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	cpu1, err := cpuTime(*serverPid)
	if err != nil {
		return err
	}
	stop.Store(true)
	fwg.Wait()
	all := hdrhistogram.New(1, int64(10*time.Second/time.Microsecond), 3)
	for _, h := range hists {
		all.Merge(h)
	}
	res.Count, res.Resumed, res.Errors = count.Load(), resumed.Load(), errs.Load()
	res.PerSec = float64(res.Count) / res.Seconds
	res.P50Micro, res.P99Micro = all.ValueAtQuantile(50), all.ValueAtQuantile(99)
	res.HellosPerSec = float64(answered.Load()) / res.Seconds
	if *serverPid > 0 {
		res.ServerCPU = (cpu1 - cpu0).Seconds()
		res.ServerCPUPerOp = res.ServerCPU * 1e6 / float64(max(res.Count, 1))
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// cpuTime is pid's user and system CPU time (0 for pid 0), from the 14th
// and 15th fields of /proc/PID/stat in clock ticks (USER_HZ, 100 on
// Linux).
func cpuTime(pid int) (time.Duration, error) {
	if pid <= 0 {
		return 0, nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// the command name, field 2, is in parentheses and may hold spaces
	rest := b[bytes.LastIndexByte(b, ')')+2:]
	f := strings.Fields(string(rest))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// handshakeOnce dials addr, completes a handshake, echoes frame and
// closes; it reports whether the handshake resumed a session.
func handshakeOnce(addr string, cfg *tls.Config, frame []byte) (bool, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return false, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(frame); err != nil {
		return false, err
	}
	if _, err := io.ReadFull(c, make([]byte, len(frame))); err != nil {
		return false, err
	}
	return c.ConnectionState().DidResume, nil
}

// flood replays hello on fresh connections until stop, counting the
// servers' answers.
func flood(addr string, hello []byte, stop *atomic.Bool, answered *atomic.Int64) {
	buf := make([]byte, 1)
	for !stop.Load() {
		c, err := net.DialTimeout("tcp", addr, time.Second)
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
