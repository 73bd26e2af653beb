//go:build linux

package bench

import (
	"testing"
	"time"
)

// newTestWorker builds an open-loop worker over conns that have no sockets:
// issueDue only queues, so the scheduler can be tested with time passed in.
func newTestWorker(nConns, capPerConn int, rate float64, startNanos, warmEnd, end int64) *worker {
	w := &worker{
		codec:        CodecLength,
		size:         FixedSize(64),
		lateTolNanos: int64(time.Millisecond),
		warmEnd:      warmEnd,
		endNanos:     end,
		tally:        newTally(),
	}
	w.sched = NewOpenSchedule(startNanos, rate)
	w.sched.StopAt(end)
	for i := 0; i < nConns; i++ {
		w.conns = append(w.conns, &conn{fd: -1, q: newInflight(capPerConn)})
	}
	return w
}

func TestIssueDueLateAndMissed(t *testing.T) {
	const ms = int64(time.Millisecond)
	// 1000/s over 2 connections with room for 2 requests each; measured
	// window from 0 to 100 ms.
	w := newTestWorker(2, 2, 1000, 0, 0, 100*ms)

	// At 5 ms, sends 0..5 (intended at 0..5 ms) are due. Round-robin: conn 0
	// gets 0, 2, 4; conn 1 gets 1, 3, 5; each takes two and misses the third.
	// Sends 0..3 are more than 1 ms late; 4 is exactly 1 ms late (not late); 5
	// is on time.
	w.issueDue(5 * ms)
	if w.intended != 6 || w.late != 4 || w.missed != 2 {
		t.Fatalf("intended %d late %d missed %d, want 6 4 2", w.intended, w.late, w.missed)
	}
	for i, want := range [][]int64{{0, 2 * ms}, {1 * ms, 3 * ms}} {
		c := w.conns[i]
		if c.q.len() != len(want) || c.owed != len(want) {
			t.Fatalf("conn %d: %d queued, %d owed, want %d", i, c.q.len(), c.owed, len(want))
		}
		for j, at := range want {
			if got := c.q.at(j).intendedNanos; got != at {
				t.Fatalf("conn %d request %d intended at %d, want %d (latency runs from the intended time)", i, j, got, at)
			}
		}
	}
	if len(w.dirty) != 2 {
		t.Fatalf("%d dirty connections, want 2", len(w.dirty))
	}
	// Nothing new is due at the same instant.
	w.issueDue(5 * ms)
	if w.intended != 6 {
		t.Fatalf("intended %d after a second call at the same time", w.intended)
	}
	// The send lag histogram holds one value per intended send.
	if w.lagHist.TotalCount() != 6 {
		t.Fatalf("lag histogram count %d, want 6", w.lagHist.TotalCount())
	}
}

func TestIssueDueDeadConnectionMisses(t *testing.T) {
	const ms = int64(time.Millisecond)
	w := newTestWorker(2, 8, 1000, 0, 0, 100*ms)
	w.conns[1].dead = true
	w.issueDue(3 * ms) // sends 0..3: conn 0 gets 0 and 2, dead conn 1 misses 1 and 3
	if w.missed != 2 || w.conns[0].q.len() != 2 {
		t.Fatalf("missed %d, conn 0 queued %d; want 2 and 2", w.missed, w.conns[0].q.len())
	}
}

func TestIssueDueOutsideWindowNotCounted(t *testing.T) {
	const ms = int64(time.Millisecond)
	// Warm-up until 10 ms, window ends at 20 ms.
	w := newTestWorker(1, 64, 1000, 0, 10*ms, 20*ms)
	w.issueDue(9 * ms) // sends 0..9, all in the warm-up: sent, not counted
	if w.intended != 0 || w.late != 0 || w.missed != 0 {
		t.Fatalf("warm-up sends counted: intended %d late %d missed %d", w.intended, w.late, w.missed)
	}
	if w.conns[0].q.len() != 10 {
		t.Fatalf("warm-up sends not queued: %d", w.conns[0].q.len())
	}
	w.issueDue(50 * ms) // sends 10..19 (the schedule stops at 20 ms), all late
	if w.intended != 10 || w.late != 10 {
		t.Fatalf("window sends: intended %d late %d, want 10 10", w.intended, w.late)
	}
}
