package admission

import (
	"math"
	"time"
)

// epoch anchors every internal timestamp. Policies store int64 nanoseconds
// since epoch computed with time.Time.Sub, so a time.Time that carries a
// monotonic reading (time.Now) is measured on the monotonic clock and a
// wall-clock step cannot make a limiter refuse everyone for an hour, while a
// time.Time without one (time.Unix in tests) is measured on the wall clock.
// Only differences between the times a caller passes matter.
var epoch = time.Now()

// nanos converts t to nanoseconds since epoch, saturating at ±292 years.
func nanos(t time.Time) int64 { return int64(t.Sub(epoch)) }

// nanFloat is a NaN for "no pressure value".
var nanFloat = math.NaN()
