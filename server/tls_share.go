package server

import (
	"context"
	"math"
	"sync"
	"time"
)

// The handshakes' share of the loops (docs/TLS.md#the-loops-share). A
// handshake computes only while it holds a CPU token (tlsPipe.acquire);
// on a machine where handshakes and loops share cores, the tokens bound
// how many compute at once but not what they take from a loop that has
// work. So while the loops serve established connections, a handshake's
// computing steps that overlap a loop with work (awake, or with events it
// has not collected) are charged to a budget refilled at
// Config.HandshakeShare of wall time per loop, and a handshake waits for
// the budget before its next step. A step that no loop wanted the core
// for is free: a server with spare time handshakes at full speed, light
// established traffic beside it or not.
//
// The demand is read where starvation cannot hide it: a loop that a
// handshake keeps from running is awake or has uncollected events, while
// its own turns (which it cannot take) would say nothing.

// estWindow is how long after a loop last read an established connection
// the handshakes count as sharing the loops with established traffic, and
// how long after its handshake a connection counts as established.
const estWindow = int64(100 * time.Millisecond)

// shareBurst is the budget's capacity per loop: the handshake time that
// may overlap the loops' work in one go before the share applies.
const shareBurst = int64(2 * time.Millisecond)

// shareWaitMin and shareWaitMax clamp one wait for the budget.
const (
	shareWaitMin = 100 * time.Microsecond
	shareWaitMax = 10 * time.Millisecond
)

// hsShare is the budget of handshake time that overlaps the loops' work.
type hsShare struct {
	mu     sync.Mutex
	budget int64   // nanoseconds; negative: handshakes wait
	at     int64   // engine clock of the last refill
	rate   float64 // budget per nanosecond: the share times the loops
	max    int64
	off    bool // HandshakeShare 1: no bound
}

func (t *tlsEngine) initShare(share float64, loops int) {
	s := &t.share
	s.rate = share * float64(loops)
	s.max = shareBurst * int64(loops)
	s.budget = s.max
	s.off = share >= 1
	t.estAt.Store(-estWindow) // no established traffic yet
}

// refill adds the share of the time since the last refill; s.mu held.
func (s *hsShare) refill(now int64) {
	if now > s.at {
		s.budget = min(s.max, s.budget+int64(float64(now-s.at)*s.rate))
		s.at = now
	}
}

// sharing reports whether a loop read established connections lately.
func (e *Engine) sharing(now int64) bool {
	return now-e.tls.estAt.Load() < estWindow
}

// loopsBusy reports whether any loop has work now: it is awake (running a
// turn, or woken and waiting for a CPU) or its poller holds events it has
// not collected.
func (e *Engine) loopsBusy() bool {
	for _, l := range e.loops {
		if l.awake.Load() || l.p.Pending() {
			return true
		}
	}
	return false
}

// waitShare returns when a handshake may take its next step: at once
// unless the loops serve established traffic and the budget is spent;
// then after the budget's deficit has refilled, or with ctx's error.
func (e *Engine) waitShare(ctx context.Context) error {
	s := &e.tls.share
	if s.off {
		return nil
	}
	var t *time.Timer
	for {
		now := e.clock()
		if !e.sharing(now) {
			return nil
		}
		s.mu.Lock()
		s.refill(now)
		deficit := -s.budget
		s.mu.Unlock()
		if deficit < 0 {
			return nil
		}
		d := min(max(time.Duration(float64(deficit)/s.rate), shareWaitMin), shareWaitMax)
		if t == nil {
			t = time.NewTimer(d)
			defer t.Stop()
		} else {
			t.Reset(d)
		}
		select {
		case <-t.C:
			e.tls.shareWait.Add(int64(d))
		case <-ctx.Done():
			e.tls.shareWait.Add(e.clock() - now)
			return ctx.Err()
		}
	}
}

// chargeShare charges a step that began at start (busy: a loop had work
// then) if a loop had work at either end while established traffic is
// being served: its duration times established traffic's share of the
// loops' reads, so a loop busy with the handshakes' own connections
// charges little.
func (e *Engine) chargeShare(start int64, busy bool) {
	s := &e.tls.share
	if s.off {
		return
	}
	now := e.clock()
	if !e.sharing(now) || !busy && !e.loopsBusy() {
		return
	}
	charge := int64(float64(now-start) * math.Float64frombits(e.tls.estShare.Load()))
	s.mu.Lock()
	s.refill(now)
	s.budget -= charge
	s.mu.Unlock()
}

// noteEstablished publishes, at most once a millisecond per loop, the
// share of its TLS reads since the last publication that were of
// established connections (completed their handshake estWindow ago or
// more), if any were. A connection that handshakes, sends a request and
// closes is the handshakes' own traffic, not what their share protects.
func (l *loop) noteEstablished(end int64) {
	if end-l.tlsPubAt < int64(time.Millisecond) || l.tlsReads == l.tlsPub[0] {
		return
	}
	all, est := l.tlsReads-l.tlsPub[0], l.tlsEstReads-l.tlsPub[1]
	l.tlsPub = [2]uint64{l.tlsReads, l.tlsEstReads}
	l.tlsPubAt = end
	if est > 0 {
		l.e.tls.estShare.Store(math.Float64bits(float64(est) / float64(all)))
		l.e.tls.estAt.Store(end)
	}
}
