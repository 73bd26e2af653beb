package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicenet/sluice/admission"
)

// readScript returns the record and its remaining lease or TTL in
// milliseconds in one atomic step, or nil when the key is gone.
var readScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then return false end
return {v, redis.call('PTTL', KEYS[1])}
`)

// finishScript turns an in-progress record into a done record, only if the
// caller's token still holds the claim (check-and-set). It keeps the token
// and fingerprint of the stored record and appends the outcome: ARGV[1] is
// the expected state+token prefix (9 bytes), ARGV[2] the status (2 bytes)
// and response, ARGV[3] the TTL in ms.
var finishScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, 9) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], 'D' .. string.sub(v, 2, 41) .. ARGV[2], 'PX', ARGV[3])
return 1
`)

// abandonScript deletes an in-progress record only if the caller's token
// still holds it.
var abandonScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, 9) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`)

// claimAttempts bounds the SET NX / read loop when the key expires between
// the two.
const claimAttempts = 3

// Store is an admission.Store in Redis: a claim is SET key record NX PX
// lease, the reads and the finish are Lua scripts, so every check-and-set is
// atomic in Redis and any number of processes share one view of every key.
// It is safe for concurrent use. Keys are prefix + the idempotency key.
// The store ignores now: Redis's expiry is the clock.
type Store struct {
	c      redis.UniversalClient
	prefix string
	cfg    admission.StoreConfig
}

var _ admission.Store = (*Store)(nil)

// NewStore returns a store using c with keys under prefix. MaxKeys and
// MaxBytes of cfg do not apply: bound Redis with maxmemory and a volatile
// eviction policy (every key has a TTL).
func NewStore(c redis.UniversalClient, prefix string, cfg admission.StoreConfig) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("%w: nil redis client", admission.ErrBadConfig)
	}
	return &Store{c: c, prefix: prefix, cfg: cfg.WithDefaults()}, nil
}

func (s *Store) key(k []byte) string { return s.prefix + string(k) }

// Claim implements admission.Store.
func (s *Store) Claim(ctx context.Context, _ time.Time, key []byte, fp admission.Fingerprint) (admission.Claim, error) {
	if err := s.cfg.CheckKey(key); err != nil {
		return admission.Claim{}, err
	}
	k := s.key(key)
	tok, err := newToken()
	if err != nil {
		return admission.Claim{}, err
	}
	rec := appendRecord(make([]byte, 0, headerLen), record{token: tok, fp: fp})
	leaseMs := strconv.FormatInt(s.cfg.InProgressTTL.Milliseconds(), 10)
	for range claimAttempts {
		err := s.c.Do(ctx, "SET", k, rec, "PX", leaseMs, "NX").Err()
		if err == nil {
			return admission.Claim{State: admission.ClaimNew, Token: tok}, nil
		}
		if !errors.Is(err, redis.Nil) {
			return admission.Claim{}, wrap("claim", err)
		}
		res, err := readScript.Run(ctx, s.c, []string{k}).Slice()
		if errors.Is(err, redis.Nil) {
			continue // expired between SET and read: try to claim again
		}
		if err != nil {
			return admission.Claim{}, wrap("read", err)
		}
		return s.claimFromRead(res, fp)
	}
	return admission.Claim{}, ErrClaimRace
}

func (s *Store) claimFromRead(res []any, fp admission.Fingerprint) (admission.Claim, error) {
	if len(res) != 2 {
		return admission.Claim{}, fmt.Errorf("%w: read returned %d values", ErrBadReply, len(res))
	}
	v, ok1 := res[0].(string)
	pttl, ok2 := res[1].(int64)
	if !ok1 || !ok2 {
		return admission.Claim{}, fmt.Errorf("%w: read returned %T, %T", ErrBadReply, res[0], res[1])
	}
	r, err := decodeRecord([]byte(v))
	if err != nil {
		return admission.Claim{}, err
	}
	switch {
	case r.fp != fp:
		return admission.Claim{State: admission.ClaimMismatch}, nil
	case !r.done:
		return admission.Claim{State: admission.ClaimInProgress,
			RetryAfter: s.cfg.InProgressHint(time.Duration(max(pttl, 0)) * time.Millisecond)}, nil
	}
	return admission.Claim{State: admission.ClaimDone, Status: int(r.status), Response: r.response}, nil
}

// Finish implements admission.Store.
func (s *Store) Finish(ctx context.Context, _ time.Time, key []byte, token uint64, status int, response []byte) error {
	if err := s.cfg.CheckKey(key); err != nil {
		return err
	}
	if len(response) > s.cfg.MaxResponseBytes {
		return admission.ErrResponseTooLarge
	}
	if status < 0 || status > 0xffff {
		return fmt.Errorf("%w: %d", ErrStatusRange, status)
	}
	// The script copies token and fingerprint from the claim it checks, so
	// only the outcome travels.
	outcome := append(binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(response)), uint16(status)), response...)
	n, err := finishScript.Run(ctx, s.c, []string{s.key(key)}, ownerPrefix(token), outcome, s.cfg.TTL.Milliseconds()).Int64()
	if err != nil {
		return wrap("finish", err)
	}
	if n != 1 {
		return admission.ErrNotOwner
	}
	return nil
}

// Abandon implements admission.Store.
func (s *Store) Abandon(ctx context.Context, _ time.Time, key []byte, token uint64) error {
	if err := s.cfg.CheckKey(key); err != nil {
		return err
	}
	n, err := abandonScript.Run(ctx, s.c, []string{s.key(key)}, ownerPrefix(token)).Int64()
	if err != nil {
		return wrap("abandon", err)
	}
	if n != 1 {
		return admission.ErrNotOwner
	}
	return nil
}

// ownerPrefix is the state byte and token of an in-progress record owned by
// token: the 9 bytes the scripts compare.
func ownerPrefix(token uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{stateInProgress}, token)
}

// newToken returns a random non-zero claim token, unique across processes
// with overwhelming probability.
func newToken() (uint64, error) {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, fmt.Errorf("sluice: claim token: %w", err)
		}
		if t := binary.BigEndian.Uint64(b[:]); t != 0 {
			return t, nil
		}
	}
}
