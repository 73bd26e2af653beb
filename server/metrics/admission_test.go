package metrics_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/server"
	"github.com/sluicenet/sluice/server/metrics"
)

func scriptedAdmission() metrics.AdmissionSnapshot {
	var s metrics.AdmissionSnapshot
	for r := range s.Decisions {
		s.Decisions[r] = uint64(100 * (r + 1)) // none: 100, global: 200, ...
	}
	s.Gate = admission.GateStats{State: admission.GateClosed, Transitions: 9, Closes: 4, Opens: 3, Pauses: 2, Rejecting: 1, Pressure: 0.97}
	s.Pressure, s.Worst = 0.97, admission.ResourceQueuedBytes
	s.Load = admission.Load{Conns: 10, InflightReqs: 42, QueuedBytes: 1 << 20, MemoryBytes: 64 << 20}
	s.MemoryLimitBytes = 512 << 20
	s.LagHot, s.Hot = true, true
	s.CPUUtilisation = 0.75
	s.TenantErrors, s.ClaimErrors = 6, 7
	s.Classes = []admission.LimitStats{
		{Name: "total", Limit: 100, Inflight: 42, Refused: 8},
		{Name: "api", Priority: admission.PriorityNormal, Limit: math.MaxInt64, Inflight: 40, Refused: 0},
		{Name: "batch", Priority: admission.PriorityBestEffort, Limit: 10, Inflight: 2, Refused: 8},
	}
	s.Tenants = admission.TenantStats{Tenants: 3, Evicted: 11, LossyEvicted: 1, Swept: 12, RejectedNew: 13}
	s.TenantCounts = []metrics.TenantCount{
		{Tenant: "acme", Allowed: 50, Denied: 5},
		{Tenant: "other", Allowed: 20, Denied: 0},
	}
	return s
}

