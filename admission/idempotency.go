package admission

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"time"
)

// Fingerprint is the SHA-256 of what makes a request "the same request" for
// an idempotency key: at least its payload, and usually the operation or
// route, which the caller includes (see FingerprintOf).
type Fingerprint [sha256.Size]byte

// FingerprintOf returns the SHA-256 of op followed by payload, with op's
// length in front so that ("ab","c") and ("a","bc") differ. It does not
// allocate.
func FingerprintOf(op, payload []byte) Fingerprint {
	h := sha256.New()
	var n [8]byte
	for i := range n {
		n[i] = byte(uint64(len(op)) >> (8 * i))
	}
	h.Write(n[:])
	h.Write(op)
	h.Write(payload)
	var fp Fingerprint
	h.Sum(fp[:0])
	return fp
}

// ClaimState is the outcome of claiming an idempotency key.
type ClaimState uint8

// Claim outcomes.
const (
	// ClaimNew: the caller now owns the key; run the handler, then Finish
	// (or Abandon on a failure that should let a retry run again).
	ClaimNew ClaimState = iota
	// ClaimInProgress: another request with this key and the same payload
	// is being handled. Answer a conflict with RetryAfter (HTTP 409; the
	// IETF draft's status for a retry that overlaps the original).
	ClaimInProgress
	// ClaimDone: the request was handled; replay Status and Response
	// without running the handler.
	ClaimDone
	// ClaimMismatch: the key was used with a different payload. Answer
	// HTTP 422 Unprocessable Content, which the IETF Idempotency-Key draft
	// (draft-ietf-httpapi-idempotency-key-header, "Error Scenarios")
	// prescribes for key reuse with a different payload: the request is
	// well-formed but can never succeed with this key, so it must not be
	// retried, unlike the 409 of ClaimInProgress.
	ClaimMismatch
	numClaimStates
)

var claimNames = [numClaimStates]string{"new", "in_progress", "done", "mismatch"}

// String returns the outcome's name.
func (s ClaimState) String() string {
	if s < numClaimStates {
		return claimNames[s]
	}
	return fmt.Sprintf("claim(%d)", uint8(s))
}

// HTTPStatus returns the status the IETF Idempotency-Key draft prescribes
// for this outcome: 409 for in progress, 422 for a payload mismatch; 0 for
// ClaimNew and ClaimDone (run the handler, or replay the stored status).
func (s ClaimState) HTTPStatus() int {
	switch s {
	case ClaimInProgress:
		return 409
	case ClaimMismatch:
		return 422
	}
	return 0
}

// Claim is a Store's answer to a claim.
type Claim struct {
	// State is the outcome.
	State ClaimState
	// Token identifies the caller's ownership after ClaimNew; pass it to
	// Finish or Abandon. A late Finish from a claim that expired and was
	// claimed again fails with ErrNotOwner instead of overwriting.
	Token uint64
	// Status and Response are the stored outcome after ClaimDone. Response
	// is read-only and stays valid after the call (stores never reuse it).
	Status   int
	Response []byte
	// RetryAfter is the hint after ClaimInProgress.
	RetryAfter time.Duration
}

// Store records idempotency keys so that a retried request has one effect.
// Keys are opaque bytes; the store does not retain the caller's slices. Every
// method may block on the network (Redis): the engine calls it from a worker,
// never from an event loop, unless the store is the in-memory one.
type Store interface {
	// Claim claims key for a request with fingerprint fp at now: new,
	// in progress, done with a stored response, or mismatch.
	Claim(ctx context.Context, now time.Time, key []byte, fp Fingerprint) (Claim, error)
	// Finish stores the outcome of the claim identified by token and keeps
	// it for the store's TTL. It fails with ErrNotOwner when the claim is
	// no longer held and ErrResponseTooLarge beyond the store's bound.
	Finish(ctx context.Context, now time.Time, key []byte, token uint64, status int, response []byte) error
	// Abandon releases the claim without an outcome, so that a retry runs
	// the handler again (use it when the handler failed before any effect).
	Abandon(ctx context.Context, now time.Time, key []byte, token uint64) error
}

