package metrics_test

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/server"
	"github.com/sluicenet/sluice/server/metrics"
)

// scripted returns a Stats with a distinct value in every field.
func scripted() server.Stats {
	s := server.Stats{
		Loops: 2, ConnsOpen: 7, GateOpen: true, GateTransitions: 4, InboxFull: 3, HandlerPanics: 44,
		Accepted: 100, AcceptErrors: 2, AcceptPauses: 5,
		TLSHandshaking: 3, TLSHandshakes: 90, TLSResumed: 40, TLSShareWait: 1500 * time.Millisecond,
		TLSHandshakeFailures: [server.NumHandshakeFailures]uint64{server.HandshakeTimeout: 6, server.HandshakeBadCertificate: 2},
		Reads:                1000, BytesIn: 65536, Frames: 900, ReadBudgetSpent: 11,
		Flushes: 800, BytesOut: 60000, OutArms: 12, FlushBudgetSpent: 13, EarlySubmits: 43,
		Pauses: 14, QueueFull: 15, Rejects: 16, SlowReads: 31, LazyFlushes: 32,
		InboxTasks: 17, StaleEvents: 18, StaleTasks: 19, TimerFires: 20,
		Turns: 5000, BlockingWaits: 4000, Events: 6000,
		ReadyListLen: 21, QueuedOutBytes: 4096, QueuedInBytes: 512,
		PausedConns: 6, GateClosedTime: 1500 * time.Millisecond,
	}
	s.AcceptErrnos[server.AcceptEPERM] = 1
	s.AcceptErrnos[server.AcceptErrnoOther] = 1
	s.AcceptPauseErrnos[server.PauseEMFILE] = 4
	s.AcceptPauseErrnos[server.PauseENFILE] = 1
	s.FrameBudgetSpent = 22
	a := &s.Admission
	a.AcceptQueueDepth, a.AcceptQueueLimit, a.BacklogRejects = 9, 4096, 23
	a.Rejects[admission.ReasonNone], a.Rejects[admission.ReasonTenant], a.Rejects[admission.ReasonQueue] = 1, 24, 25
	a.QueueDelayCap, a.ServiceTime = 4*time.Millisecond, time.Millisecond
	a.RefuseShare, a.RationHolds, a.RationPulls, a.HeldConns = 0.25, 61, 65, 62
	a.GoAways, a.GoAwayConns = 63, 64
	a.RejectsByPriority = [admission.NumPriorities]uint64{admission.PriorityNormal: 5, admission.PriorityBestEffort: 7}
	a.Pool = server.PoolStats{Workers: 8, Queued: 26, Running: 27, Submitted: 280, Served: 250,
		RejectsByPriority: [admission.NumPriorities]uint64{admission.PriorityCritical: 2, admission.PriorityBestEffort: 23}}
	a.Pool.Rejects[admission.ReasonQueue] = 25
	for i := range s.Closed {
		s.Closed[i] = uint64(30 + i)
	}
	return s
}

func register(t *testing.T, c prometheus.Collector) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatalf("Register: %v", err)
	}
	return reg
}

