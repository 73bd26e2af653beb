//go:build linux

package bench

import (
	"testing"
	"time"
)

// TestCollectRejectHistogram: the rejects' latencies of every loop come
// back merged in RejectLatency and, encoded, in RejectHistogramV2, which
// decodes to the same summary; a run without rejects carries neither.
func TestCollectRejectHistogram(t *testing.T) {
	cfg := LoadConfig{Conns: 2, Duration: time.Second}
	workers := make([]*tally, 2)
	for i := range workers {
		w := new(tally)
		*w = newTally()
		for v := int64(1); v <= 500; v++ {
			recordNanos(w.rejHist, (int64(i)*500+v)*1000) // 1..1000 µs over both loops
		}
		w.rejects[0] = 500
		recordNanos(w.hist, 2_000_000)
		w.msgs = 1
		workers[i] = w
	}
	res := collect(&cfg, workers, 2, 0, &dialFailure{})
	if res.Rejected != 1000 || res.RejectLatency == nil || res.RejectHistogramV2 == "" || res.HistogramV2 == "" {
		t.Fatalf("rejected %d, latency %v, histogram %q", res.Rejected, res.RejectLatency, res.RejectHistogramV2)
	}
	if p := res.RejectLatency.P99Micros; p < 989 || p > 991 {
		t.Errorf("reject p99 %v µs, want 990", p)
	}
	h, err := DecodeHistogram(res.RejectHistogramV2)
	if err != nil {
		t.Fatal(err)
	}
	if s := Summarize(h); s != *res.RejectLatency {
		t.Errorf("decoded %+v, want %+v", s, *res.RejectLatency)
	}

	quiet := newTally()
	if res := collect(&cfg, []*tally{&quiet}, 1, 0, &dialFailure{}); res.RejectLatency != nil || res.RejectHistogramV2 != "" {
		t.Errorf("no rejects: latency %v, histogram %q", res.RejectLatency, res.RejectHistogramV2)
	}
}
