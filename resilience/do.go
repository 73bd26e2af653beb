package resilience

import (
	"context"
	"errors"
)

// Retrier runs a function with retries on top of the pure pieces: Policy
// decides whether and when to retry, Budget (if set) caps retries for the
// destination, Breaker (if set) gates every attempt, and Clock (nil means
// SystemClock) times the waits. The deadline is the context's, fixed once
// for all attempts.
//
// The zero value retries with the default RetryPolicy and no budget or
// breaker. A Retrier must not be changed while in use; Do is safe for
// concurrent use. Do not nest Retriers around one dependency: attempts
// multiply.
type Retrier struct {
	Policy  RetryPolicy
	Budget  *Budget
	Breaker *Breaker
	Clock   Clock
}

// Validate reports an invalid Policy.
func (r *Retrier) Validate() error { return r.Policy.Validate() }

// Do calls fn until it succeeds or the policy says stop, and returns nil or
// a *RetryError carrying the reason and the last error. Each attempt after
// the first must pass the budget; every attempt must pass the breaker; each
// outcome is recorded in both, except that an attempt fn refused with
// ErrThrottled (a Throttle's local refusal) is recorded in the budget with
// RecordLocalRefusal and not in the breaker. Waits end early when ctx is
// done. fn must honour ctx.
func (r *Retrier) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	clk := clockOr(r.Clock)
	deadline, _ := ctx.Deadline()
	st := r.Policy.Start(deadline)
	if r.Budget != nil {
		r.Budget.Begin()
		defer r.Budget.End()
	}
	var last error
	for attempts := 0; ; {
		retry := attempts > 0
		if retry && r.Budget != nil && !r.Budget.TryRetry() {
			return &RetryError{Attempts: attempts, Reason: ErrBudgetExhausted, Err: last}
		}
		start := clk.Now()
		var ticket Ticket
		if r.Breaker != nil {
			t, err := r.Breaker.Allow(start)
			if err != nil {
				if retry && r.Budget != nil {
					r.Budget.EndRetry()
				}
				return &RetryError{Attempts: attempts, Reason: err, Err: last}
			}
			ticket = t
		}
		attempts++
		err := fn(ctx)
		end := clk.Now()
		if retry && r.Budget != nil {
			r.Budget.EndRetry()
		}
		o := r.Policy.classify(err).Outcome()
		local := throttled(err)
		if r.Breaker != nil {
			bo := o
			if local {
				// Nothing reached the destination: the breaker must not
				// learn the throttle's memory (docs/CLIENT.md#the-retry-budget-and-local-refusals).
				bo = OutcomeIgnored
			}
			r.Breaker.Record(end, ticket, end.Sub(start), bo)
		}
		if r.Budget != nil {
			if local {
				r.Budget.RecordLocalRefusal()
			} else {
				r.Budget.Record(o)
			}
		}
		if err == nil {
			if r.Policy.Latency != nil {
				r.Policy.Latency.Observe(end.Sub(start))
			}
			return nil
		}
		last = err
		if cerr := ctx.Err(); cerr != nil {
			return &RetryError{Attempts: attempts, Reason: ctxReason(cerr), Err: err}
		}
		d, stop := st.Next(end, err)
		if stop != nil {
			return &RetryError{Attempts: attempts, Reason: stop, Err: err}
		}
		if d <= 0 {
			continue
		}
		t := clk.NewTimer(d)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return &RetryError{Attempts: attempts, Reason: ctxReason(ctx.Err()), Err: err}
		}
	}
}

// throttled reports a Throttle's local refusal, which budgets count apart.
func throttled(err error) bool { return err != nil && errors.Is(err, ErrThrottled) }

// ctxReason turns a context error into a stop reason: ErrDeadlineTooClose
// for an expired deadline (it matches context.DeadlineExceeded), the
// context's own error otherwise (context.Canceled or a cause).
func ctxReason(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return ErrDeadlineTooClose
	}
	return err
}
