package resilience

import (
	"sync"
	"time"
)

// jumpClock is a fake Clock for single-goroutine tests: time moves only when
// the test advances it, and a timer fires at once by jumping the clock
// forward by its duration. Retrier.Do's timeline is thus exact.
type jumpClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func newJumpClock(start time.Time) *jumpClock { return &jumpClock{now: start} }

func (c *jumpClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *jumpClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *jumpClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.waits = append(c.waits, d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	c.mu.Unlock()
	return firedTimer{ch}
}

type firedTimer struct{ ch chan time.Time }

func (t firedTimer) C() <-chan time.Time { return t.ch }
func (t firedTimer) Stop() bool          { return false }

// stuckClock never fires its timers.
type stuckClock struct{ now time.Time }

func (c stuckClock) Now() time.Time                 { return c.now }
func (c stuckClock) NewTimer(d time.Duration) Timer { return firedTimer{make(chan time.Time)} }
