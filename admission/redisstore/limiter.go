package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicenet/sluice/admission"
)

// gcraScript is GCRA with Redis TIME as the clock, in microseconds (a double
// holds them exactly until the year 2255). One string per tenant holds its
// theoretical arrival time; it expires when the TAT passes, so an idle
// tenant costs nothing and memory is bounded by active tenants.
//
// ARGV: emission interval per unit (µs, may be fractional), burst, cost.
// Reply: {allowed 0|1, retry_after µs, remaining units, reset_after µs}.
var gcraScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local T = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local tau = T * burst
local tat = tonumber(redis.call('GET', KEYS[1]) or 0) or 0
if tat < now then tat = now end
local newtat = tat + n * T
local allow_at = newtat - tau
if now < allow_at then
  local rem = math.floor((tau - (tat - now)) / T + 1e-9)
  return {0, math.ceil(allow_at - now), math.max(0, rem), math.ceil(tat - now)}
end
if n > 0 then
  local ttl = math.max(1, math.ceil((newtat - now) / 1000))
  redis.call('SET', KEYS[1], string.format('%.3f', newtat), 'PX', ttl)
end
local rem = math.floor((tau - (newtat - now)) / T + 1e-9)
return {1, 0, math.max(0, rem), math.ceil(newtat - now)}
`)

// Limiter is an admission.TenantQuota in Redis: GCRA in one Lua script with
// Redis's TIME as the clock, so every server of a fleet charges one shared
// quota per tenant and their clocks need not agree. It is safe for concurrent
// use. Each call is one round trip; the now argument is ignored.
type Limiter struct {
	c        redis.UniversalClient
	prefix   string
	q        admission.Quota
	interval string // emission interval per unit in µs
	burst    string
}

var _ admission.TenantQuota = (*Limiter)(nil)

// NewLimiter returns a limiter charging q under keys prefix + tenant key.
func NewLimiter(c redis.UniversalClient, prefix string, q admission.Quota) (*Limiter, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("%w: nil redis client", admission.ErrBadConfig)
	}
	us := float64(q.Per) / float64(time.Microsecond) / float64(q.Count)
	return &Limiter{c: c, prefix: prefix, q: q,
		interval: strconv.FormatFloat(us, 'g', -1, 64), burst: strconv.FormatInt(q.Burst, 10)}, nil
}

// AllowN implements admission.TenantQuota. RetryAfter and ResetAfter are
// rounded up to the microsecond.
func (l *Limiter) AllowN(ctx context.Context, _ time.Time, key []byte, cost int64) (admission.Decision, error) {
	switch {
	case cost < 0:
		return admission.Decision{}, admission.ErrBadCost
	case cost > l.q.Burst:
		return admission.Decision{}, admission.ErrCostExceedsBurst
	}
	res, err := gcraScript.Run(ctx, l.c, []string{l.prefix + string(key)}, l.interval, l.burst, cost).Int64Slice()
	if err != nil {
		return admission.Decision{}, wrap("gcra", err)
	}
	if len(res) != 4 {
		return admission.Decision{}, fmt.Errorf("%w: gcra returned %d values", ErrBadReply, len(res))
	}
	return admission.Decision{
		Allowed:    res[0] == 1,
		RetryAfter: time.Duration(res[1]) * time.Microsecond,
		Remaining:  min(res[2], l.q.Burst),
		ResetAfter: time.Duration(res[3]) * time.Microsecond,
	}, nil
}