func newCollector(t *testing.T, src metrics.Source, opts metrics.Options) *metrics.Collector {
	t.Helper()
	c, err := metrics.New(src, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// values gathers reg into name{label="v",...} -> value (counter, gauge) or
// -> sample count (histogram), and name -> family.
func values(t *testing.T, reg prometheus.Gatherer) (map[string]float64, map[string]*dto.MetricFamily) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	vals := map[string]float64{}
	fams := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		fams[mf.GetName()] = mf
		for _, m := range mf.GetMetric() {
			var lb []string
			for _, lp := range m.GetLabel() {
				lb = append(lb, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			key := mf.GetName()
			if len(lb) > 0 {
				key += "{" + strings.Join(lb, ",") + "}"
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				vals[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				vals[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				vals[key] = float64(m.GetHistogram().GetSampleCount())
			default:
				t.Fatalf("%s: unexpected type %v", key, mf.GetType())
			}
		}
	}
	return vals, fams
}

func TestNewNilSource(t *testing.T) {
	if _, err := metrics.New(nil, metrics.Options{}); !errors.Is(err, metrics.ErrNilSource) {
		t.Fatalf("New(nil): err = %v, want ErrNilSource", err)
	}
	if _, err := metrics.NewForEngine(nil, metrics.Options{}); !errors.Is(err, metrics.ErrNilSource) {
		t.Fatalf("NewForEngine(nil): err = %v, want ErrNilSource", err)
	}
}

// TestEngineMetricsExposition pins names, types, HELP and values of a
// representative set in the text format.
func TestEngineMetricsExposition(t *testing.T) {
	s := scripted()
	c := newCollector(t, metrics.SourceFunc(func() server.Stats { return s }), metrics.Options{})
	want := `
# HELP sluice_connections_accepted_total Connections accepted.
# TYPE sluice_connections_accepted_total counter
sluice_connections_accepted_total 100
# HELP sluice_connections_open Connections open now.
# TYPE sluice_connections_open gauge
sluice_connections_open 7
# HELP sluice_gate_open 1 while the listen gate is open (listeners in epoll), 0 while it is closed.
# TYPE sluice_gate_open gauge
sluice_gate_open 1
# HELP sluice_read_bytes_total Bytes read from connections.
# TYPE sluice_read_bytes_total counter
sluice_read_bytes_total 65536
# HELP sluice_written_bytes_total Bytes written to connections.
# TYPE sluice_written_bytes_total counter
sluice_written_bytes_total 60000
# HELP sluice_epollout_arms_total Flushes that hit EAGAIN and armed EPOLLOUT (the peer or the socket buffer is slower than the server).
# TYPE sluice_epollout_arms_total counter
sluice_epollout_arms_total 12
# HELP sluice_queued_bytes Bytes held now, all connections: direction="in" is unparsed input kept, direction="out" is output queued and not yet written.
# TYPE sluice_queued_bytes gauge
sluice_queued_bytes{direction="in"} 512
sluice_queued_bytes{direction="out"} 4096
# HELP sluice_connections_closed_total Connections closed, by cause (peer_closed, local, idle_timeout, frame_timeout, write_stall, frame_too_large, malformed, queue_full, rejected, shutdown, io_error, tls, handler_panic).
# TYPE sluice_connections_closed_total counter
sluice_connections_closed_total{cause="frame_timeout"} 33
sluice_connections_closed_total{cause="frame_too_large"} 35
sluice_connections_closed_total{cause="handler_panic"} 42
sluice_connections_closed_total{cause="idle_timeout"} 32
sluice_connections_closed_total{cause="io_error"} 40
sluice_connections_closed_total{cause="local"} 31
sluice_connections_closed_total{cause="malformed"} 36
sluice_connections_closed_total{cause="peer_closed"} 30
sluice_connections_closed_total{cause="queue_full"} 37
sluice_connections_closed_total{cause="rejected"} 38
sluice_connections_closed_total{cause="shutdown"} 39
sluice_connections_closed_total{cause="tls"} 41
sluice_connections_closed_total{cause="write_stall"} 34
`
	err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"sluice_connections_accepted_total", "sluice_connections_open", "sluice_gate_open",
		"sluice_read_bytes_total", "sluice_written_bytes_total", "sluice_epollout_arms_total",
		"sluice_queued_bytes", "sluice_connections_closed_total")
	if err != nil {
		t.Fatal(err)
	}
}

// TestEngineMetricsValues checks every unlabelled engine metric's type,
// non-empty HELP and value against the scripted snapshot.
func TestEngineMetricsValues(t *testing.T) {
	s := scripted()
	reg := register(t, newCollector(t, metrics.SourceFunc(func() server.Stats { return s }), metrics.Options{}))
	vals, fams := values(t, reg)
	const ctr, gau = dto.MetricType_COUNTER, dto.MetricType_GAUGE
	want := []struct {
		name string
		typ  dto.MetricType
		v    float64
	}{
		{"sluice_event_loops", gau, 2},
		{"sluice_connections_open", gau, 7},
		{"sluice_connections_accepted_total", ctr, 100},
		{"sluice_gate_open", gau, 1},
		{"sluice_gate_transitions_total", ctr, 4},
		{"sluice_gate_closed_seconds_total", ctr, 1.5},
		{"sluice_draining", gau, 0},
		{"sluice_backpressure_paused_connections", gau, 6},
		{"sluice_reads_total", ctr, 1000},
		{"sluice_read_bytes_total", ctr, 65536},
		{"sluice_frames_decoded_total", ctr, 900},
		{"sluice_read_budget_spent_total", ctr, 11},
		{"sluice_frame_budget_spent_total", ctr, 22},
		{"sluice_frames_rejected_total", ctr, 16},
		{"sluice_slow_reads_total", ctr, 31},
		{"sluice_lazy_reject_flushes_total", ctr, 32},
		{"sluice_flushes_total", ctr, 800},
		{"sluice_written_bytes_total", ctr, 60000},
		{"sluice_epollout_arms_total", ctr, 12},
		{"sluice_flush_budget_spent_total", ctr, 13},
		{"sluice_early_submits_total", ctr, 43},
		{"sluice_backpressure_pauses_total", ctr, 14},
		{"sluice_out_queue_full_total", ctr, 15},
		{"sluice_loop_turns_total", ctr, 5000},
		{"sluice_loop_blocking_waits_total", ctr, 4000},
		{"sluice_epoll_events_total", ctr, 6000},
		{"sluice_ready_list_connections", gau, 21},
		{"sluice_inbox_tasks_total", ctr, 17},
		{"sluice_inbox_full_total", ctr, 3},
		{"sluice_handler_panics_total", ctr, 44},
		{"sluice_stale_events_total", ctr, 18},
		{"sluice_stale_tasks_total", ctr, 19},
		{"sluice_timer_fires_total", ctr, 20},
		{"sluice_listen_queue_connections", gau, 9},
		{"sluice_listen_queue_limit_connections", gau, 4096},
		{"sluice_backlog_rejects_total", ctr, 23},
		{"sluice_admission_policy_enabled", gau, 0},
		{"sluice_queue_delay_cap_seconds", gau, 0.004},
		{"sluice_handler_service_seconds", gau, 0.001},
		{"sluice_refuse_share_ratio", gau, 0.25},
		{"sluice_ration_holds_total", ctr, 61},
		{"sluice_ration_pulls_total", ctr, 65},
		{"sluice_held_connections", gau, 62},
		{"sluice_goaways_total", ctr, 63},
		{"sluice_goaway_refused_connections_total", ctr, 64},
		{"sluice_pool_workers", gau, 8},
		{"sluice_pool_queued_requests", gau, 26},
		{"sluice_pool_running_requests", gau, 27},
		{"sluice_pool_submitted_total", ctr, 280},
		{"sluice_pool_served_total", ctr, 250},
		{"sluice_tls_handshakes_in_progress", gau, 3},
		{"sluice_tls_handshakes_total", ctr, 90},
		{"sluice_tls_resumed_total", ctr, 40},
		{"sluice_tls_handshake_share_wait_seconds_total", ctr, 1.5},
	}
	for i, w := range want {
		mf := fams[w.name]
		if mf == nil {
			t.Errorf("%d: %s missing", i, w.name)
			continue
		}
		if mf.GetType() != w.typ {
			t.Errorf("%d: %s type %v, want %v", i, w.name, mf.GetType(), w.typ)
		}
		if len(mf.GetHelp()) < 10 {
			t.Errorf("%d: %s HELP %q too short", i, w.name, mf.GetHelp())
		}
		if got := vals[w.name]; got != w.v {
			t.Errorf("%d: %s = %v, want %v", i, w.name, got, w.v)
		}
	}
	labelled := map[string]float64{
		`sluice_accept_errors_total{errno="EPERM"}`:                     1,
		`sluice_accept_errors_total{errno="other"}`:                     1,
		`sluice_accept_errors_total{errno="ECONNABORTED"}`:              0,
		`sluice_accept_errors_total{errno="ENOSPC"}`:                    0,
		`sluice_accept_pauses_total{errno="EMFILE"}`:                    4,
		`sluice_accept_pauses_total{errno="ENFILE"}`:                    1,
		`sluice_accept_pauses_total{errno="ENOMEM"}`:                    0,
		`sluice_rejects_total{reason="other"}`:                          1,
		`sluice_rejects_total{reason="tenant"}`:                         24,
		`sluice_rejects_total{reason="queue"}`:                          25,
		`sluice_rejects_total{reason="codel"}`:                          0,
		`sluice_pool_rejects_total{reason="queue"}`:                     25,
		`sluice_pool_rejects_total{reason="draining"}`:                  0,
		`sluice_priority_rejects_total{priority="critical"}`:            0,
		`sluice_priority_rejects_total{priority="normal"}`:              5,
		`sluice_priority_rejects_total{priority="best_effort"}`:         7,
		`sluice_pool_priority_rejects_total{priority="critical"}`:       2,
		`sluice_pool_priority_rejects_total{priority="normal"}`:         0,
		`sluice_pool_priority_rejects_total{priority="best_effort"}`:    23,
		`sluice_tls_handshake_failures_total{reason="timeout"}`:         6,
		`sluice_tls_handshake_failures_total{reason="bad_certificate"}`: 2,
		`sluice_tls_handshake_failures_total{reason="not_tls"}`:         0,
	}
	if d := compare(vals, labelled); d != "" {
		t.Errorf("labelled accept metrics:\n%s", d)
	}
	if _, ok := vals[`sluice_accept_pauses_total{errno="other"}`]; ok {
		t.Error("pauses fully attributed, but errno=\"other\" exported")
	}
	if n := len(fams["sluice_accept_errors_total"].GetMetric()); n != int(server.NumAcceptErrnos) {
		t.Errorf("%d accept error series, want %d", n, server.NumAcceptErrnos)
	}
	if _, ok := vals[`sluice_pool_rejects_total{reason="none"}`]; ok {
		t.Error("pool rejects exported for ReasonNone")
	}
	// unlabelled + closed_total, queued_bytes, accept_errors_total,
	// accept_pauses_total, rejects_total, priority_rejects_total,
	// pool_rejects_total, pool_priority_rejects_total,
	// tls_handshake_failures_total
	const labelledFams = 9
	if len(fams) != len(want)+labelledFams {
		var names []string
		for n := range fams {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Errorf("%d families, want %d: %v", len(fams), len(want)+labelledFams, names)
	}
	s.GateOpen = false
	if vals, _ := values(t, reg); vals["sluice_gate_open"] != 0 {
		t.Errorf("gate closed: sluice_gate_open = %v, want 0", vals["sluice_gate_open"])
	}
}

// statsExemptions are the server.Stats leaves not exported under a metric
// of their own, each with the metric that carries it; a value is the
// number of series a leaf moves when fewer than one per element.
var statsExemptions = map[string]string{
	"Admission.QueuedBytes":             "sluice_queued_bytes (in + out)",
	"Admission.InflightReqs":            "sluice_pool_queued_requests + sluice_pool_running_requests",
	"Admission.Gate":                    "sluice_admission_gate_* (the same GateStats as Admission.Policy.Gate)",
	"Admission.Policy.Load.Conns":       "sluice_connections_open",
	"Admission.Policy.Load.QueuedBytes": "sluice_queued_bytes",
	"Admission.Policy.Gate.Pressure":    "sluice_admission_pressure_ratio (Admission.Policy.Pressure)",
}

// partialArrays are arrays whose first element has no series.
var partialArrays = map[string]string{
	"Admission.Pool.Rejects": "index ReasonNone: the pool counts no admitted work there",
}

// statsLeaves lists the leaf fields of t (numbers, bools, arrays), with
// their dotted names, descending into structs.
func statsLeaves(t reflect.Type, prefix string, index []int) (names []string, idx [][]int) {
	for i := range t.NumField() {
		f := t.Field(i)
		name := prefix + f.Name
		at := append(append([]int(nil), index...), i)
		if _, ok := statsExemptions[name]; ok {
			continue
		}
		if f.Type.Kind() == reflect.Struct {
			n, x := statsLeaves(f.Type, name+".", at)
			names, idx = append(names, n...), append(idx, x...)
			continue
		}
		names, idx = append(names, name), append(idx, at)
	}
	return names, idx
}

// TestEveryStatsFieldExported changes one leaf of server.Stats at a time
// (descending into Stats.Admission) and checks that some metric moves: a
// field added to server.Stats without a metric here fails this test (add
// it to engineMetrics or engineAdmMetrics and to docs/OBSERVABILITY.md, or
// to statsExemptions with the metric that already carries it). The
// admission policy's own stats go through the sluice_admission_* metrics,
// as NewForEngine does for an engine with a policy.
func TestEveryStatsFieldExported(t *testing.T) {
	var s server.Stats
	reg := register(t, newCollector(t, metrics.SourceFunc(func() server.Stats { return s }), metrics.Options{
		Admission: metrics.AdmissionFunc(func() metrics.AdmissionSnapshot {
			return metrics.AdmissionSnapshot{Stats: s.Admission.Policy}
		}),
	}))
	base, _ := values(t, reg)
	names, idx := statsLeaves(reflect.TypeFor[server.Stats](), "", nil)
	for i, name := range names {
		s = server.Stats{}
		fv := reflect.ValueOf(&s).Elem().FieldByIndex(idx[i])
		want := 1
		switch fv.Kind() {
		case reflect.Bool:
			fv.SetBool(true)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			fv.SetInt(3)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			fv.SetUint(3)
		case reflect.Float32, reflect.Float64:
			fv.SetFloat(0.5)
		case reflect.Array:
			for j := range fv.Len() {
				fv.Index(j).SetUint(uint64(j + 1))
			}
			want = fv.Len() // one series per element
			if _, ok := partialArrays[name]; ok {
				want--
			}
		default:
			t.Errorf("server.Stats.%s: kind %v not handled by this test; export it and extend the test", name, fv.Kind())
			continue
		}
		got, _ := values(t, reg)
		moved := 0
		for k, v := range got {
			if base[k] != v {
				moved++
			}
		}
		if moved < want {
			t.Errorf("server.Stats.%s: %d series moved, want %d: the field is not exported", name, moved, want)
		}
	}
}

// TestLint runs promlint (Prometheus naming conventions: units, _total on
// counters, no camel case) over every metric, with all sources set.
func TestLint(t *testing.T) {
	s := scripted()
	c := newCollector(t, metrics.SourceFunc(func() server.Stats { return s }), metrics.Options{
		Admission:  metrics.AdmissionFunc(scriptedAdmission),
		Histograms: metrics.HistogramFunc(scriptedHistograms),
		Logs:       suppressed(9),
	})
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

type suppressed uint64

func (s suppressed) Suppressed() uint64 { return uint64(s) }

func TestConstLabelsAndLogs(t *testing.T) {
	s := scripted()
	c := newCollector(t, metrics.SourceFunc(func() server.Stats { return s }), metrics.Options{
		ConstLabels: prometheus.Labels{"server": "echo"},
		Logs:        suppressed(9),
	})
	want := `
# HELP sluice_connections_accepted_total Connections accepted.
# TYPE sluice_connections_accepted_total counter
sluice_connections_accepted_total{server="echo"} 100
# HELP sluice_log_records_suppressed_total Log records dropped by the rate limiter (internal/ratelog).
# TYPE sluice_log_records_suppressed_total counter
sluice_log_records_suppressed_total{server="echo"} 9
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"sluice_connections_accepted_total", "sluice_log_records_suppressed_total"); err != nil {
		t.Fatal(err)
	}
	bad := newCollector(t, metrics.SourceFunc(func() server.Stats { return s }), metrics.Options{
		ConstLabels: prometheus.Labels{"cause": "x"}, // clashes with the closed_total label
	})
	if err := prometheus.NewRegistry().Register(bad); err == nil {
		t.Fatal("Register accepted a const label that clashes with a variable label")
	}
}

// TestCollectorIsLive checks that each scrape reads a new snapshot.
// gatherErrors returns Gather's errors one by one.
func gatherErrors(err error) []error {
	var me prometheus.MultiError
	if errors.As(err, &me) {
		return me
	}
	if err != nil {
		return []error{err}
	}
	return nil
}

func TestCollectorIsLive(t *testing.T) {
	var s server.Stats
	calls := 0
	reg := register(t, newCollector(t, metrics.SourceFunc(func() server.Stats { calls++; return s }), metrics.Options{}))
	for i, n := range []uint64{0, 5, 5, 12} {
		s.Accepted = n
		vals, _ := values(t, reg)
		if got := vals["sluice_connections_accepted_total"]; got != float64(n) {
			t.Errorf("%d: accepted = %v, want %d", i, got, n)
		}
		if calls != i+1 {
			t.Errorf("%d: %d Stats calls, want %d (one per scrape)", i, calls, i+1)
		}
	}
}

func BenchmarkCollect(b *testing.B) {
	s := scripted()
	c, err := metrics.New(metrics.SourceFunc(func() server.Stats { return s }), metrics.Options{
		Admission:  metrics.AdmissionFunc(scriptedAdmission),
		Histograms: metrics.HistogramFunc(scriptedHistograms),
	})
	if err != nil {
		b.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
