package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicenet/sluice/server"
)

// histMetric converts h to a Prometheus const histogram; a malformed h is
// an invalid metric (ErrBadHistogram), which fails that metric only.
func histMetric(h server.Histogram, d *prometheus.Desc) prometheus.Metric {
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

// HistogramSource returns the engine's histograms summed over loops
// (server.EngineHistograms: a field left at its zero value is not
// exported). It is called once per scrape, from the scrape's goroutine. A
// *server.Engine is one.
type HistogramSource interface {
	Histograms() server.EngineHistograms
}

// HistogramFunc adapts a function to HistogramSource.
type HistogramFunc func() server.EngineHistograms

// Histograms calls f.
func (f HistogramFunc) Histograms() server.EngineHistograms { return f() }

// histogram metric names and help texts, in server.EngineHistograms field
// order.
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

func (d *histogramDescs) collect(ch chan<- prometheus.Metric, h *server.EngineHistograms) {
	all := [len(histogramMetrics)]*server.Histogram{
		&h.LoopTurnSeconds, &h.LoopLagSeconds, &h.EventsPerTurn, &h.OutQueueBytes, &h.RequestSeconds,
	}
	for i, s := range all {
		if len(s.Buckets) != 0 || len(s.Counts) != 0 { // the zero value: not measured
			ch <- histMetric(*s, d[i])
		}
	}
}
