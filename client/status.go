package client

import (
	"strconv"
	"time"

	"github.com/sluicenet/sluice/protocol/envelope"
	"github.com/sluicenet/sluice/resilience"
)

// maxErrorPayloadBytes bounds the payload a StatusError keeps, so an error
// that is logged or held does not pin a large response.
const maxErrorPayloadBytes = 1024

// StatusError is a call's failure as the server reported it: a reject (the
// server refused the request before its handler ran) or a response with a
// failure status. It classifies itself for the resilience package:
//
//	bad request                  permanent: not retried
//	conflict                     permanent; retryable when it carries a
//	                             retry-after (an idempotency key in progress)
//	too many requests            retryable, after the hint
//	unavailable                  retryable, after the hint; overloaded (not
//	                             retried) with the no-retry flag
//	timeout                      retryable
//	internal                     failed: not retried, counts as a failure
//
// A response (not a reject) is retried only when the call is safe to
// repeat: marked idempotent or carrying an idempotency key. Otherwise the
// handler may have had an effect and the error is not retried.
type StatusError struct {
	Status   envelope.Status
	Rejected bool // a reject: no handler ran, no effect took place
	NoRetry  bool // the server asked not to be retried at all
	// RetryAfterHint is the server's retry-after; 0 without one.
	RetryAfterHint time.Duration
	// Payload is the reject reason or the response body, at most 1 KiB, a
	// copy the caller owns.
	Payload []byte
	class   resilience.Class
}

// Error reports the status, whether it was a reject, and the reason.
func (e *StatusError) Error() string {
	s := "sluice: server "
	if e.Rejected {
		s += "rejected the request: "
	} else {
		s += "answered: "
	}
	s += e.Status.String() + " (" + strconv.Itoa(e.Status.HTTPStatus()) + ")"
	if e.RetryAfterHint > 0 {
		s += ", retry after " + e.RetryAfterHint.String()
	}
	if e.NoRetry {
		s += ", do not retry"
	}
	if len(e.Payload) > 0 {
		s += ": " + string(e.Payload)
	}
	return s
}

// RetryClass is the error's class (see the type's documentation).
func (e *StatusError) RetryClass() resilience.Class { return e.class }

// RetryAfter returns RetryAfterHint; retries honour it when it is longer
// than their backoff.
func (e *StatusError) RetryAfter() time.Duration { return e.RetryAfterHint }

// statusClass is the class of a failure status; safe reports whether the
// call may be repeated (a reject always may).
func statusClass(st envelope.Status, flags envelope.Flags, rejected, safe bool) resilience.Class {
	if flags&envelope.FlagNoRetry != 0 {
		return resilience.ClassOverloaded
	}
	var c resilience.Class
	switch st {
	case envelope.StatusOK:
		return resilience.ClassSuccess
	case envelope.StatusBadRequest:
		return resilience.ClassPermanent
	case envelope.StatusConflict:
		c = resilience.ClassPermanent
		if flags&envelope.FlagRetryAfter != 0 {
			c = resilience.ClassRetryable
		}
	case envelope.StatusTooManyRequests, envelope.StatusUnavailable, envelope.StatusTimeout:
		c = resilience.ClassRetryable
	default:
		return resilience.ClassFailed
	}
	if c == resilience.ClassRetryable && !rejected && !safe {
		return resilience.ClassFailed
	}
	return c
}
