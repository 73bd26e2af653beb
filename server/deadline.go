package server

import "math"

// Deadlines. Each loop has one timerfd armed to its earliest deadline and a
// heap of timers, one per connection (timer.go). The data path only stamps
// progress times (lastActive, frameStart, progressAt) with the loop's
// per-turn clock; a connection's timer is re-armed only when it fires.

// timerPhase closes connections whose deadline passed and re-arms the rest.
func (l *loop) timerPhase() {
	for t := l.timers.popDue(l.now); t != nil; t = l.timers.popDue(l.now) {
		c := t.c
		l.st[cTimerFires]++
		if cause := c.expired(); cause != nil {
			l.closeNow(c, cause)
			continue
		}
		c.armConn()
	}
	if l.lis.pausedUntil != 0 && l.now >= l.lis.pausedUntil {
		l.lis.pausedUntil = 0 // controlPhase puts the listener back
	}
}

// expired returns the deadline c has passed, if any.
func (c *Conn) expired() error {
	l := c.loop
	cfg := l.cfg
	switch {
	case enabled(cfg.IdleTimeout) && l.now-c.lastActive >= int64(cfg.IdleTimeout):
		return ErrIdleTimeout
	case enabled(cfg.FrameTimeout) && c.flags&fPartial != 0 && l.now-c.frameStart >= int64(cfg.FrameTimeout):
		return ErrFrameTimeout
	case enabled(cfg.WriteStallTimeout) && c.outBytes > 0 && l.now-c.progressAt >= int64(cfg.WriteStallTimeout):
		return ErrWriteStall
	}
	return nil
}

// armConn sets c's one timer to the earliest moment a deadline could pass
// given what is known now. A condition not in force (no partial frame,
// nothing queued) counts as if it began now, so the timer fires at least
// once per shortest timeout and a condition that begins later is caught at
// its exact deadline: the fire that sees it re-arms for it. The data path
// only stamps lastActive, frameStart and progressAt; it never touches the
// heap.
func (c *Conn) armConn() {
	l := c.loop
	cfg := l.cfg
	next := int64(math.MaxInt64)
	if enabled(cfg.IdleTimeout) {
		next = c.lastActive + int64(cfg.IdleTimeout)
	}
	if enabled(cfg.FrameTimeout) {
		from := l.now
		if c.flags&fPartial != 0 {
			from = c.frameStart
		}
		next = min(next, from+int64(cfg.FrameTimeout))
	}
	if enabled(cfg.WriteStallTimeout) {
		from := l.now
		if c.outBytes > 0 {
			from = c.progressAt
		}
		next = min(next, from+int64(cfg.WriteStallTimeout))
	}
	if next == math.MaxInt64 {
		return
	}
	l.timers.set(&c.tm, next)
}

// armTimerfd points the timerfd at the earliest deadline: connection
// timers, the EMFILE retry, the drain deadline, the gate's sampling while
// it is closed, and what the admission stage has due (stageAt). A timerfd armed
// earlier than needed is left alone: it fires, finds nothing due and is
// re-armed, which is cheaper than a syscall every time the earliest
// deadline moves later.
func (l *loop) armTimerfd(stageAt int64) {
	next := stageAt
	if t := l.timers.peek(); t != nil {
		next = min(next, t.at)
	}
	if l.lis.pausedUntil != 0 {
		next = min(next, l.lis.pausedUntil)
	}
	if d := l.e.drainDeadline.Load(); l.draining && d != 0 {
		next = min(next, d)
	}
	next = min(next, l.lis.wakeAt(l.e, l.now, l.draining))
	if next == math.MaxInt64 || l.timers.firesAt > l.now && l.timers.firesAt <= next {
		return
	}
	if err := l.p.ArmTimer(next - l.now); err != nil {
		l.e.fail(err)
		return
	}
	l.timers.firesAt = next
}
