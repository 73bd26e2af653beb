package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/server"
)

// engineAdmMetrics are the unlabelled metrics of server.Stats.Admission:
// what the engine itself carried out (accept queue, backlog rejects, the
// worker pool), exported whether or not a policy is configured.
var engineAdmMetrics = []statMetric{
	{"sluice_listen_queue_connections", "Connections waiting in the listeners' accept queues (TCP_INFO tcpi_unacked, summed over listening sockets, sampled at most every 10 ms per loop).", prometheus.GaugeValue,
		func(s *server.Stats) float64 { return float64(s.Admission.AcceptQueueDepth) }},
	{"sluice_listen_queue_limit_connections", "Accept queue limits of the listeners (listen backlog capped by net.core.somaxconn; TCP_INFO tcpi_sacked, summed).", prometheus.GaugeValue,
		func(s *server.Stats) float64 { return float64(s.Admission.AcceptQueueLimit) }},
	{"sluice_backlog_rejects_total", "Connections accepted and refused at once while the admission gate was rejecting (backlog nearly full).", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.Admission.BacklogRejects) }},
	{"sluice_admission_policy_enabled", "1 when the engine runs an admission policy (Config.Admission is an AdmissionPolicy), whose state the sluice_admission_* metrics show.", prometheus.GaugeValue,
		func(s *server.Stats) float64 { return b2f(s.Admission.Enabled) }},
	{"sluice_queue_delay_cap_seconds", "The derived short cap on a frame's queueing delay on the loop (2 × the handlers' average service time, 0.7 ms to 1 s on a loop, from 0.5 ms in the worker pool; the largest over the loops); 0 unless AdmissionPolicy.MaxQueueDelay is derived.", prometheus.GaugeValue,
		func(s *server.Stats) float64 { return s.Admission.QueueDelayCap.Seconds() }},
	{"sluice_handler_service_seconds", "The average inline handler time per frame the derived queueing-delay cap follows (of the loop with the largest cap); 0 unless the cap is derived.", prometheus.GaugeValue,
		func(s *server.Stats) float64 { return s.Admission.ServiceTime.Seconds() }},
	{"sluice_refuse_share_ratio", "The part of a loop's last busy window spent on frames it refused (the largest over the loops); past 0.1 the loop rations its reads (docs/OVERLOAD.md#rationed-reads); 0 unless the cap is derived.", prometheus.GaugeValue,
		func(s *server.Stats) float64 { return s.Admission.RefuseShare }},
	{"sluice_ration_holds_total", "Reads the loops held back because they brought only refusals while refusing took too much of the loop (rationed reads).", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.Admission.RationHolds) }},
	{"sluice_ration_pulls_total", "Held connections the loops read before their hold ended because they had nothing else to do (rationed reads).", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.Admission.RationPulls) }},
	{"sluice_goaways_total", "Connections closed with a final refusal (reason goaway) after AdmissionPolicy.GoAwayAfter of refusals (docs/OVERLOAD.md#final-refusals).", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.Admission.GoAways) }},
	{"sluice_goaway_refused_connections_total", "Connections refused at accept while their tenant cooled after a final refusal.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.Admission.GoAwayConns) }},
	{"sluice_held_connections", "Connections whose reads the loops hold back now (rationed reads).", prometheus.GaugeValue,
		func(s *server.Stats) float64 { return float64(s.Admission.HeldConns) }},
	{"sluice_pool_workers", "Worker goroutines of the engine's worker pool (0 without a pool).", prometheus.GaugeValue,
		func(s *server.Stats) float64 { return float64(s.Admission.Pool.Workers) }},
	{"sluice_pool_queued_requests", "Frames waiting for a worker now.", prometheus.GaugeValue,
		func(s *server.Stats) float64 { return float64(s.Admission.Pool.Queued) }},
	{"sluice_pool_running_requests", "Frames a worker is serving now.", prometheus.GaugeValue,
		func(s *server.Stats) float64 { return float64(s.Admission.Pool.Running) }},
	{"sluice_pool_submitted_total", "Frames the loops handed to the worker pool (refusals for a full queue excluded).", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.Admission.Pool.Submitted) }},
	{"sluice_pool_served_total", "Frames a worker ran the handler for.", prometheus.CounterValue,
		func(s *server.Stats) float64 { return float64(s.Admission.Pool.Served) }},
}

