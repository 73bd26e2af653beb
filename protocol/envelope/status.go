package envelope

import "strconv"

// Status is the outcome of a request, with the meaning of the HTTP status
// HTTPStatus returns.
type Status uint8

// The statuses. The zero value is StatusOK.
const (
	// StatusOK (HTTP 200): the handler succeeded.
	StatusOK Status = 0
	// StatusBadRequest (HTTP 400): the request is wrong; do not retry it.
	StatusBadRequest Status = 1
	// StatusConflict (HTTP 409): the request conflicts with the server's
	// state, such as an idempotency key in progress or reused with another
	// payload; do not retry it unchanged (unless a retry-after says when).
	StatusConflict Status = 2
	// StatusTooManyRequests (HTTP 429): the caller (its tenant) is over its
	// quota; retry after the hint.
	StatusTooManyRequests Status = 3
	// StatusUnavailable (HTTP 503): the server is overloaded or draining;
	// retry after the hint unless FlagNoRetry is set.
	StatusUnavailable Status = 4
	// StatusTimeout (HTTP 504): the deadline passed before the work finished.
	StatusTimeout Status = 5
	// StatusInternal (HTTP 500): the handler failed.
	StatusInternal Status = 6

	maxStatus = StatusInternal
)

var statusNames = [...]string{"ok", "bad request", "conflict", "too many requests", "unavailable", "timeout", "internal"}

var statusHTTP = [...]int{200, 400, 409, 429, 503, 504, 500}

// String returns the status in lower-case words ("too many requests"), or
// "status(n)".
func (s Status) String() string {
	if s <= maxStatus {
		return statusNames[s]
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// HTTPStatus returns the HTTP status code with the same meaning: 200, 400,
// 409, 429, 503, 504, 500; an undefined status is 500.
func (s Status) HTTPStatus() int {
	if s <= maxStatus {
		return statusHTTP[s]
	}
	return 500
}

// StatusFromHTTP returns the status closest in meaning to an HTTP status
// code. The six codes HTTPStatus returns map back exactly; otherwise 2xx is
// StatusOK, 408 is StatusTimeout, other 4xx (422 included) StatusBadRequest,
// 502 StatusUnavailable, other 5xx StatusInternal, and anything else
// (1xx, 3xx, out of range) StatusInternal.
func StatusFromHTTP(code int) Status {
	switch code {
	case 400:
		return StatusBadRequest
	case 408, 504:
		return StatusTimeout
	case 409:
		return StatusConflict
	case 429:
		return StatusTooManyRequests
	case 502, 503:
		return StatusUnavailable
	case 500:
		return StatusInternal
	}
	switch {
	case code >= 200 && code < 300:
		return StatusOK
	case code >= 400 && code < 500:
		return StatusBadRequest
	}
	return StatusInternal
}