func TestAdmissionExposition(t *testing.T) {
	s := scripted()
	c := newCollector(t, metrics.SourceFunc(func() server.Stats { return s }),
		metrics.Options{Admission: metrics.AdmissionFunc(scriptedAdmission)})
	want := `
# HELP sluice_admission_rejects_total Frames refused by admission, by reason (global, tenant, concurrency, queue, codel, cpu, memory, draining, fair, goaway).
# TYPE sluice_admission_rejects_total counter
sluice_admission_rejects_total{reason="codel"} 600
sluice_admission_rejects_total{reason="concurrency"} 400
sluice_admission_rejects_total{reason="cpu"} 700
sluice_admission_rejects_total{reason="draining"} 900
sluice_admission_rejects_total{reason="fair"} 1000
sluice_admission_rejects_total{reason="global"} 200
sluice_admission_rejects_total{reason="goaway"} 1100
sluice_admission_rejects_total{reason="memory"} 800
sluice_admission_rejects_total{reason="queue"} 500
sluice_admission_rejects_total{reason="tenant"} 300
# HELP sluice_admission_admitted_total Frames admitted by admission.
# TYPE sluice_admission_admitted_total counter
sluice_admission_admitted_total 100
# HELP sluice_admission_gate_state 1 for the listen gate's current state (open, closed, paused, rejecting), 0 for the others.
# TYPE sluice_admission_gate_state gauge
sluice_admission_gate_state{state="closed"} 1
sluice_admission_gate_state{state="open"} 0
sluice_admission_gate_state{state="paused"} 0
sluice_admission_gate_state{state="rejecting"} 0
# HELP sluice_admission_gate_entries_total Entries into each listen gate state (closed: pressure over the high watermark; paused: EMFILE/ENFILE; rejecting: backlog nearly full; open).
# TYPE sluice_admission_gate_entries_total counter
sluice_admission_gate_entries_total{state="closed"} 4
sluice_admission_gate_entries_total{state="open"} 3
sluice_admission_gate_entries_total{state="paused"} 2
sluice_admission_gate_entries_total{state="rejecting"} 1
# HELP sluice_admission_pressure_worst 1 for the global budget with the highest pressure (conns, inflight, queued_bytes, memory, none), 0 for the others.
# TYPE sluice_admission_pressure_worst gauge
sluice_admission_pressure_worst{resource="conns"} 0
sluice_admission_pressure_worst{resource="inflight"} 0
sluice_admission_pressure_worst{resource="memory"} 0
sluice_admission_pressure_worst{resource="none"} 0
sluice_admission_pressure_worst{resource="queued_bytes"} 1
# HELP sluice_admission_class_limit_requests Current concurrency limit per class (+Inf when unlimited).
# TYPE sluice_admission_class_limit_requests gauge
sluice_admission_class_limit_requests{class="api"} +Inf
sluice_admission_class_limit_requests{class="batch"} 10
sluice_admission_class_limit_requests{class="total"} 100
# HELP sluice_admission_tenant_frames_total Frames per tenant and decision (allowed, denied), for a bounded set of tenants.
# TYPE sluice_admission_tenant_frames_total counter
sluice_admission_tenant_frames_total{decision="allowed",tenant="acme"} 50
sluice_admission_tenant_frames_total{decision="allowed",tenant="other"} 20
sluice_admission_tenant_frames_total{decision="denied",tenant="acme"} 5
sluice_admission_tenant_frames_total{decision="denied",tenant="other"} 0
`
	err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"sluice_admission_rejects_total", "sluice_admission_admitted_total", "sluice_admission_gate_state",
		"sluice_admission_gate_entries_total", "sluice_admission_pressure_worst",
		"sluice_admission_class_limit_requests", "sluice_admission_tenant_frames_total")
	if err != nil {
		t.Fatal(err)
	}

	vals, _ := values(t, register(t, c))
	for i, w := range []struct {
		key string
		v   float64
	}{
		{"sluice_admission_gate_transitions_total", 9},
		{"sluice_admission_pressure_ratio", 0.97},
		{"sluice_admission_inflight_requests", 42},
		{"sluice_admission_memory_bytes", 64 << 20},
		{"sluice_admission_memory_limit_bytes", 512 << 20},
		{`sluice_admission_hot{signal="lag"}`, 1},
		{`sluice_admission_hot{signal="cpu"}`, 0},
		{`sluice_admission_hot{signal="switch"}`, 1},
		{"sluice_admission_cpu_utilisation_ratio", 0.75},
		{"sluice_admission_draining", 0},
		{`sluice_admission_backend_errors_total{backend="tenant"}`, 6},
		{`sluice_admission_backend_errors_total{backend="idempotency"}`, 7},
		{`sluice_admission_class_inflight_requests{class="api"}`, 40},
		{`sluice_admission_class_refused_total{class="batch"}`, 8},
		{"sluice_admission_tenants", 3},
		{`sluice_admission_tenant_evictions_total{reason="evicted_with_debt"}`, 1},
		{`sluice_admission_tenant_evictions_total{reason="swept"}`, 12},
		{"sluice_admission_tenant_series_dropped", 0},
	} {
		got, ok := vals[w.key]
		if !ok || got != w.v {
			t.Errorf("%d: %s = %v (present %v), want %v", i, w.key, got, ok, w.v)
		}
	}
}

// TestTenantSeriesCap checks that a source listing more tenants than the
// cap gets at most MaxTenantSeries tenants exported, and the overflow
// reported.
func TestTenantSeriesCap(t *testing.T) {
	for i, tc := range []struct {
		cap, tenants, wantSeries, wantDropped int
	}{
		{0, 5, 5, 0}, // default cap 32
		{0, 40, metrics.DefaultMaxTenantSeries, 40 - metrics.DefaultMaxTenantSeries},
		{3, 5, 3, 2},
		{-1, 5, 0, 5},
	} {
		snap := metrics.AdmissionSnapshot{}
		for j := range tc.tenants {
			snap.TenantCounts = append(snap.TenantCounts, metrics.TenantCount{Tenant: fmt.Sprintf("10.0.0.%d", j), Allowed: uint64(j)})
		}
		c := newCollector(t, metrics.SourceFunc(func() server.Stats { return server.Stats{} }), metrics.Options{
			Admission:       metrics.AdmissionFunc(func() metrics.AdmissionSnapshot { return snap }),
			MaxTenantSeries: tc.cap,
		})
		if n := testutil.CollectAndCount(c, "sluice_admission_tenant_frames_total"); n != 2*tc.wantSeries {
			t.Errorf("%d: %d tenant series, want %d", i, n, 2*tc.wantSeries)
		}
		vals, _ := values(t, register(t, c))
		if got := vals["sluice_admission_tenant_series_dropped"]; got != float64(tc.wantDropped) {
			t.Errorf("%d: dropped = %v, want %d", i, got, tc.wantDropped)
		}
	}
}

