package lab

import "errors"

// Sentinel errors of the comparison lab. Each is errors.Is-able; the functions
// that return them wrap them with the detail (%w). Invalid configurations are
// reported with bench.ErrInvalidConfig, unsupported systems with
// bench.ErrUnsupported.
var (
	// ErrServerUnavailable reports a server that could not be built or started;
	// a comparison carries on without it and says so in the report.
	ErrServerUnavailable = errors.New("sluice: bench: server unavailable")

	// ErrNoServers reports a comparison in which no server could be built and
	// started.
	ErrNoServers = errors.New("sluice: bench: no server available")

	// ErrServerStart reports a server process that exited or stayed silent
	// instead of printing its "listening on HOST:PORT" line.
	ErrServerStart = errors.New("sluice: bench: server did not start")

	// ErrNoPeak reports an open-loop scenario whose offered rate could not be
	// derived because its reference closed-loop scenario produced no result.
	ErrNoPeak = errors.New("sluice: bench: no peak throughput to derive the open-loop rate from")

	// ErrNoCompiler reports that the C compiler for the C floor servers is
	// not on PATH.
	ErrNoCompiler = errors.New("sluice: bench: no C compiler")

	// ErrMissingLibrary reports a C floor server whose library headers are
	// not installed (liburing-dev for c-uring).
	ErrMissingLibrary = errors.New("sluice: bench: C library headers missing")
)
