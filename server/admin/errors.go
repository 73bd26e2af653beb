package admin

import "errors"

// Sentinel errors of the package; test them with errors.Is.
var (
	// ErrNilStats is returned by New and Serve without a stats source.
	ErrNilStats = errors.New("sluice: admin: nil stats source")

	// ErrDraining is the reason /readyz gives while the server is draining:
	// SetDraining(true), or the engine's own shutdown (Stats.Draining).
	ErrDraining = errors.New("sluice: admin: draining")

	// ErrGateClosed is the reason GateReadiness gives while the listen gate
	// is closed (connection budget reached, admission pressure, EMFILE
	// pause, shutdown).
	ErrGateClosed = errors.New("sluice: admin: listen gate closed")
)
