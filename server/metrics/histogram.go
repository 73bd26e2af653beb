package metrics

import (
	"fmt"
	"math"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicenet/sluice/server"
)

// HistogramSnapshot is a classic histogram read at one moment: Buckets are
// the upper bounds (inclusive, Prometheus "le"), finite and strictly
// increasing, in the metric's base unit (seconds, bytes); Counts[i] counts
// the observations in (Buckets[i-1], Buckets[i]] and Counts[len(Buckets)]
// those above the last bound, so len(Counts) == len(Buckets)+1 and every
// observation increments exactly one slot. Counts are per bucket, not
// cumulative: a loop keeps them as a plain array it owns and the
// collector makes them cumulative at scrape. Sum is the sum of the observed
// values. The zero value means "not measured" and is not exported.
//
// A snapshot summed over loops is the element-wise sum of their Counts and
// Sums (the loops must share Buckets).
type HistogramSnapshot struct {
	Buckets []float64
	Counts  []uint64
	Sum     float64
}

// Count returns the number of observations.
func (h HistogramSnapshot) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// empty reports the zero value (nothing to export).
func (h HistogramSnapshot) empty() bool { return len(h.Buckets) == 0 && len(h.Counts) == 0 }

// Validate reports a malformed snapshot (ErrBadHistogram).
func (h HistogramSnapshot) Validate() error {
	if len(h.Counts) != len(h.Buckets)+1 {
		return fmt.Errorf("%w: %d bounds need %d counts, have %d",
			ErrBadHistogram, len(h.Buckets), len(h.Buckets)+1, len(h.Counts))
	}
	for i, b := range h.Buckets {
		if math.IsNaN(b) || math.IsInf(b, 0) {
			return fmt.Errorf("%w: bound %d is %v", ErrBadHistogram, i, b)
		}
		if i > 0 && b <= h.Buckets[i-1] {
			return fmt.Errorf("%w: bound %d (%v) not above bound %d (%v)", ErrBadHistogram, i, b, i-1, h.Buckets[i-1])
		}
	}
	return nil
}

// metric converts h to a Prometheus const histogram.
func (h HistogramSnapshot) metric(d *prometheus.Desc) prometheus.Metric {
	if err := h.Validate(); err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	cum := make(map[float64]uint64, len(h.Buckets))
	var n uint64
	for i, b := range h.Buckets {
		n += h.Counts[i]
		cum[b] = n
	}
	n += h.Counts[len(h.Buckets)]
	m, err := prometheus.NewConstHistogram(d, n, h.Sum, cum)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}

// Histograms are the engine's distributions, each summed over loops, with
// the fields and meanings of server.EngineHistograms (which converts to it
// field by field). A field left at its zero value is not exported. Units
// are the metric's: seconds for durations, bytes for depths, a plain count
// for events.
type Histograms struct {
	// LoopTurnSeconds: one observation per loop turn, from the return of
	// epoll_wait to the end of the flush phase (the work of the turn,
	// without the sleep).
	LoopTurnSeconds HistogramSnapshot
	// LoopLagSeconds: one observation per turn that found events, the
	// longest one of them can have waited between becoming ready and the
	// loop seeing it: the time since the previous wait returned, or 0 when
	// this wait slept (the events woke the loop).
	LoopLagSeconds HistogramSnapshot
	// EventsPerTurn: one observation per turn, the number of events
	// epoll_wait returned.
	EventsPerTurn HistogramSnapshot
	// OutQueueBytes: one observation per flush, the connection's queued
	// output bytes before the writev (per-connection out-queue depth).
	OutQueueBytes HistogramSnapshot
	// RequestSeconds: one observation per decoded frame, the duration of
	// the turn that decoded it (wait return to end of flush): an upper
	// bound of decode-to-reply-flushed for replies written inline and
	// flushed in that turn, measured with one clock read per turn.
	// Replies flushed in a later turn are not followed.
	RequestSeconds HistogramSnapshot
}

// EngineHistograms returns a HistogramSource over e.Histograms.
// NewForEngine, and New with an engine as its Source, use it unless
// Options.Histograms is set.
func EngineHistograms(e *server.Engine) HistogramSource {
	return HistogramFunc(func() Histograms {
		h := e.Histograms()
		return Histograms{
			LoopTurnSeconds: HistogramSnapshot(h.LoopTurnSeconds),
			LoopLagSeconds:  HistogramSnapshot(h.LoopLagSeconds),
			EventsPerTurn:   HistogramSnapshot(h.EventsPerTurn),
			OutQueueBytes:   HistogramSnapshot(h.OutQueueBytes),
			RequestSeconds:  HistogramSnapshot(h.RequestSeconds),
		}
	})
}

// HistogramSource returns the engine's histograms summed over loops. It is
// called once per scrape, from the scrape's goroutine.
type HistogramSource interface {
	Histograms() Histograms
}

// HistogramFunc adapts a function to HistogramSource.
type HistogramFunc func() Histograms

// Histograms calls f.
func (f HistogramFunc) Histograms() Histograms { return f() }

// histogram metric names and help texts, in Histograms field order.
var histogramMetrics = [...]struct{ name, help string }{
	{"sluice_loop_turn_duration_seconds", "Duration of one event loop turn, from the return of epoll_wait to the end of the flush phase (the sleep excluded)."},
	{"sluice_loop_lag_seconds", "Loop lag per turn with events: the longest an event can have waited between becoming ready and the loop seeing it (time since the previous epoll_wait returned; 0 when the loop slept and the events woke it)."},
	{"sluice_loop_turn_events", "epoll events handled per loop turn."},
	{"sluice_out_queue_depth_bytes", "Per-connection out-queue depth in bytes, observed before each flush."},
	{"sluice_request_duration_seconds", "Request latency per decoded frame, bounded from above by the duration of the loop turn that decoded it and flushed its reply."},
}

type histogramDescs [len(histogramMetrics)]*prometheus.Desc

func newHistogramDescs(cl prometheus.Labels) *histogramDescs {
	var d histogramDescs
	for i, m := range histogramMetrics {
		d[i] = prometheus.NewDesc(m.name, m.help, nil, cl)
	}
	return &d
}

func (d *histogramDescs) describe(ch chan<- *prometheus.Desc) {
	for _, x := range d {
		ch <- x
	}
}

func (d *histogramDescs) collect(ch chan<- prometheus.Metric, h *Histograms) {
	all := [len(histogramMetrics)]*HistogramSnapshot{
		&h.LoopTurnSeconds, &h.LoopLagSeconds, &h.EventsPerTurn, &h.OutQueueBytes, &h.RequestSeconds,
	}
	for i, s := range all {
		if !s.empty() {
			ch <- s.metric(d[i])
		}
	}
}
