package metrics

import (
	"fmt"
	"math"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicenet/sluice/admission"
)

// AdmissionSnapshot is what the collector exports about admission control.
// The embedded admission.Stats comes from Admitter.Stats; the other fields
// come from the concurrency limiter and the tenant table, when they exist.
type AdmissionSnapshot struct {
	admission.Stats

	// Classes are the concurrency limits (bulkheads) as
	// admission.Concurrency.Stats reports them: the shared total as a class
	// named "total", then one entry per class. Names must be unique.
	Classes []admission.LimitStats

	// Tenants counts the tenant table's activity.
	Tenants admission.TenantStats

	// TenantCounts are per-tenant decisions for a bounded, stable set of
	// tenants that the source keeps (for example the first N seen, each
	// keeping its slot until it goes idle, the rest counted under one
	// "other" entry), so that each series is a monotonic counter. The
	// collector exports at most Options.MaxTenantSeries of them, in order,
	// and reports how many it left out; it never exports one series per
	// peer address beyond that cap.
	TenantCounts []TenantCount
}

// TenantCount is one tenant's admission decisions.
type TenantCount struct {
	Tenant  string
	Allowed uint64 // frames admitted
	Denied  uint64 // frames refused with admission.ReasonTenant
}

// AdmissionSource returns the admission snapshot. It is called once per
// scrape, from the scrape's goroutine.
type AdmissionSource interface {
	AdmissionSnapshot() AdmissionSnapshot
}

// AdmissionFunc adapts a function to AdmissionSource.
type AdmissionFunc func() AdmissionSnapshot

// AdmissionSnapshot calls f.
func (f AdmissionFunc) AdmissionSnapshot() AdmissionSnapshot { return f() }

// NewAdmissionSource returns a source over an Admitter and, when not nil,
// its concurrency limiter and in-memory tenant table. It returns nil for a
// nil Admitter.
func NewAdmissionSource(a *admission.Admitter, c *admission.Concurrency, t *admission.TenantLimiter) AdmissionSource {
	if a == nil {
		return nil
	}
	return AdmissionFunc(func() AdmissionSnapshot {
		s := AdmissionSnapshot{Stats: a.Stats()}
		if c != nil {
			total, classes := c.Stats()
			s.Classes = append([]admission.LimitStats{total}, classes...)
		}
		if t != nil {
			s.Tenants = t.Stats()
		}
		return s
	})
}

// DefaultMaxTenantSeries is the default Options.MaxTenantSeries.
const DefaultMaxTenantSeries = 32

// admissionDescs are the admission metrics' descriptors.
type admissionDescs struct {
	rejects, admitted               *prometheus.Desc
	gateState, gateEntries          *prometheus.Desc
	gateTransitions                 *prometheus.Desc
	pressure, worst                 *prometheus.Desc
	inflight, memory, memoryLimit   *prometheus.Desc
	hot, cpu                        *prometheus.Desc
	draining                        *prometheus.Desc
	backendErrors                   *prometheus.Desc
	classInflight, classLimit       *prometheus.Desc
	classRefused                    *prometheus.Desc
	tenants, tenantEvictions        *prometheus.Desc
	tenantFrames, tenantSeriesSkips *prometheus.Desc
	maxTenants                      int
}

