// Package client is a Go client for the sluice envelope
// (protocol/envelope): a small pool of pipelined connections, one absolute
// deadline per call across all its attempts, and the resilience package's
// policies built in: retries within a per-destination budget, adaptive
// client-side throttling, an optional circuit breaker, hedging for calls
// marked idempotent, and a cap on attempts in flight.
//
// The package owns connections, request ids (responses are matched by id
// and may arrive in any order), the per-call deadline sent to the server as
// the time left, and the idempotency key: set once per logical call (given
// by the caller or generated) and sent on every retry, so the server's
// idempotency store can answer a retry it already ran. With Config.TLS it
// owns the TLS handshake of each connection too (crypto/tls on top of the
// dial, within the dial's time, a failed handshake being a failed dial,
// *DialError), but not TLS policy: the tls.Config is the caller's. It
// refuses to own the policies themselves (package resilience), the wire
// format (package protocol/envelope) and anything on the server side.
//
// What is retried: a reject (the server refused before running the handler)
// with status too many requests, unavailable or timeout, or conflict with a
// retry-after; a transport failure before the request was written; and,
// when the call is idempotent or keyed, also failed responses with those
// statuses and transport failures after the write. A no-retry flag from the
// server stops retries at once.
//
// Throttling (on by default; docs/CLIENT.md#client-side-throttling): the
// client keeps, over the last 30 s, its requests (attempts, those it
// refused included) and the server's accepts (answers that are not an
// overload refusal), and refuses an attempt itself, with ErrThrottled, with
// probability max(0, (requests − 2·accepts)/(requests + 1)), at most 0.9,
// once the window holds 20 requests: Google's SRE book's adaptive
// throttling, capped as Envoy's admission control caps it. A client facing
// a server that refuses everything sends it a tenth of its attempts
// instead of every one, the refusals cost the server nothing, and the
// client is back to full rate within about two windows (a minute) of the
// server's recovery. ErrThrottled is not retried, and the retry budget
// counts it as a failed attempt (Budget.LocalRefusals). Config.NoThrottle
// switches it off; Config.Throttle tunes or shares it;
// Client.ThrottleStats shows it.
//
// Sketch:
//
//	c, err := client.New(client.Config{Addr: "127.0.0.1:7000", Tenant: "acme"})
//	defer c.Close()
//	ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
//	defer cancel()
//	resp, err := c.Do(ctx, &client.Request{Method: "GET", Payload: key, Idempotent: true})
//	var se *client.StatusError
//	if errors.As(err, &se) { ... se.Status, se.RetryAfterHint ... }
package client