// TestAdmissionDuplicates checks that a duplicate class or tenant fails
// only its own metric with ErrDuplicateSeries instead of breaking the
// collector.
func TestAdmissionDuplicates(t *testing.T) {
	snap := metrics.AdmissionSnapshot{
		Classes:      []admission.LimitStats{{Name: "a", Limit: 1}, {Name: "a", Limit: 2}},
		TenantCounts: []metrics.TenantCount{{Tenant: "x"}, {Tenant: "x"}, {Tenant: "bad\xff"}},
	}
	c := newCollector(t, metrics.SourceFunc(func() server.Stats { return server.Stats{} }), metrics.Options{
		Admission: metrics.AdmissionFunc(func() metrics.AdmissionSnapshot { return snap }),
	})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	errs := gatherErrors(err)
	if len(errs) != 2 {
		t.Fatalf("Gather err = %v, want 2 errors", err)
	}
	for i, e := range errs {
		if !errors.Is(e, metrics.ErrDuplicateSeries) {
			t.Errorf("%d: %v is not ErrDuplicateSeries", i, e)
		}
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() == "sluice_connections_accepted_total" {
			found = true
		}
	}
	if !found {
		t.Error("engine metrics missing from a scrape with a bad admission snapshot")
	}
}

// TestAdmissionSourceFromAdmitter wires a real Admitter, Concurrency and
// TenantLimiter and checks that decisions reach the metrics.
func TestAdmissionSourceFromAdmitter(t *testing.T) {
	if metrics.NewAdmissionSource(nil, nil, nil) != nil {
		t.Fatal("NewAdmissionSource(nil) is not nil")
	}
	tl, err := admission.NewTenantLimiter(admission.TenantConfig{Quota: admission.Quota{Count: 1, Per: time.Hour, Burst: 1}})
	if err != nil {
		t.Fatal(err)
	}
	adm, err := admission.NewAdmitter(admission.Config{Tenants: tl})
	if err != nil {
		t.Fatal(err)
	}
	if err := adm.Bind(admission.Binding{Loops: 1}); err != nil {
		t.Fatal(err)
	}
	conc, err := admission.NewConcurrency(admission.ConcurrencyConfig{
		Total:   admission.LimitConfig{Fixed: 4},
		Classes: []admission.ClassConfig{{Name: "api", Limit: admission.LimitConfig{Fixed: 2}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	lp := adm.Loop(0)
	now := time.Unix(1000, 0)
	f := admission.Frame{Tenant: []byte("t1")}
	var verdicts []admission.Verdict
	for range 3 {
		verdicts = append(verdicts, lp.Admit(t.Context(), now, &f))
	}
	lp.Publish()
	if !verdicts[0].Admit || verdicts[1].Reason != admission.ReasonTenant || verdicts[2].Reason != admission.ReasonTenant {
		t.Fatalf("verdicts %+v: want admit, tenant, tenant", verdicts)
	}

	c := newCollector(t, metrics.SourceFunc(func() server.Stats { return server.Stats{} }), metrics.Options{
		Admission: metrics.NewAdmissionSource(adm, conc, tl),
	})
	vals, _ := values(t, register(t, c))
	for i, w := range []struct {
		key string
		v   float64
	}{
		{"sluice_admission_admitted_total", 1},
		{`sluice_admission_rejects_total{reason="tenant"}`, 2},
		{`sluice_admission_rejects_total{reason="global"}`, 0},
		{"sluice_admission_tenants", 1},
		{`sluice_admission_class_limit_requests{class="total"}`, 4},
		{`sluice_admission_class_limit_requests{class="api"}`, 2},
		{`sluice_admission_gate_state{state="open"}`, 1},
	} {
		if got, ok := vals[w.key]; !ok || got != w.v {
			t.Errorf("%d: %s = %v (present %v), want %v", i, w.key, got, ok, w.v)
		}
	}
}