func newAdmissionDescs(cl prometheus.Labels, maxTenants int) *admissionDescs {
	nd := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, cl)
	}
	return &admissionDescs{
		rejects:         nd("sluice_admission_rejects_total", "Frames refused by admission, by reason (global, tenant, concurrency, queue, codel, cpu, memory, draining, fair, goaway).", "reason"),
		admitted:        nd("sluice_admission_admitted_total", "Frames admitted by admission."),
		gateState:       nd("sluice_admission_gate_state", "1 for the listen gate's current state (open, closed, paused, rejecting), 0 for the others.", "state"),
		gateEntries:     nd("sluice_admission_gate_entries_total", "Entries into each listen gate state (closed: pressure over the high watermark; paused: EMFILE/ENFILE; rejecting: backlog nearly full; open).", "state"),
		gateTransitions: nd("sluice_admission_gate_transitions_total", "Listen gate state changes decided by admission."),
		pressure:        nd("sluice_admission_pressure_ratio", "Maximum normalised pressure over the global budgets (usage/cap; 1 is at a cap)."),
		worst:           nd("sluice_admission_pressure_worst", "1 for the global budget with the highest pressure (conns, inflight, queued_bytes, memory, none), 0 for the others.", "resource"),
		inflight:        nd("sluice_admission_inflight_requests", "Requests admitted and not yet answered, all loops."),
		memory:          nd("sluice_admission_memory_bytes", "Go memory as admission last sampled it."),
		memoryLimit:     nd("sluice_admission_memory_limit_bytes", "Memory cap admission compares against (GOMEMLIMIT or configured); 0 for none."),
		hot:             nd("sluice_admission_hot", "1 while a shedding signal is hot (signal: memory, cpu, lag, codel) or the hot switch handlers read is on (signal: switch).", "signal"),
		cpu:             nd("sluice_admission_cpu_utilisation_ratio", "Process CPU time over wall time, as a fraction of the cores, at the last sample."),
		draining:        nd("sluice_admission_draining", "1 while admission refuses new work because the server is draining."),
		backendErrors:   nd("sluice_admission_backend_errors_total", "Errors from admission backends (backend: tenant limiter, idempotency store).", "backend"),
		classInflight:   nd("sluice_admission_class_inflight_requests", "Requests in flight per concurrency class (class \"total\" is the shared limit).", "class"),
		classLimit:      nd("sluice_admission_class_limit_requests", "Current concurrency limit per class (+Inf when unlimited).", "class"),
		classRefused:    nd("sluice_admission_class_refused_total", "Requests refused by each concurrency limit.", "class"),
		tenants:         nd("sluice_admission_tenants", "Tenants tracked by the quota table."),
		tenantEvictions: nd("sluice_admission_tenant_evictions_total", "Tenants dropped from the quota table (reason: evicted for room, evicted_with_debt, swept idle, rejected_new).", "reason"),
		tenantFrames:    nd("sluice_admission_tenant_frames_total", "Frames per tenant and decision (allowed, denied), for a bounded set of tenants.", "tenant", "decision"),
		tenantSeriesSkips: nd("sluice_admission_tenant_series_dropped",
			"Tenants in the last snapshot beyond the series cap (not exported)."),
		maxTenants: maxTenants,
	}
}

func (d *admissionDescs) describe(ch chan<- *prometheus.Desc) {
	for _, x := range []*prometheus.Desc{
		d.rejects, d.admitted, d.gateState, d.gateEntries, d.gateTransitions,
		d.pressure, d.worst, d.inflight, d.memory, d.memoryLimit, d.hot, d.cpu,
		d.draining, d.backendErrors, d.classInflight, d.classLimit, d.classRefused,
		d.tenants, d.tenantEvictions, d.tenantFrames, d.tenantSeriesSkips,
	} {
		ch <- x
	}
}

// resources are the label values of sluice_admission_pressure_worst, in
// admission.Resource order.
var resources = [...]admission.Resource{
	admission.ResourceNone, admission.ResourceConns, admission.ResourceInflight,
	admission.ResourceQueuedBytes, admission.ResourceMemory,
}

var gateStates = [...]admission.GateState{
	admission.GateOpen, admission.GateClosed, admission.GatePaused, admission.GateRejecting,
}

