package metrics_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sluicenet/sluice/server"
	"github.com/sluicenet/sluice/server/metrics"
)

func scriptedHistograms() server.EngineHistograms {
	return server.EngineHistograms{
		LoopTurnSeconds: server.Histogram{
			Buckets: []float64{1e-5, 1e-4, 1e-3},
			Counts:  []uint64{10, 5, 2, 1}, // 1 above 1ms
			Sum:     0.0042,
		},
		EventsPerTurn: server.Histogram{
			Buckets: []float64{1, 2, 4, 8},
			Counts:  []uint64{3, 0, 4, 0, 0},
			Sum:     15,
		},
		// LoopLagSeconds, OutQueueBytes, RequestSeconds: not measured
	}
}

func TestHistogramExposition(t *testing.T) {
	s := scripted()
	c := newCollector(t, metrics.SourceFunc(func() server.Stats { return s }),
		metrics.Options{Histograms: metrics.HistogramFunc(scriptedHistograms)})
	want := `
# HELP sluice_loop_turn_duration_seconds Duration of one event loop turn, from the return of epoll_wait to the end of the flush phase (the sleep excluded).
# TYPE sluice_loop_turn_duration_seconds histogram
sluice_loop_turn_duration_seconds_bucket{le="1e-05"} 10
sluice_loop_turn_duration_seconds_bucket{le="0.0001"} 15
sluice_loop_turn_duration_seconds_bucket{le="0.001"} 17
sluice_loop_turn_duration_seconds_bucket{le="+Inf"} 18
sluice_loop_turn_duration_seconds_sum 0.0042
sluice_loop_turn_duration_seconds_count 18
# HELP sluice_loop_turn_events epoll events handled per loop turn.
# TYPE sluice_loop_turn_events histogram
sluice_loop_turn_events_bucket{le="1"} 3
sluice_loop_turn_events_bucket{le="2"} 3
sluice_loop_turn_events_bucket{le="4"} 7
sluice_loop_turn_events_bucket{le="8"} 7
sluice_loop_turn_events_bucket{le="+Inf"} 7
sluice_loop_turn_events_sum 15
sluice_loop_turn_events_count 7
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"sluice_loop_turn_duration_seconds", "sluice_loop_turn_events"); err != nil {
		t.Fatal(err)
	}
	// the zero-value histograms are not exported
	for _, name := range []string{"sluice_loop_lag_seconds", "sluice_out_queue_depth_bytes", "sluice_request_duration_seconds"} {
		if n := testutil.CollectAndCount(c, name); n != 0 {
			t.Errorf("%s: %d series for an unmeasured histogram, want 0", name, n)
		}
	}
}

func TestHistogramValidate(t *testing.T) {
	for i, tc := range []struct {
		h  server.Histogram
		ok bool
	}{
		{server.Histogram{Buckets: []float64{1, 2}, Counts: []uint64{0, 0, 0}}, true},
		{server.Histogram{Buckets: nil, Counts: []uint64{4}, Sum: 1}, true}, // only +Inf
		{server.Histogram{Buckets: []float64{1, 2}, Counts: []uint64{0, 0}}, false},
		{server.Histogram{Buckets: []float64{2, 1}, Counts: []uint64{0, 0, 0}}, false},
		{server.Histogram{Buckets: []float64{1, 1}, Counts: []uint64{0, 0, 0}}, false},
		{server.Histogram{Buckets: []float64{1, math.Inf(1)}, Counts: []uint64{0, 0, 0}}, false},
		{server.Histogram{Buckets: []float64{math.NaN()}, Counts: []uint64{0, 0}}, false},
		{server.Histogram{Buckets: []float64{1}}, false},
	} {
		err := tc.h.Validate()
		if tc.ok != (err == nil) || err != nil && !errors.Is(err, metrics.ErrBadHistogram) {
			t.Errorf("%d: Validate = %v, want ok=%v", i, err, tc.ok)
		}
	}
	if n := (server.Histogram{Counts: []uint64{1, 2, 3}}).Count(); n != 6 {
		t.Errorf("Count = %d, want 6", n)
	}
}

// TestBadHistogramFailsOnlyItself: a malformed snapshot fails its own
// metric with ErrBadHistogram; the engine metrics still come through.
func TestBadHistogramFailsOnlyItself(t *testing.T) {
	h := server.EngineHistograms{RequestSeconds: server.Histogram{Buckets: []float64{1, 2}, Counts: []uint64{1}}}
	c := newCollector(t, metrics.SourceFunc(func() server.Stats { return server.Stats{Accepted: 1} }),
		metrics.Options{Histograms: metrics.HistogramFunc(func() server.EngineHistograms { return h })})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if errs := gatherErrors(err); len(errs) != 1 || !errors.Is(errs[0], metrics.ErrBadHistogram) {
		t.Fatalf("Gather err = %v, want one ErrBadHistogram", err)
	}
	if len(mfs) < 20 {
		t.Fatalf("%d families after a bad histogram, want the engine's", len(mfs))
	}
}
