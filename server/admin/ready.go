package admin

import "github.com/sluicenet/sluice/server/metrics"

// Readiness decides whether the server should receive new traffic: Ready
// returns nil when it should, else an error that says why (shown in the
// /readyz body). It is called once per /readyz and /debug/sluice request,
// from the request's goroutine, and must not block.
type Readiness interface {
	Ready() error
}

// ReadinessFunc adapts a function to Readiness.
type ReadinessFunc func() error

// Ready calls f.
func (f ReadinessFunc) Ready() error { return f() }

// GateReadiness is ready while src is not draining (Stats.Draining: a
// shutdown has begun) and its listen gate is open (Stats.GateOpen): the
// gate closes when the connection budget is reached, when admission
// pressure crosses its high watermark, during an EMFILE pause and once a
// shutdown starts, which are the moments a load balancer should send
// traffic elsewhere. Otherwise it returns ErrDraining or ErrGateClosed.
func GateReadiness(src metrics.Source) Readiness {
	return ReadinessFunc(func() error {
		st := src.Stats()
		switch {
		case st.Draining:
			return ErrDraining
		case !st.GateOpen:
			return ErrGateClosed
		}
		return nil
	})
}
