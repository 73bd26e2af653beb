// Package procstat reads what the load generator and the comparison lab
// measure about processes and CPUs on Linux: a process's CPU time, system-call
// counts and resident memory (/proc/PID/stat, io, status), every CPU's busy
// and steal ticks (/proc/stat), and CPU affinity (pinning a process, starting
// a pinned child, reading a process's CPUs back).
//
// procstat owns reading and pinning; it refuses to own what the numbers mean
// (package bench turns two readings into per-message costs) or any report.
// It is internal: the public surface is bench.LoadResult's ProcUsage and
// CoreUsage.
//
// Off Linux the pinning functions return ErrUnsupported and the readers fail
// with the error of the missing /proc file.
package procstat

import "errors"

// Sentinel errors of the procstat package, errors.Is-able; the functions that
// return them wrap them with the detail (%w).
var (
	// ErrInvalidCPUList reports a CPU list that does not parse, is empty or
	// names a CPU out of range.
	ErrInvalidCPUList = errors.New("sluice: procstat: invalid CPU list")

	// ErrUnsupported is returned by the affinity functions on systems other
	// than Linux.
	ErrUnsupported = errors.New("sluice: procstat: unsupported on this system (Linux only)")
)
