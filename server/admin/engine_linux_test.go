package admin_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/server"
	"github.com/sluicenet/sluice/server/admin"
)

func startEngine(t *testing.T, cfg server.Config, h server.Handler) *server.Engine {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	e, err := server.New(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Errorf("engine Shutdown: %v", err)
		}
	})
	return e
}

// waitStatus polls url until it answers code, for at most 10 s.
func waitStatus(t *testing.T, url string, code int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := do(t, "GET", url)
		if r.code == code {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %d %q after 10s, want %d", url, r.code, r.body, code)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReadyzFollowsEngineGate: with MaxConns 1, one connection closes the
// real engine's gate and /readyz turns 503; closing it reopens the gate
// (MaxConnsLow 0) and /readyz turns 200; Shutdown closes it for good.
func TestReadyzFollowsEngineGate(t *testing.T) {
	e := startEngine(t, server.Config{Loops: 1, MaxConns: 1}, server.HandlerFuncs{})
	s := startAdmin(t, admin.Config{Stats: e})
	url := "http://" + s.Addr().String() + "/readyz"
	waitStatus(t, url, 200)

	c, err := net.DialTimeout("tcp", e.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, url, 503)
	if r := do(t, "GET", url); !strings.Contains(r.body, "listen gate closed") {
		t.Errorf("body %q: want the gate named", r.body)
	}
	c.Close()
	waitStatus(t, url, 200)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, url, 503)
}

// TestAnswersWhileSaturated runs a real engine whose handler burns the
// loop for busyPerFrame on every frame, loads it from pipelining clients
// (two per loop, loops = GOMAXPROCS) so the loops have input queued at all
// times, and checks that /healthz and /metrics answer, each within a
// generous bound, while the loops are busy. It is a liveness check, not a
// performance target.
func TestAnswersWhileSaturated(t *testing.T) {
	const (
		busyPerFrame = 200 * time.Microsecond
		bound        = 5 * time.Second // per request; observed figures are logged
		probes       = 10
	)
	codec, err := protocol.ByName(protocol.NameLine, 0)
	if err != nil {
		t.Fatal(err)
	}
	loops := runtime.GOMAXPROCS(0)
	// A 4 KiB read budget keeps turns short (128 frames, ~26 ms of handler
	// time) so the turn and blocking-wait counts below mean something.
	e := startEngine(t, server.Config{Loops: loops, Codec: codec, ReadBudgetBytes: 4 << 10}, server.HandlerFuncs{
		Frame: func(c *server.Conn, frame []byte) server.Action {
			for t0 := time.Now(); time.Since(t0) < busyPerFrame; {
			}
			if err := c.WriteFrame(frame); err != nil {
				c.CloseWithError(err)
			}
			return server.None
		},
	})
	s := startAdmin(t, admin.Config{Stats: e})
	base := "http://" + s.Addr().String()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 * loops {
		conn, err := net.DialTimeout("tcp", e.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { // writer: frames as fast as the socket takes them
			batch := bytes.Repeat([]byte(strings.Repeat("x", 31)+"\n"), 128)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := conn.Write(batch); err != nil {
					return
				}
			}
		})
		wg.Go(func() { // reader: drain the echoes until the conn closes
			_, _ = io.Copy(io.Discard, conn)
		})
		wg.Go(func() {
			<-stop
			conn.Close()
		})
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()

	// wait until the loops are working
	for deadline := time.Now().Add(10 * time.Second); e.Stats().Frames < 100; {
		if time.Now().After(deadline) {
			t.Fatalf("load did not start: %+v", e.Stats())
		}
		time.Sleep(time.Millisecond)
	}

	s0, t0 := e.Stats(), time.Now()
	var worst [2]time.Duration
	for i := range probes {
		for j, path := range []string{"/healthz", "/metrics"} {
			start := time.Now()
			r := do(t, "GET", base+path)
			d := time.Since(start)
			worst[j] = max(worst[j], d)
			if r.code != 200 {
				t.Errorf("probe %d: %s: status %d", i, path, r.code)
			}
			if d > bound {
				t.Errorf("probe %d: %s took %v, bound %v", i, path, d, bound)
			}
			if path == "/metrics" && !strings.Contains(r.body, "sluice_frames_decoded_total ") {
				t.Errorf("probe %d: /metrics lacks sluice_frames_decoded_total", i)
			}
		}
	}
	// A loop publishes its counters once per turn, and a turn here may be
	// longer than all the probes on a fast machine: the window runs on
	// until every loop ended a few turns in it.
	for deadline := time.Now().Add(10 * time.Second); e.Stats().Turns-s0.Turns < uint64(4*loops) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	s1, elapsed := e.Stats(), time.Since(t0)

	frames := s1.Frames - s0.Frames
	turns := s1.Turns - s0.Turns
	sleeps := s1.BlockingWaits - s0.BlockingWaits
	handlerShare := float64(frames) * busyPerFrame.Seconds() / (elapsed.Seconds() * float64(loops))
	t.Logf("loops %d, %v: %d frames, handler time %.0f%% of loop time, %d turns, %d blocking waits; slowest /healthz %v, /metrics %v",
		loops, elapsed.Round(time.Millisecond), frames, 100*handlerShare, turns, sleeps, worst[0], worst[1])
	// The premise: the loops were busy, not idle, while the probes ran.
	if frames == 0 || sleeps*2 > turns {
		t.Errorf("loops were not saturated during the probes: %d frames, %d of %d turns slept", frames, sleeps, turns)
	}
}
