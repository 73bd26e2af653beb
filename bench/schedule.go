package bench

import "math"

// OpenSchedule is the arrival schedule of an open-loop run: send k (k = 0, 1,
// 2, ...) is intended at Start + k/Rate, whatever happened to earlier sends.
// Latency is measured from the intended time, so a server (or a generator)
// that falls behind shows up in the latency instead of silently lowering the
// offered load (coordinated omission, as wrk2 corrects it).
//
// Time is passed in as monotonic nanoseconds. The zero value never has a send
// due; use NewOpenSchedule. An OpenSchedule is not safe for concurrent use.
type OpenSchedule struct {
	startNanos    int64
	nanosPerSend  float64
	takenSends    int64
	intendedLimit int64 // no send is intended at or after this time; 0 = unlimited
}

// NewOpenSchedule returns a schedule of ratePerSec sends a second starting at
// startNanos. ratePerSec must be positive.
func NewOpenSchedule(startNanos int64, ratePerSec float64) OpenSchedule {
	if ratePerSec <= 0 || math.IsNaN(ratePerSec) || math.IsInf(ratePerSec, 0) {
		return OpenSchedule{startNanos: math.MaxInt64, nanosPerSend: 1}
	}
	return OpenSchedule{startNanos: startNanos, nanosPerSend: 1e9 / ratePerSec}
}

// StopAt makes every send intended at or after endNanos never due: the run
// ends there.
func (s *OpenSchedule) StopAt(endNanos int64) { s.intendedLimit = endNanos }

// Intended returns the intended time of send k.
func (s *OpenSchedule) Intended(k int64) int64 {
	if s.startNanos == math.MaxInt64 {
		return math.MaxInt64
	}
	return s.startNanos + int64(float64(k)*s.nanosPerSend)
}

// Taken returns how many sends have been taken so far; it is also the index of
// the next send.
func (s *OpenSchedule) Taken() int64 { return s.takenSends }

// Next returns the intended time of the next send not yet taken, or
// math.MaxInt64 when the schedule has ended.
func (s *OpenSchedule) Next() int64 {
	t := s.Intended(s.takenSends)
	if s.intendedLimit != 0 && t >= s.intendedLimit {
		return math.MaxInt64
	}
	return t
}

// dueBy returns how many sends in total are intended at or before nowNanos
// (and before the stop time).
func (s *OpenSchedule) dueBy(nowNanos int64) int64 {
	if s.startNanos == math.MaxInt64 || nowNanos < s.startNanos {
		return 0
	}
	limit := nowNanos
	if s.intendedLimit != 0 && s.intendedLimit-1 < limit {
		limit = s.intendedLimit - 1
	}
	if limit < s.startNanos {
		return 0
	}
	// Estimate with floating point, then settle the edges exactly against
	// Intended so that Due and Intended never disagree.
	n := int64(float64(limit-s.startNanos)/s.nanosPerSend) + 1
	for n > 0 && s.Intended(n-1) > limit {
		n--
	}
	for s.Intended(n) <= limit {
		n++
	}
	return n
}

// Due returns how many sends are intended at or before nowNanos and not yet
// taken.
func (s *OpenSchedule) Due(nowNanos int64) int64 {
	d := s.dueBy(nowNanos) - s.takenSends
	if d < 0 {
		return 0
	}
	return d
}

// Take takes every send due at nowNanos and returns the index of the first one
// and how many were taken; send first+i was intended at Intended(first+i).
func (s *OpenSchedule) Take(nowNanos int64) (first, n int64) {
	first = s.takenSends
	n = s.Due(nowNanos)
	s.takenSends += n
	return first, n
}