// Labelled metrics of server.Stats.Admission.
const (
	nameRejects     = "sluice_rejects_total"
	helpRejects     = "Frames the engine refused, by reason, as carried out by the loops (policy, AdmitFunc, backlog, Conn.Reject) and the worker pool; reason=\"other\" counts refusals without an admission reason (an AdmitFunc's own, idempotency conflicts)."
	namePrioRejects = "sluice_priority_rejects_total"
	helpPrioRejects = "Frames the admission policy refused on the loops, by the frame's priority (critical, normal, best_effort; AdmissionPolicy.Classify sets it)."
	namePoolRejects = "sluice_pool_rejects_total"
	helpPoolRejects = "Frames the worker pool refused, by reason (queue: full or a deadline passed in the queue; codel: shed by CoDel; draining: shutting down)."
	namePoolPrio    = "sluice_pool_priority_rejects_total"
	helpPoolPrio    = "Frames the worker pool refused, by the frame's priority (critical, normal, best_effort; AdmissionPolicy.Classify sets it)."
)

// engineAdmDescs are the descriptors of the Stats.Admission metrics.
type engineAdmDescs struct {
	plain       []*prometheus.Desc // parallel to engineAdmMetrics
	rejects     *prometheus.Desc
	prioRejects *prometheus.Desc
	poolRejects *prometheus.Desc
	poolPrio    *prometheus.Desc
}

func newEngineAdmDescs(cl prometheus.Labels) engineAdmDescs {
	d := engineAdmDescs{plain: make([]*prometheus.Desc, len(engineAdmMetrics))}
	for i, m := range engineAdmMetrics {
		d.plain[i] = prometheus.NewDesc(m.name, m.help, nil, cl)
	}
	d.rejects = prometheus.NewDesc(nameRejects, helpRejects, []string{"reason"}, cl)
	d.prioRejects = prometheus.NewDesc(namePrioRejects, helpPrioRejects, []string{"priority"}, cl)
	d.poolRejects = prometheus.NewDesc(namePoolRejects, helpPoolRejects, []string{"reason"}, cl)
	d.poolPrio = prometheus.NewDesc(namePoolPrio, helpPoolPrio, []string{"priority"}, cl)
	return d
}

func (d *engineAdmDescs) describe(ch chan<- *prometheus.Desc) {
	for _, x := range d.plain {
		ch <- x
	}
	ch <- d.rejects
	ch <- d.prioRejects
	ch <- d.poolRejects
	ch <- d.poolPrio
}

func (d *engineAdmDescs) collect(ch chan<- prometheus.Metric, s *server.Stats) {
	for i, m := range engineAdmMetrics {
		ch <- constMetric(d.plain[i], m.typ, m.value(s))
	}
	a := &s.Admission
	ch <- constMetric(d.rejects, prometheus.CounterValue, float64(a.Rejects[admission.ReasonNone]), "other")
	for r := admission.ReasonNone + 1; r < admission.NumReasons; r++ {
		ch <- constMetric(d.rejects, prometheus.CounterValue, float64(a.Rejects[r]), r.String())
		ch <- constMetric(d.poolRejects, prometheus.CounterValue, float64(a.Pool.Rejects[r]), r.String())
	}
	for p := range admission.NumPriorities {
		ch <- constMetric(d.prioRejects, prometheus.CounterValue, float64(a.RejectsByPriority[p]), p.String())
		ch <- constMetric(d.poolPrio, prometheus.CounterValue, float64(a.Pool.RejectsByPriority[p]), p.String())
	}
}
