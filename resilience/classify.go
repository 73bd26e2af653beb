package resilience

import (
	"context"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"
)

// Class is what an error means for retries, budgets and breakers.
type Class uint8

// The classes. The zero value, ClassSuccess, is the class of a nil error.
const (
	// ClassSuccess: the call succeeded.
	ClassSuccess Class = iota
	// ClassRetryable: a transient failure worth another attempt: timeouts,
	// connection resets and refusals, "unavailable", "too many requests".
	ClassRetryable
	// ClassOverloaded: the server is overloaded and said not to retry; the
	// call fails now and counts as a failure.
	ClassOverloaded
	// ClassFailed: the dependency failed in a way another attempt is not
	// expected to fix (internal error, unknown error). Not retried; counts
	// as a failure.
	ClassFailed
	// ClassPermanent: the request itself is wrong (bad request, conflict,
	// permission). Not retried; the dependency answered, so it counts as a
	// success for breakers and budgets.
	ClassPermanent
	// ClassCanceled: the caller gave up (context canceled). Not retried and
	// not counted at all.
	ClassCanceled
)

var classNames = [...]string{"success", "retryable", "overloaded", "failed", "permanent", "canceled"}

// String returns the class name in lower case.
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// Retryable reports whether an error of class c may be retried.
func (c Class) Retryable() bool { return c == ClassRetryable }

// Outcome maps c to what breakers and budgets record.
func (c Class) Outcome() Outcome {
	switch c {
	case ClassSuccess, ClassPermanent:
		return OutcomeSuccess
	case ClassCanceled:
		return OutcomeIgnored
	default:
		return OutcomeFailure
	}
}

// Outcome is what a breaker or budget records about one finished call.
type Outcome uint8

// The outcomes.
const (
	// OutcomeSuccess: the dependency answered properly.
	OutcomeSuccess Outcome = iota
	// OutcomeFailure: the dependency failed (error, timeout, overload).
	OutcomeFailure
	// OutcomeIgnored: nothing is learned (the caller canceled); a breaker
	// frees the probe slot, a budget records nothing.
	OutcomeIgnored
)

// String returns "success", "failure" or "ignored".
func (o Outcome) String() string {
	switch o {
	case OutcomeSuccess:
		return "success"
	case OutcomeFailure:
		return "failure"
	case OutcomeIgnored:
		return "ignored"
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// Classifier is implemented by errors that know their own class, such as a
// client's status error. Classify consults it before any default.
type Classifier interface {
	RetryClass() Class
}

// RetryAfterer is implemented by errors that carry the server's
// "retry after" hint. A non-positive value means no hint.
type RetryAfterer interface {
	RetryAfter() time.Duration
}

// maxChainDepth bounds the walk over wrapped errors, so a cyclic or absurdly
// deep chain cannot loop forever.
const maxChainDepth = 32

// Classify returns the class of err. It walks the wrapped chain (Unwrap()
// error and Unwrap() []error, depth first, outermost first) and returns the
// first answer from, at each link in turn: a Classifier; a syscall.Errno
// (ECONNRESET, ECONNREFUSED, ECONNABORTED, EPIPE, ETIMEDOUT, EHOSTUNREACH,
// ENETUNREACH, ENETDOWN, EADDRNOTAVAIL, EAGAIN, EMFILE, ENFILE, ENOBUFS are
// retryable; EACCES and EPERM permanent); a known sentinel
// (context.Canceled is canceled; context.DeadlineExceeded,
// os.ErrDeadlineExceeded, io.EOF, io.ErrUnexpectedEOF and net.ErrClosed are
// retryable; os.ErrPermission is permanent); a *net.DNSError (not found is
// permanent, timeouts and temporary failures retryable); and any error with a
// Timeout() bool method that reports true (retryable). An error nothing
// recognises is ClassFailed. A nil error is ClassSuccess. Classify does not
// allocate.
func Classify(err error) Class {
	if err == nil {
		return ClassSuccess
	}
	if c, ok := classifyChain(err, 0); ok {
		return c
	}
	return ClassFailed
}

func classifyChain(err error, depth int) (Class, bool) {
	for err != nil && depth < maxChainDepth {
		if c, ok := classifyOne(err); ok {
			return c, true
		}
		depth++
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if c, ok := classifyChain(e, depth); ok {
					return c, true
				}
			}
			return 0, false
		default:
			return 0, false
		}
	}
	return 0, false
}