func (d *admissionDescs) collect(ch chan<- prometheus.Metric, s *AdmissionSnapshot) {
	const ctr, gau = prometheus.CounterValue, prometheus.GaugeValue
	for r := admission.ReasonNone + 1; r < admission.NumReasons; r++ {
		ch <- constMetric(d.rejects, ctr, float64(s.Decisions[r]), r.String())
	}
	ch <- constMetric(d.admitted, ctr, float64(s.Decisions[admission.ReasonNone]))

	g := &s.Gate
	entries := [...]uint64{g.Opens, g.Closes, g.Pauses, g.Rejecting}
	for i, st := range gateStates {
		ch <- constMetric(d.gateState, gau, b2f(g.State == st), st.String())
		ch <- constMetric(d.gateEntries, ctr, float64(entries[i]), st.String())
	}
	ch <- constMetric(d.gateTransitions, ctr, float64(g.Transitions))

	ch <- constMetric(d.pressure, gau, s.Pressure)
	for _, r := range resources {
		ch <- constMetric(d.worst, gau, b2f(s.Worst == r), r.String())
	}
	ch <- constMetric(d.inflight, gau, float64(s.Load.InflightReqs))
	ch <- constMetric(d.memory, gau, float64(s.Load.MemoryBytes))
	ch <- constMetric(d.memoryLimit, gau, float64(s.MemoryLimitBytes))
	for _, h := range [...]struct {
		name string
		on   bool
	}{{"memory", s.MemoryHot}, {"cpu", s.CPUHot}, {"lag", s.LagHot}, {"codel", s.CoDelHot}, {"switch", s.Hot}} {
		ch <- constMetric(d.hot, gau, b2f(h.on), h.name)
	}
	ch <- constMetric(d.cpu, gau, s.CPUUtilisation)
	ch <- constMetric(d.draining, gau, b2f(s.Draining))
	ch <- constMetric(d.backendErrors, ctr, float64(s.TenantErrors), "tenant")
	ch <- constMetric(d.backendErrors, ctr, float64(s.ClaimErrors), "idempotency")

	d.collectClasses(ch, s.Classes)

	t := &s.Tenants
	ch <- constMetric(d.tenants, gau, float64(t.Tenants))
	for _, e := range [...]struct {
		reason string
		n      uint64
	}{{"evicted", t.Evicted}, {"evicted_with_debt", t.LossyEvicted}, {"swept", t.Swept}, {"rejected_new", t.RejectedNew}} {
		ch <- constMetric(d.tenantEvictions, ctr, float64(e.n), e.reason)
	}
	d.collectTenants(ch, s.TenantCounts)
}

func (d *admissionDescs) collectClasses(ch chan<- prometheus.Metric, classes []admission.LimitStats) {
	seen := make(map[string]struct{}, len(classes))
	for _, c := range classes {
		name := strings.ToValidUTF8(c.Name, "\uFFFD")
		if _, dup := seen[name]; dup {
			ch <- prometheus.NewInvalidMetric(d.classInflight, fmt.Errorf("%w: class %q", ErrDuplicateSeries, name))
			continue
		}
		seen[name] = struct{}{}
		limit := float64(c.Limit)
		if c.Limit == math.MaxInt64 {
			limit = math.Inf(1)
		}
		ch <- constMetric(d.classInflight, prometheus.GaugeValue, float64(c.Inflight), name)
		ch <- constMetric(d.classLimit, prometheus.GaugeValue, limit, name)
		ch <- constMetric(d.classRefused, prometheus.CounterValue, float64(c.Refused), name)
	}
}

func (d *admissionDescs) collectTenants(ch chan<- prometheus.Metric, tenants []TenantCount) {
	n := min(len(tenants), d.maxTenants)
	seen := make(map[string]struct{}, n)
	for _, t := range tenants[:n] {
		name := strings.ToValidUTF8(t.Tenant, "\uFFFD")
		if _, dup := seen[name]; dup {
			ch <- prometheus.NewInvalidMetric(d.tenantFrames, fmt.Errorf("%w: tenant %q", ErrDuplicateSeries, name))
			continue
		}
		seen[name] = struct{}{}
		ch <- constMetric(d.tenantFrames, prometheus.CounterValue, float64(t.Allowed), name, "allowed")
		ch <- constMetric(d.tenantFrames, prometheus.CounterValue, float64(t.Denied), name, "denied")
	}
	ch <- constMetric(d.tenantSeriesSkips, prometheus.GaugeValue, float64(len(tenants)-n))
}
