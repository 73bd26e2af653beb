package resilience

import (
	"context"
	"errors"
	"os"
)

// Sentinel errors. Every message starts with "sluice:"; test with errors.Is.
var (
	// ErrInvalidConfig is wrapped by every Validate error.
	ErrInvalidConfig = errors.New("sluice: invalid resilience configuration")

	// ErrBreakerOpen is returned by Breaker.Allow while the breaker refuses
	// calls (open, or half-open with every probe slot taken). It classifies
	// as ClassOverloaded: do not retry it.
	ErrBreakerOpen error = &classedError{msg: "sluice: circuit breaker is open", class: ClassOverloaded}

	// ErrBulkheadFull is returned by Bulkhead.Acquire when every slot is
	// taken and the wait queue is full. It classifies as ClassOverloaded.
	ErrBulkheadFull error = &classedError{msg: "sluice: bulkhead is full", class: ClassOverloaded}

	// ErrBulkheadTimeout is returned by Bulkhead.Acquire when the context's
	// deadline passes while waiting for a slot. It satisfies
	// errors.Is(err, os.ErrDeadlineExceeded) and context.DeadlineExceeded.
	ErrBulkheadTimeout error = &deadlineError{msg: "sluice: deadline passed waiting for a bulkhead slot"}

	// ErrThrottled is returned by Throttle.Allow when the client refuses an
	// attempt itself because its destination has been refusing most of
	// what it was sent (adaptive client-side throttling). It classifies as
	// ClassOverloaded, like a server's refusal with the no-retry flag: the
	// call fails now and is not retried. Retrier.Do and Hedge count it in
	// the Budget with RecordLocalRefusal and not in the Breaker.
	ErrThrottled error = &classedError{msg: "sluice: throttled locally: the destination has been refusing most requests", class: ClassOverloaded}

	// ErrBudgetExhausted is the reason a retry or hedge was not sent: the
	// destination's retry budget refused it.
	ErrBudgetExhausted = errors.New("sluice: retry budget exhausted")

	// ErrAttemptsExhausted is the reason a call stopped: it used every
	// attempt its policy allows.
	ErrAttemptsExhausted = errors.New("sluice: retry attempts exhausted")

	// ErrNotRetryable is the reason a call stopped: its last error is not
	// retryable (bad request, conflict, permission, cancellation, unknown).
	ErrNotRetryable = errors.New("sluice: error is not retryable")

	// ErrOverloaded is the reason a call stopped: the server said it is
	// overloaded and asked not to be retried.
	ErrOverloaded = errors.New("sluice: server overloaded, not retried")

	// ErrDeadlineTooClose is the reason a call stopped: the next attempt
	// would start past the deadline, or with less time left than the typical
	// latency. It satisfies errors.Is(err, os.ErrDeadlineExceeded) and
	// errors.Is(err, context.DeadlineExceeded).
	ErrDeadlineTooClose error = &deadlineError{msg: "sluice: too little time left before the deadline for another attempt"}
)

// classedError is a sentinel that classifies itself.
type classedError struct {
	msg   string
	class Class
}

func (e *classedError) Error() string     { return e.msg }
func (e *classedError) RetryClass() Class { return e.class }

// deadlineError is a sentinel that is also a timeout.
type deadlineError struct{ msg string }

func (e *deadlineError) Error() string     { return e.msg }
func (e *deadlineError) Timeout() bool     { return true }
func (e *deadlineError) RetryClass() Class { return ClassRetryable }
func (e *deadlineError) Is(target error) bool {
	return target == os.ErrDeadlineExceeded || target == context.DeadlineExceeded
}