// StoreConfig bounds an idempotency store. Both implementations use it.
type StoreConfig struct {
	// TTL is how long a finished outcome is kept. Zero: 24h.
	TTL time.Duration
	// InProgressTTL is the lease of a claim: if the owner neither finishes
	// nor abandons within it (it crashed), the key may be claimed again.
	// Zero: 30s.
	InProgressTTL time.Duration
	// InProgressRetryAfter is the hint given to a duplicate that arrives
	// while the original is in progress (capped at the lease's remaining
	// time). Zero: 1s.
	InProgressRetryAfter time.Duration
	// MaxKeyBytes bounds keys. Zero: 256.
	MaxKeyBytes int
	// MaxResponseBytes bounds stored responses. Zero: 64 KiB.
	MaxResponseBytes int
	// MaxKeys is the in-memory store's hard cap on keys. Zero: 100,000.
	// The Redis store ignores it (bound Redis with maxmemory).
	MaxKeys int
	// MaxBytes is the in-memory store's budget for keys plus stored
	// responses plus a fixed per-entry overhead. Zero: 64 MiB. The Redis
	// store ignores it.
	MaxBytes int64
}

// WithDefaults returns c with zero fields set to their defaults.
func (c StoreConfig) WithDefaults() StoreConfig {
	if c.TTL == 0 {
		c.TTL = 24 * time.Hour
	}
	if c.InProgressTTL == 0 {
		c.InProgressTTL = 30 * time.Second
	}
	if c.InProgressRetryAfter == 0 {
		c.InProgressRetryAfter = time.Second
	}
	if c.MaxKeyBytes == 0 {
		c.MaxKeyBytes = 256
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = 64 << 10
	}
	if c.MaxKeys == 0 {
		c.MaxKeys = 100_000
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = 64 << 20
	}
	return c
}

// Validate checks the configuration after defaults are applied.
func (c StoreConfig) Validate() error {
	c = c.WithDefaults()
	if c.TTL < time.Millisecond || c.InProgressTTL < time.Millisecond || c.InProgressRetryAfter < 0 ||
		c.MaxKeyBytes < 1 || c.MaxResponseBytes < 0 || c.MaxKeys < 1 || c.MaxBytes < 1 {
		return fmt.Errorf("%w: store %+v", ErrBadConfig, c)
	}
	return nil
}

// CheckKey validates an idempotency key against c's bound.
func (c StoreConfig) CheckKey(key []byte) error {
	switch {
	case len(key) == 0:
		return ErrEmptyKey
	case len(key) > c.MaxKeyBytes:
		return ErrKeyTooLong
	}
	return nil
}

// InProgressHint returns the retry-after for a duplicate whose original's
// lease has remaining time left.
func (c StoreConfig) InProgressHint(remaining time.Duration) time.Duration {
	return max(0, min(c.InProgressRetryAfter, remaining))
}

// ClaimOrWait claims key and, while the original request is in progress,
// waits (polling every poll, or the store's RetryAfter hint when shorter)
// until it is done, it is abandoned or expires (the caller then owns it), or
// ctx ends. It sleeps, so it is for worker goroutines, never event loops.
// now supplies the clock (time.Now in production).
//
// When ctx's deadline passes first, the error satisfies both
// errors.Is(err, os.ErrDeadlineExceeded) and
// errors.Is(err, context.DeadlineExceeded). A non-positive poll means 50ms.
func ClaimOrWait(ctx context.Context, s Store, now func() time.Time, key []byte, fp Fingerprint, poll time.Duration) (Claim, error) {
	if poll <= 0 {
		poll = 50 * time.Millisecond
	}
	for {
		c, err := s.Claim(ctx, now(), key, fp)
		if err != nil || c.State != ClaimInProgress {
			return c, err
		}
		wait := poll
		if c.RetryAfter > 0 && c.RetryAfter < wait {
			wait = c.RetryAfter
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if err := ctx.Err(); errors.Is(err, context.DeadlineExceeded) {
				return c, fmt.Errorf("sluice: waiting for idempotency key: %w (%w)", os.ErrDeadlineExceeded, err)
			}
			return c, ctx.Err()
		case <-t.C:
		}
	}
}
