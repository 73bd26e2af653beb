package metrics_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicenet/sluice/server"
	"github.com/sluicenet/sluice/server/metrics"
)

// A collector over a scripted source; with an engine, use NewForEngine.
func ExampleNew() {
	src := metrics.SourceFunc(func() server.Stats {
		return server.Stats{Accepted: 3, BytesIn: 1500, GateOpen: true}
	})
	c, err := metrics.New(src, metrics.Options{ConstLabels: prometheus.Labels{"server": "echo"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "sluice_connections_accepted_total", "sluice_read_bytes_total", "sluice_gate_open":
			m := mf.GetMetric()[0]
			fmt.Printf("%s{server=%q} %s %v\n", mf.GetName(), m.GetLabel()[0].GetValue(), mf.GetType(),
				m.GetCounter().GetValue()+m.GetGauge().GetValue())
		}
	}
	// Output:
	// sluice_connections_accepted_total{server="echo"} COUNTER 3
	// sluice_gate_open{server="echo"} GAUGE 1
	// sluice_read_bytes_total{server="echo"} COUNTER 1500
}
