package client

import (
	"context"

	"github.com/sluicenet/sluice/protocol/envelope"
	"github.com/sluicenet/sluice/resilience"
)

// ErrThrottled is the error of an attempt the client refused itself: its
// throttle (Config.Throttle) judged that the server has been refusing most
// recent requests (docs/CLIENT.md#client-side-throttling). It is
// resilience.ErrThrottled, so errors.Is matches either; it classifies as
// resilience.ClassOverloaded, like a server refusal with the no-retry flag:
// the call fails at once and is not retried. Nothing was sent.
var ErrThrottled = resilience.ErrThrottled

// Throttle returns the client's throttle, nil when Config.NoThrottle is set.
func (c *Client) Throttle() *resilience.Throttle { return c.throttle }

// ThrottleStats returns the throttle's window now (by Config.Clock):
// requests, accepts, local refusals and the current refusal probability.
// It is zero when Config.NoThrottle is set.
func (c *Client) ThrottleStats() resilience.ThrottleStats {
	if c.throttle == nil {
		return resilience.ThrottleStats{}
	}
	return c.throttle.Stats(c.clock.Now())
}

// attempt is one attempt behind the throttle: it asks the throttle first
// and tells it what became of the attempt.
func (c *Client) attempt(ctx context.Context, lc *logicalCall) (*Response, error) {
	if err := c.admit(); err != nil {
		return nil, err
	}
	resp, err := c.send(ctx, lc)
	c.account(err)
	return resp, err
}

// admit asks the throttle whether an attempt may be sent now.
func (c *Client) admit() error {
	if c.throttle == nil {
		return nil
	}
	return c.throttle.Allow(c.clock.Now())
}

// account tells the throttle what became of a sent attempt.
func (c *Client) account(err error) {
	if c.throttle == nil {
		return
	}
	if counted, accepted := throttleOutcome(err); counted {
		c.throttle.Record(c.clock.Now(), accepted)
	}
}

// throttleOutcome says whether an attempt's result counts for the throttle
// and whether the server accepted it (docs/CLIENT.md#what-counts-as-accepted).
// Accepted: any answer but an overload refusal. Refused: a too-many-requests
// or unavailable status or the no-retry flag, and an attempt the server did
// not answer (timeout, refused or broken connection, protocol violation),
// which is how an overloaded server that has stopped reading looks.
// Not counted: an attempt the caller canceled or the client closed, and one
// the bulkhead kept from being sent. It does not allocate.
func throttleOutcome(err error) (counted, accepted bool) {
	if err == nil {
		return true, true
	}
	if se, ok := err.(*StatusError); ok {
		return true, !se.overloadRefusal()
	}
	if err == resilience.ErrBulkheadFull || err == resilience.ErrBulkheadTimeout {
		return false, false
	}
	if resilience.Classify(err) == resilience.ClassCanceled {
		return false, false
	}
	return true, false
}

// overloadRefusal reports an answer that refuses for overload: the statuses
// a sluice server sheds with (envelope.RejectStatus) or the no-retry flag.
func (e *StatusError) overloadRefusal() bool {
	return e.NoRetry || e.Status == envelope.StatusTooManyRequests || e.Status == envelope.StatusUnavailable
}
