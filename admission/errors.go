package admission

import "errors"

// Sentinel errors returned by this package. Each is errors.Is-able; errors
// that carry detail wrap one of these with fmt.Errorf("%w: ...").
var (
	// ErrBadConfig reports an invalid configuration value; the wrapped
	// message names the field.
	ErrBadConfig = errors.New("sluice: invalid admission config")

	// ErrBound reports a second Admitter.Bind: an Admitter belongs to one
	// engine.
	ErrBound = errors.New("sluice: admitter already bound to an engine")

	// ErrBadWatermark reports a watermark pair that cannot provide
	// hysteresis (Low above High, NaN, or a negative dwell).
	ErrBadWatermark = errors.New("sluice: invalid watermark")

	// ErrBadQuota reports a quota whose rate or burst is not positive or
	// whose rate is finer than one unit per nanosecond.
	ErrBadQuota = errors.New("sluice: invalid quota")

	// ErrBadCost reports a negative cost passed to a limiter.
	ErrBadCost = errors.New("sluice: negative cost")

	// ErrCostExceedsBurst reports a cost larger than the quota's burst: such
	// a request can never be admitted, so it gets no retry-after.
	ErrCostExceedsBurst = errors.New("sluice: cost exceeds burst")

	// ErrTenantTableFull reports that a new tenant could not be tracked
	// because the tenant table is at its hard cap and the configured
	// policy refuses new tenants rather than evicting indebted ones.
	ErrTenantTableFull = errors.New("sluice: tenant table full")

	// ErrUnknownReason reports a string that names no reject reason.
	ErrUnknownReason = errors.New("sluice: unknown reject reason")

	// ErrUnknownClass reports a concurrency class index out of range.
	ErrUnknownClass = errors.New("sluice: unknown concurrency class")

	// ErrBadPrefix reports an IP prefix length out of range.
	ErrBadPrefix = errors.New("sluice: invalid prefix length")

	// ErrEmptyKey reports an empty idempotency key.
	ErrEmptyKey = errors.New("sluice: empty idempotency key")

	// ErrKeyTooLong reports an idempotency key longer than the store allows.
	ErrKeyTooLong = errors.New("sluice: idempotency key too long")

	// ErrResponseTooLarge reports a response larger than the store keeps.
	ErrResponseTooLarge = errors.New("sluice: idempotent response too large")

	// ErrNotOwner reports a Finish or Abandon whose claim is no longer held
	// by the caller: it expired, was abandoned, or another claim replaced it.
	ErrNotOwner = errors.New("sluice: idempotency claim not owned")

	// ErrStoreFull reports that the in-memory idempotency store is at its
	// hard cap and every evictable candidate is still in progress.
	ErrStoreFull = errors.New("sluice: idempotency store full")

	// ErrUnsupported reports a facility this platform does not provide.
	ErrUnsupported = errors.New("sluice: unsupported on this platform")
)
