//go:build linux

package bench

import (
	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// tally is what one recorder of a run counts: an event loop of the raw
// generator, or a shard of the TLS generator's connections. Its owner
// serialises it (the loop's thread, or the shard's lock); collect merges
// the tallies after the run.
type tally struct {
	hist, lagHist *hdrhistogram.Histogram

	// Counters of the measured window.
	msgs, payloadBytes, intended, late, missed int64
	// Reject frames of the measured window, by reason, and their latency.
	rejects rejectCounts
	rejHist *hdrhistogram.Histogram
	// Counters of the whole run.
	allMsgs, dropped int64
	errs             errorCounts
	lost             int
	goAways          int // connections the server closed with a final refusal (goAway)
	reconnects       int // of those, dialled again (redial)
	firstErr         error
}

// newTally returns a tally with its histograms.
func newTally() tally {
	return tally{hist: NewLatencyHistogram(), lagHist: NewLatencyHistogram(), rejHist: NewLatencyHistogram()}
}

// completed records the response to r, read at now, in a run whose
// measured window is [warmEnd, end).
func (t *tally) completed(r request, now, warmEnd, end int64) {
	t.allMsgs++
	if now >= warmEnd && now < end {
		t.msgs++
		t.payloadBytes += int64(r.size)
		recordNanos(t.hist, now-r.intendedNanos)
	}
}

// rejectedAt records a refusal of r with reason index k, read at now:
// counted by reason and timed, not counted as a message.
func (t *tally) rejectedAt(r request, k int, now, warmEnd, end int64) {
	t.allMsgs++
	if now >= warmEnd && now < end {
		t.rejects[k]++
		recordNanos(t.rejHist, now-r.intendedNanos)
	}
}

// countError counts a failure by kind and keeps the first.
func (t *tally) countError(err error) {
	t.errs[classify(err)]++
	if t.firstErr == nil {
		t.firstErr = err
	}
}

// failed records a connection lost to err with dropped requests
// unanswered.
func (t *tally) failed(err error, dropped int64) {
	t.countError(err)
	t.lost++
	t.dropped += dropped
}

// sendIssued records an open-loop send intended at intended and issued at
// now: its lag, and whether it was late. It reports whether the send
// belongs to the measured window [warmEnd, end).
func (t *tally) sendIssued(intended, now, warmEnd, end, lateTol int64) bool {
	if intended < warmEnd || intended >= end {
		return false
	}
	t.intended++
	recordNanos(t.lagHist, now-intended)
	if now-intended > lateTol {
		t.late++
	}
	return true
}

// untakenMissed counts as missed the sends of s intended in the measured
// window before now that were never taken: the generator could not get to
// them before the end.
func (t *tally) untakenMissed(s *OpenSchedule, now, warmEnd, end int64) {
	end = min(now, end)
	for k := s.Taken(); ; k++ {
		at := s.Intended(k)
		if at >= end {
			break
		}
		if at >= warmEnd {
			t.intended++
			t.missed++
		}
	}
}