func classifyOne(err error) (Class, bool) {
	if c, ok := err.(Classifier); ok {
		return c.RetryClass(), true
	}
	if errno, ok := err.(syscall.Errno); ok {
		return classifyErrno(errno)
	}
	switch err {
	case context.Canceled:
		return ClassCanceled, true
	case context.DeadlineExceeded, os.ErrDeadlineExceeded, io.EOF, io.ErrUnexpectedEOF, net.ErrClosed:
		return ClassRetryable, true
	case os.ErrPermission:
		return ClassPermanent, true
	}
	if dns, ok := err.(*net.DNSError); ok {
		switch {
		case dns.IsNotFound:
			return ClassPermanent, true
		case dns.IsTimeout, dns.IsTemporary:
			return ClassRetryable, true
		}
		return ClassFailed, true
	}
	if t, ok := err.(interface{ Timeout() bool }); ok && t.Timeout() {
		return ClassRetryable, true
	}
	return 0, false
}

func classifyErrno(errno syscall.Errno) (Class, bool) {
	switch errno {
	case syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.ECONNABORTED, syscall.EPIPE,
		syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ENETDOWN,
		syscall.EADDRNOTAVAIL, syscall.EAGAIN, syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS:
		return ClassRetryable, true
	case syscall.EACCES, syscall.EPERM:
		return ClassPermanent, true
	}
	return ClassFailed, true
}

// RetryAfter returns the first positive retry-after hint in err's chain.
func RetryAfter(err error) (time.Duration, bool) {
	return retryAfterChain(err, 0)
}

func retryAfterChain(err error, depth int) (time.Duration, bool) {
	for err != nil && depth < maxChainDepth {
		if r, ok := err.(RetryAfterer); ok {
			if d := r.RetryAfter(); d > 0 {
				return d, true
			}
		}
		depth++
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if d, ok := retryAfterChain(e, depth); ok {
					return d, true
				}
			}
			return 0, false
		default:
			return 0, false
		}
	}
	return 0, false
}

// WithClass returns err marked with class c and, when retryAfter > 0, a
// retry-after hint. Handlers use it to classify a dependency's errors that
// do not classify themselves. errors.Is and errors.As see through the mark.
// A nil err stays nil.
func WithClass(err error, c Class, retryAfter time.Duration) error {
	if err == nil {
		return nil
	}
	return &markedError{err: err, class: c, retryAfter: retryAfter}
}

type markedError struct {
	err        error
	class      Class
	retryAfter time.Duration
}

func (e *markedError) Error() string             { return e.err.Error() }
func (e *markedError) Unwrap() error             { return e.err }
func (e *markedError) RetryClass() Class         { return e.class }
func (e *markedError) RetryAfter() time.Duration { return e.retryAfter }

// RetryError is returned by Retrier.Do and Hedge when a call fails: how many
// attempts were started, why the call stopped (ErrAttemptsExhausted,
// ErrNotRetryable, ErrOverloaded, ErrDeadlineTooClose, ErrBudgetExhausted,
// ErrBreakerOpen, or the context's error when the caller canceled) and the
// last attempt's error (nil when no attempt ran). errors.Is and errors.As
// match both Reason and Err.
type RetryError struct {
	Attempts int
	Reason   error
	Err      error
}

// Error reports the reason, the attempt count and the last error.
func (e *RetryError) Error() string {
	s := e.Reason.Error() + " after " + strconv.Itoa(e.Attempts) + " attempt"
	if e.Attempts != 1 {
		s += "s"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns Reason and, when set, Err.
func (e *RetryError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Err}
}

// RetryClass is the class of the last attempt's error, or of the reason
// when no attempt ran.
func (e *RetryError) RetryClass() Class {
	if e.Err != nil {
		return Classify(e.Err)
	}
	return Classify(e.Reason)
}
