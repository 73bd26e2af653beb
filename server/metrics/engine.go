package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicenet/sluice/server"
)

// statMetric is one unlabelled metric read from server.Stats.
type statMetric struct {
	name  string
	help  string
	typ   prometheus.ValueType
	value func(s *server.Stats) float64
}

// engineMetrics lists the unlabelled engine metrics. To export a new field
// of server.Stats, add a line here and a row to docs/OBSERVABILITY.md.
var engineMetrics = []statMetric{
	// connections and the listener
	{"sluice_event_loops", "Event loops of the engine.", prometheus.GaugeValue,
		func(s *server.Stats) float64 { return float64(s.Loops) }},
	{"sluice_connections_open", "Connections open now.", prometheus.GaugeValue,
		func(s *server.Stats) float64 { return float64(s.ConnsOpen) }},
	{"sluice_connections_accepted_total", "Connections accepted.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.Accepted) }},
	{"sluice_gate_open", "1 while the listen gate is open (listeners in epoll), 0 while it is closed.", prometheus.GaugeValue,
		func(s *server.Stats) float64 { return b2f(s.GateOpen) }},
	{"sluice_gate_transitions_total", "Listen gate transitions, open to closed plus closed to open.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.GateTransitions) }},
	{"sluice_gate_closed_seconds_total", "Time the listen gate was closed, the current closure included.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return s.GateClosedTime.Seconds() }},
	{"sluice_draining", "1 once a graceful shutdown has begun (listeners closing, connections draining).", prometheus.GaugeValue,
		func(s *server.Stats) float64 { return b2f(s.Draining) }},

	// TLS (Config.TLS)
	{"sluice_tls_handshakes_in_progress", "TLS handshakes in progress now (MaxHandshakes closes the listen gate).", prometheus.GaugeValue,
		func(s *server.Stats) float64 { return float64(s.TLSHandshaking) }},
	{"sluice_tls_handshakes_total", "TLS handshakes completed.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.TLSHandshakes) }},
	{"sluice_tls_resumed_total", "TLS handshakes completed that resumed a session (a ticket); divided by sluice_tls_handshakes_total, the resumption rate.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.TLSResumed) }},
	{"sluice_tls_handshake_share_wait_seconds_total", "Time TLS handshakes waited for their share of the loops (HandshakeShare) while established connections had work, summed over handshakes.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return s.TLSShareWait.Seconds() }},

	// read side
	{"sluice_reads_total", "read(2) calls that returned data.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.Reads) }},
	{"sluice_read_bytes_total", "Bytes read from connections.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.BytesIn) }},
	{"sluice_frames_decoded_total", "Frames decoded by the codec (messages in).", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.Frames) }},
	{"sluice_read_budget_spent_total", "Reads stopped by ReadBudgetBytes; the connection went to the ready list.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.ReadBudgetSpent) }},
	{"sluice_frame_budget_spent_total", "Dispatches stopped by MaxFramesPerTurn (or, with derived shedding and classes, a turn's inline work past L/3); the rest of the input waits and the connection went to the ready list.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.FrameBudgetSpent) }},
	{"sluice_frames_rejected_total", "Frames refused by admission before the handler (all reasons).", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.Rejects) }},
	{"sluice_slow_reads_total", "Reads deferred to the slow list because every frame in them would have been refused (AdmissionPolicy.RejectFlushDelay with MaxQueueDelay).", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.SlowReads) }},
	{"sluice_lazy_reject_flushes_total", "Reject-only out-queues whose write was deferred to a later turn (AdmissionPolicy.RejectFlushDelay).", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.LazyFlushes) }},

	// write side
	{"sluice_flushes_total", "Budgeted writev flushes of an out-queue (usually one writev each).", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.Flushes) }},
	{"sluice_written_bytes_total", "Bytes written to connections.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.BytesOut) }},
	{"sluice_epollout_arms_total", "Flushes that hit EAGAIN and armed EPOLLOUT (the peer or the socket buffer is slower than the server).", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.OutArms) }},
	{"sluice_flush_budget_spent_total", "Flushes stopped by FlushBudgetBytes; the rest waits for the next turn.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.FlushBudgetSpent) }},
	{"sluice_early_submits_total", "io_uring submissions of a turn's sends made before the turn ended (turns of slow handlers); 0 on epoll.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.EarlySubmits) }},
	{"sluice_backpressure_pauses_total", "Times reading a connection paused because its out-queue passed the high watermark.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.Pauses) }},
	{"sluice_backpressure_paused_connections", "Connections whose reading is paused by backpressure now (out-queue above the high watermark, not yet below the low one).", prometheus.GaugeValue,
		func(s *server.Stats) float64 { return float64(s.PausedConns) }},
	{"sluice_out_queue_full_total", "Writes refused with ErrQueueFull (out-queue message or byte budget).", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.QueueFull) }},

	// the loops
	{"sluice_loop_turns_total", "Event loop turns.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.Turns) }},
	{"sluice_loop_blocking_waits_total", "Loop turns that slept in epoll_wait (the loop had nothing to do).", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.BlockingWaits) }},
	{"sluice_epoll_events_total", "Events returned by epoll_wait.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.Events) }},
	{"sluice_ready_list_connections", "Connections on the loops' ready lists now (a budget stopped them last turn).", prometheus.GaugeValue,
		func(s *server.Stats) float64 { return float64(s.ReadyListLen) }},
	{"sluice_inbox_tasks_total", "Off-loop tasks (writes, closes from other goroutines) run by the loops.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.InboxTasks) }},
	{"sluice_inbox_full_total", "Off-loop calls refused with ErrInboxFull.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.InboxFull) }},
	{"sluice_handler_panics_total", "Panics recovered from handlers, codecs and policy functions; each closed its connection (sluice_connections_closed_total{cause=\"handler_panic\"}) but one in OnClose.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.HandlerPanics) }},
	{"sluice_stale_events_total", "epoll events for a closed or reused file descriptor, dropped by generation.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.StaleEvents) }},
	{"sluice_stale_tasks_total", "Inbox tasks for a connection that had closed, dropped.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.StaleTasks) }},
	{"sluice_timer_fires_total", "Connection timers that fired (idle, frame and write-stall deadlines checked).", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.TimerFires) }},
}

// Labelled engine metrics.
const (
	nameClosed       = "sluice_connections_closed_total"
	helpClosed       = "Connections closed, by cause (peer_closed, local, idle_timeout, frame_timeout, write_stall, frame_too_large, malformed, queue_full, rejected, shutdown, io_error, tls, handler_panic)."
	nameQueued       = "sluice_queued_bytes"
	helpQueued       = "Bytes held now, all connections: direction=\"in\" is unparsed input kept, direction=\"out\" is output queued and not yet written."
	nameAcceptErrors = "sluice_accept_errors_total"
	helpAcceptErrors = "accept4 or connection setup (setsockopt, epoll_ctl) failures other than a shortage of file descriptors or memory, by errno (ECONNABORTED, EPERM, EPROTO, EINVAL, ENOSPC, ENOMEM, other)."
	nameTLSFailures  = "sluice_tls_handshake_failures_total"
	helpTLSFailures  = "TLS handshakes that failed, by reason (timeout, not_tls, bad_certificate, alert, peer_closed, other)."
	nameAcceptPauses = "sluice_accept_pauses_total"
	helpAcceptPauses = "Times a loop took its listener out of epoll for AcceptRetryDelay, by errno (EMFILE, ENFILE, ENOBUFS, ENOMEM)."
)

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// engineDescs are the engine metrics' descriptors, built once per Collector.
type engineDescs struct {
	plain        []*prometheus.Desc // parallel to engineMetrics
	closed       *prometheus.Desc
	queued       *prometheus.Desc
	acceptErrors *prometheus.Desc
	acceptPauses *prometheus.Desc
	tlsFailures  *prometheus.Desc
}

func newEngineDescs(cl prometheus.Labels) engineDescs {
	d := engineDescs{plain: make([]*prometheus.Desc, len(engineMetrics))}
	for i, m := range engineMetrics {
		d.plain[i] = prometheus.NewDesc(m.name, m.help, nil, cl)
	}
	d.closed = prometheus.NewDesc(nameClosed, helpClosed, []string{"cause"}, cl)
	d.queued = prometheus.NewDesc(nameQueued, helpQueued, []string{"direction"}, cl)
	d.acceptErrors = prometheus.NewDesc(nameAcceptErrors, helpAcceptErrors, []string{"errno"}, cl)
	d.acceptPauses = prometheus.NewDesc(nameAcceptPauses, helpAcceptPauses, []string{"errno"}, cl)
	d.tlsFailures = prometheus.NewDesc(nameTLSFailures, helpTLSFailures, []string{"reason"}, cl)
	return d
}

func (d *engineDescs) describe(ch chan<- *prometheus.Desc) {
	for _, x := range d.plain {
		ch <- x
	}
	ch <- d.closed
	ch <- d.queued
	ch <- d.acceptErrors
	ch <- d.acceptPauses
	ch <- d.tlsFailures
}

func (d *engineDescs) collect(ch chan<- prometheus.Metric, s *server.Stats) {
	for i, m := range engineMetrics {
		ch <- constMetric(d.plain[i], m.typ, m.value(s))
	}
	for cause := server.CloseCause(0); cause < server.NumCloseCauses; cause++ {
		ch <- constMetric(d.closed, prometheus.CounterValue, float64(s.Closed[cause]), cause.String())
	}
	for f := server.HandshakeFailure(0); f < server.NumHandshakeFailures; f++ {
		ch <- constMetric(d.tlsFailures, prometheus.CounterValue, float64(s.TLSHandshakeFailures[f]), f.String())
	}
	ch <- constMetric(d.queued, prometheus.GaugeValue, float64(s.QueuedInBytes), "in")
	ch <- constMetric(d.queued, prometheus.GaugeValue, float64(s.QueuedOutBytes), "out")
	// A source that counts a total without its breakdown (the engine
	// always fills both) has the rest exported as errno="other", so the
	// series always add up to the total.
	var attributed uint64
	for en := server.AcceptErrno(0); en < server.NumAcceptErrnos; en++ {
		n := s.AcceptErrnos[en]
		attributed += n
		if en == server.AcceptErrnoOther && s.AcceptErrors > attributed {
			n += s.AcceptErrors - attributed
		}
		ch <- constMetric(d.acceptErrors, prometheus.CounterValue, float64(n), en.String())
	}
	attributed = 0
	for en := server.PauseErrno(0); en < server.NumPauseErrnos; en++ {
		attributed += s.AcceptPauseErrnos[en]
		ch <- constMetric(d.acceptPauses, prometheus.CounterValue, float64(s.AcceptPauseErrnos[en]), en.String())
	}
	if s.AcceptPauses > attributed {
		ch <- constMetric(d.acceptPauses, prometheus.CounterValue, float64(s.AcceptPauses-attributed), "other")
	}
}

// constMetric builds a const metric; a descriptor error becomes an invalid
// metric, which fails that metric of the scrape instead of panicking.
func constMetric(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}
