package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicenet/sluice/server"
)

// Source returns an engine's stats snapshot. *server.Engine implements it;
// tests implement it with SourceFunc.
type Source interface {
	Stats() server.Stats
}

// SourceFunc adapts a function to Source.
type SourceFunc func() server.Stats

// Stats calls f.
func (f SourceFunc) Stats() server.Stats { return f() }

// LogSource reports how many log records a rate limiter dropped;
// *ratelog.Handler implements it.
type LogSource interface {
	Suppressed() uint64
}

// Options configures a Collector. The zero value exports the engine's
// metrics only.
type Options struct {
	// ConstLabels are added to every metric, for example
	// {"server": "echo"} when one process runs several engines. Nil: none.
	ConstLabels prometheus.Labels

	// Admission, when set, adds the sluice_admission_* metrics. Nil with
	// a *server.Engine source whose Config.Admission is an AdmissionPolicy: they come from
	// its Stats.Admission.Policy, without the per-class and per-tenant
	// series only an AdmissionSource can give.
	Admission AdmissionSource

	// Histograms, when set, adds the loop and request histograms. Nil
	// with a *server.Engine as the source: the engine itself (its
	// Histograms method); nil otherwise: none.
	Histograms HistogramSource

	// Logs, when set, adds sluice_log_records_suppressed_total.
	Logs LogSource

	// MaxTenantSeries caps the tenants exported with their own series.
	// Zero: DefaultMaxTenantSeries; negative: none.
	MaxTenantSeries int
}

// Collector is a prometheus.Collector over an engine's stats. Each Collect
// takes one snapshot from each source and builds const metrics from it; the
// engine's loops are never locked or slowed by a scrape. It is safe for
// concurrent use (as safe as its sources; server.Engine.Stats is).
type Collector struct {
	src  Source
	opts Options

	engine engineDescs
	engAdm engineAdmDescs
	adm    *admissionDescs
	// admFromStats: the admission metrics come from Stats.Admission.Policy
	admFromStats bool
	hist         *histogramDescs
	logs         *prometheus.Desc
}

// New returns a Collector over src. It fails only without a source
// (ErrNilSource); invalid ConstLabels are reported by Registry.Register.
// When src is a *server.Engine and opts.Histograms is nil, the engine's
// histograms are exported too.
func New(src Source, opts Options) (*Collector, error) {
	if src == nil {
		return nil, ErrNilSource
	}
	if opts.MaxTenantSeries == 0 {
		opts.MaxTenantSeries = DefaultMaxTenantSeries
	}
	opts.MaxTenantSeries = max(opts.MaxTenantSeries, 0)
	if e, ok := src.(*server.Engine); ok && e != nil && opts.Histograms == nil {
		opts.Histograms = e
	}
	c := &Collector{src: src, opts: opts, engine: newEngineDescs(opts.ConstLabels), engAdm: newEngineAdmDescs(opts.ConstLabels)}
	if e, ok := src.(*server.Engine); ok && e != nil && opts.Admission == nil {
		c.admFromStats = e.Stats().Admission.Enabled // fixed by the engine's Config
	}
	if opts.Admission != nil || c.admFromStats {
		c.adm = newAdmissionDescs(opts.ConstLabels, opts.MaxTenantSeries)
	}
	if opts.Histograms != nil {
		c.hist = newHistogramDescs(opts.ConstLabels)
	}
	if opts.Logs != nil {
		c.logs = prometheus.NewDesc("sluice_log_records_suppressed_total",
			"Log records dropped by the rate limiter (internal/ratelog).", nil, opts.ConstLabels)
	}
	return c, nil
}

// NewForEngine returns a Collector over e's Stats and, unless
// opts.Histograms is set, e's histograms.
func NewForEngine(e *server.Engine, opts Options) (*Collector, error) {
	if e == nil {
		return nil, ErrNilSource
	}
	return New(e, opts)
}

// Describe sends the descriptors of every metric the collector can export.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	c.engine.describe(ch)
	c.engAdm.describe(ch)
	if c.adm != nil {
		c.adm.describe(ch)
	}
	if c.hist != nil {
		c.hist.describe(ch)
	}
	if c.logs != nil {
		ch <- c.logs
	}
}

// Collect takes a snapshot from each source and sends its metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Stats()
	c.engine.collect(ch, &s)
	c.engAdm.collect(ch, &s)
	if c.adm != nil {
		var a AdmissionSnapshot
		if c.admFromStats {
			a.Stats = s.Admission.Policy
		} else {
			a = c.opts.Admission.AdmissionSnapshot()
		}
		c.adm.collect(ch, &a)
	}
	if c.hist != nil {
		h := c.opts.Histograms.Histograms()
		c.hist.collect(ch, &h)
	}
	if c.logs != nil {
		ch <- constMetric(c.logs, prometheus.CounterValue, float64(c.opts.Logs.Suppressed()))
	}
}
