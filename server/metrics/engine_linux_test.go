package metrics_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/server"
	"github.com/sluicenet/sluice/server/metrics"
	"go.uber.org/goleak"
)

// echo writes every frame back.
var echo = server.HandlerFuncs{Frame: func(c *server.Conn, frame []byte) server.Action {
	if err := c.WriteFrame(frame); err != nil {
		c.CloseWithError(err)
	}
	return server.None
}}

// TestRealEngineCounters runs a real engine (raw codec, echo), sends a
// known load over loopback from a few connections, reads every byte back,

// startWithMetrics starts an echo engine with cfg and registers its
// NewForEngine collector; stop shuts the engine down (deferred by the
// caller, before its goroutine-leak check).
func startWithMetrics(t *testing.T, cfg server.Config) (*server.Engine, *prometheus.Registry, func()) {
	t.Helper()
	e, err := server.New(cfg, echo)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}
	c, err := metrics.NewForEngine(e, metrics.Options{})
	if err != nil {
		stop()
		t.Fatal(err)
	}
	return e, register(t, c), stop
}

// closes, and checks that the scraped counters equal what the test sent.
func TestRealEngineCounters(t *testing.T) {
	defer goleak.VerifyNone(t)
	const (
		conns      = 4
		writes     = 50
		writeBytes = 1000
		perConn    = writes * writeBytes
	)
	e, reg, stop := startWithMetrics(t, server.Config{Addr: "127.0.0.1:0", Loops: 2})
	defer stop()

	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := range conns {
		wg.Go(func() {
			if err := exchange(e.Addr().String(), byte('a'+i), writes, writeBytes); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// The loops publish once per turn and before they sleep: poll until the
	// closes are visible, then compare the whole scrape.
	want := map[string]float64{
		"sluice_connections_accepted_total":                        conns,
		"sluice_connections_open":                                  0,
		`sluice_connections_closed_total{cause="peer_closed"}`:     conns,
		`sluice_connections_closed_total{cause="io_error"}`:        0,
		"sluice_read_bytes_total":                                  conns * perConn,
		"sluice_written_bytes_total":                               conns * perConn,
		"sluice_event_loops":                                       2,
		"sluice_gate_open":                                         1,
		`sluice_queued_bytes{direction="out"}`:                     0,
		`sluice_queued_bytes{direction="in"}`:                      0,
		"sluice_frames_rejected_total":                             0,
		`sluice_accept_errors_total{errno="other"}`:                0,
		`sluice_accept_pauses_total{errno="EMFILE"}`:               0,
		"sluice_backpressure_paused_connections":                   0,
		"sluice_draining":                                          0,
		"sluice_gate_closed_seconds_total":                         0,
		"sluice_gate_transitions_total":                            0,
		`sluice_connections_closed_total{cause="frame_too_large"}`: 0,
	}
	deadline := time.Now().Add(10 * time.Second)
	var vals map[string]float64
	for {
		vals, _ = values(t, reg)
		if diff := compare(vals, want) + histDiff(vals); diff == "" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("after 10s the scrape still differs:\n%s", diff)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Counters that depend on scheduling: bounded, not exact.
	if r := vals["sluice_reads_total"]; r < 1 || r > conns*perConn {
		t.Errorf("reads_total = %v, want in [1, %d]", r, conns*perConn)
	}
	if f := vals["sluice_flushes_total"]; f < 1 {
		t.Errorf("flushes_total = %v, want > 0", f)
	}
	if f := vals["sluice_frames_decoded_total"]; f != vals["sluice_reads_total"] {
		t.Errorf("raw codec: frames %v != reads %v (every read is one frame)", f, vals["sluice_reads_total"])
	}
	if tu := vals["sluice_loop_turns_total"]; tu < vals["sluice_loop_blocking_waits_total"] || tu < 1 {
		t.Errorf("turns %v < blocking waits %v", tu, vals["sluice_loop_blocking_waits_total"])
	}
}

// histDiff checks the engine's histograms (NewForEngine exports them)
// against the counters of the same scrape: one request observation per
// frame, one out-queue depth per flush, one turn duration and one events
// count per turn. They are published with the counters, so they agree once
// the loops sleep.
func histDiff(vals map[string]float64) string {
	var d string
	for _, c := range [][2]string{
		{"sluice_request_duration_seconds", "sluice_frames_decoded_total"},
		{"sluice_out_queue_depth_bytes", "sluice_flushes_total"},
		{"sluice_loop_turn_duration_seconds", "sluice_loop_turns_total"},
		{"sluice_loop_turn_events", "sluice_loop_turns_total"},
	} {
		if h, n := vals[c[0]], vals[c[1]]; h != n || h == 0 {
			d += fmt.Sprintf("  %s count %v, %s %v\n", c[0], h, c[1], n)
		}
	}
	if n := vals["sluice_loop_lag_seconds"]; n < 1 || n > vals["sluice_loop_turns_total"] {
		d += fmt.Sprintf("  loop lag count %v for %v turns\n", n, vals["sluice_loop_turns_total"])
	}
	return d
}

// exchange connects, writes writes×size bytes of b, reads them all back,
// and closes.
func exchange(addr string, b byte, writes, size int) error {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(20 * time.Second)); err != nil {
		return err
	}
	chunk := bytes.Repeat([]byte{b}, size)
	werr := make(chan error, 1)
	go func() {
		for range writes {
			if _, err := conn.Write(chunk); err != nil {
				werr <- err
				return
			}
		}
		werr <- nil
	}()
	got := make([]byte, writes*size)
	if _, err := io.ReadFull(conn, got); err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	if err := <-werr; err != nil {
		return err
	}
	if i := bytes.IndexFunc(got, func(r rune) bool { return r != rune(b) }); i >= 0 {
		return fmt.Errorf("echo byte %d is %q, want %q", i, got[i], b)
	}
	return nil
}

// compare lists the keys of want whose value differs in got.
func compare(got, want map[string]float64) string {
	var d string
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			d += fmt.Sprintf("  %s = %v (present %v), want %v\n", k, g, ok, w)
		}
	}
	return d
}

// TestRealEnginePolicy: for an engine with an admission policy,
// NewForEngine exports the sluice_admission_* metrics from the engine's
// own stats, without an AdmissionSource.
func TestRealEnginePolicy(t *testing.T) {
	defer goleak.VerifyNone(t)
	adm, err := admission.NewAdmitter(admission.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e, reg, stop := startWithMetrics(t, server.Config{Addr: "127.0.0.1:0", Loops: 1, Admission: server.AdmissionPolicy{Admitter: adm}})
	defer stop()
	const writes = 20
	if err := exchange(e.Addr().String(), 'p', writes, 100); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"sluice_admission_policy_enabled":                 1,
		`sluice_admission_gate_state{state="open"}`:       1,
		`sluice_admission_rejects_total{reason="tenant"}`: 0,
		`sluice_rejects_total{reason="tenant"}`:           0,
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		vals, _ := values(t, reg)
		diff := compare(vals, want)
		// raw codec: every read is one frame, each admitted by the policy
		if a, f := vals["sluice_admission_admitted_total"], vals["sluice_frames_decoded_total"]; a < 1 || a != f {
			diff += fmt.Sprintf("  admitted %v, frames %v\n", a, f)
		}
		if diff == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10s the scrape still differs:\n%s", diff)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
