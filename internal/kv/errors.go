package kv

import (
	"errors"

	"github.com/sluicenet/sluice/resilience"
)

// Sentinel errors of the kv package; test them with errors.Is.
var (
	// ErrInvalidConfig wraps every configuration error.
	ErrInvalidConfig = errors.New("sluice: kv: invalid configuration")

	// ErrNotInteger is returned by Store.Incr when the stored value is not
	// a base-10 64-bit integer.
	ErrNotInteger = errors.New("sluice: kv: value is not an integer or out of range")

	// ErrOverflow is returned by Store.Incr when the result would not fit
	// in an int64.
	ErrOverflow = errors.New("sluice: kv: increment or decrement would overflow")

	// ErrStoreFull is returned by writes that would pass the store's key or
	// byte budget (Config.MaxKeys, Config.MaxBytes).
	ErrStoreFull = errors.New("sluice: kv: store full")

	// ErrValueTooLarge is returned by writes of a value longer than
	// Config.MaxValueBytes.
	ErrValueTooLarge = errors.New("sluice: kv: value too large")

	// ErrBadPayload is returned by DecodePut for a PUT payload that is not
	// a uvarint key length followed by that many key bytes.
	ErrBadPayload = errors.New("sluice: kv: malformed PUT payload")

	// ErrDependency is the simulated dependency's failure. The error the
	// dependency returns wraps it and classifies as retryable.
	ErrDependency = errors.New("sluice: kv: simulated dependency failed")

	// ErrPoolClosed is the reason a request was refused because the worker
	// pool is shutting down.
	ErrPoolClosed = errors.New("sluice: kv: worker pool closed")
)

// errDependencyRetryable is what Dependency.Call returns on a simulated
// failure: ErrDependency marked retryable for resilience.Classify.
var errDependencyRetryable = resilience.WithClass(ErrDependency, resilience.ClassRetryable, 0)
