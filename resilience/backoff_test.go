package resilience

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// fixedRand always returns the same value: 0 gives unit() == 0, ^0 gives
// unit() just below 1, 1<<63 gives unit() == 0.5.
type fixedRand uint64

func (r fixedRand) Uint64() uint64 { return uint64(r) }

const (
	randLow  = fixedRand(0)
	randHigh = fixedRand(^uint64(0))
	randMid  = fixedRand(1 << 63)
)

func TestBackoffDelay(t *testing.T) {
	ms := time.Millisecond
	b := Backoff{Base: 10 * ms, Max: 100 * ms, Multiplier: 2}
	with := func(j Jitter) Backoff { c := b; c.Jitter = j; return c }
	tests := []struct {
		b     Backoff
		retry int
		prev  time.Duration
		r     fixedRand
		want  time.Duration
	}{
		{with(JitterNone), 1, 0, randLow, 10 * ms},
		{with(JitterNone), 2, 0, randLow, 20 * ms},
		{with(JitterNone), 4, 0, randLow, 80 * ms},
		{with(JitterNone), 5, 0, randLow, 100 * ms}, // capped
		{with(JitterNone), 60, 0, randLow, 100 * ms},
		{with(JitterNone), 0, 0, randLow, 10 * ms}, // retry < 1 treated as 1
		{with(JitterFull), 3, 0, randLow, 0},
		{with(JitterFull), 3, 0, randMid, 20 * ms},
		{with(JitterEqual), 3, 0, randLow, 20 * ms},
		{with(JitterEqual), 3, 0, randMid, 30 * ms},
		{with(JitterDecorrelated), 1, 0, randLow, 10 * ms},
		{with(JitterDecorrelated), 1, 0, randMid, 20 * ms},               // [10, 30)
		{with(JitterDecorrelated), 7, 20 * ms, randMid, 35 * ms},         // [10, 60)
		{with(JitterDecorrelated), 7, 90 * ms, randMid, 55 * ms},         // [10, 100) capped
		{Backoff{Jitter: JitterNone}, 1, 0, randLow, DefaultBackoffBase}, // zero value
		{Backoff{Jitter: JitterNone}, 30, 0, randLow, DefaultBackoffMax},
	}
	for i, tt := range tests {
		if got := tt.b.Delay(tt.retry, tt.prev, tt.r); got != tt.want {
			t.Errorf("%d: %v Delay(%d, %v) = %v, want %v", i, tt.b.Jitter, tt.retry, tt.prev, got, tt.want)
		}
	}
}

func TestBackoffBounds(t *testing.T) {
	src := rand.NewPCG(1, 2)
	for _, j := range []Jitter{JitterFull, JitterEqual, JitterDecorrelated} {
		b := Backoff{Base: 5 * time.Millisecond, Max: 200 * time.Millisecond, Jitter: j}
		prev := time.Duration(0)
		var sum time.Duration
		const n = 2000
		for i := range n {
			retry := i%8 + 1
			d := b.Delay(retry, prev, src)
			lo, hi := time.Duration(0), min(b.Base<<(retry-1), b.Max)
			switch j {
			case JitterEqual:
				lo = hi / 2
			case JitterDecorrelated:
				lo, hi = b.Base, min(3*max(prev, b.Base), b.Max)
			}
			if d < lo || d > hi {
				t.Fatalf("%v retry %d prev %v: delay %v outside [%v, %v]", j, retry, prev, d, lo, hi)
			}
			prev = d
			sum += d
		}
		t.Logf("%v jitter: mean delay %v over %d draws", j, sum/n, n)
	}
}

func TestBackoffValidate(t *testing.T) {
	bad := []Backoff{
		{Base: -1},
		{Base: time.Second, Max: time.Millisecond},
		{Multiplier: 0.5},
		{Jitter: JitterNone + 1},
	}
	for i, b := range bad {
		if err := b.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%d: Validate(%+v) = %v", i, b, err)
		}
	}
	if err := (Backoff{}).Validate(); err != nil {
		t.Errorf("zero value: %v", err)
	}
	if err := (Backoff{Base: 2 * time.Second}).Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Base above default Max accepted: %v", err)
	}
}
