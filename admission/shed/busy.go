package shed

import "time"

// The overload judgement (docs/OVERLOAD.md, "The busy window").
const (
	// BusyWindow is the shortest window the judgement is made over; a
	// window is max(BusyWindow, busyPerCap·C).
	BusyWindow = int64(100 * time.Millisecond)
	busyPerCap = 5
	// busyPermille: a window busy at least 95% of the time makes a loop
	// overloaded; coolPermille: once overloaded, it stays so until a
	// window busy less than 85% of it. The gap is hysteresis: a shedding
	// loop whose clients pause for a few milliseconds must not read "not
	// overloaded" and admit frames up to L for a whole window.
	busyPermille = 950
	coolPermille = 850
)

// Busy judges whether a loop is overloaded: whether its queue (its sockets
// and its turn) has not been empty for long. An edge-triggered loop sleeps
// only with every socket drained, so the time it sleeps is the time its
// queue was empty. Make one with NewBusy; it is not safe for concurrent
// use.
type Busy struct {
	idle    int64 // time asleep in the current window
	winEnd  int64 // end of the current window
	awakeAt int64 // when the loop last woke from a sleep: the start of its busy period
	hot     bool  // the last window was busy
}

// NewBusy starts the first window at now, not overloaded.
func NewBusy(now int64) Busy { return Busy{awakeAt: now, winEnd: now + BusyWindow} }

// Slept records a sleep of d nanoseconds that ended at now.
func (b *Busy) Slept(now, d int64) {
	b.idle += max(0, d)
	b.awakeAt = now
}

// Judge closes the window when it is due at now, judging it busy or not,
// and starts the next, of max(BusyWindow, 5·c) for the cap c (C). closed
// reports that it did; busy is then the time the loop was awake in the
// window it closed.
func (b *Busy) Judge(now, c int64) (busy int64, closed bool) {
	if now < b.winEnd {
		return 0, false
	}
	w := max(BusyWindow, busyPerCap*c)
	span := now - (b.winEnd - w) // the window, stretched by a long sleep at its end
	need := int64(busyPermille)
	if b.hot {
		need = coolPermille
	}
	busy = max(0, span-b.idle)
	b.hot = busy*1000 >= need*span
	b.idle, b.winEnd = 0, now+w
	return busy, true
}

// WindowEnd returns when the current window is judged.
func (b *Busy) WindowEnd() int64 { return b.winEnd }

// Overloaded reports the last window's judgement.
func (b *Busy) Overloaded() bool { return b.hot }

// Standing reports whether a frame at now gets the caps of a standing
// queue: the loop is judged overloaded, or it has not slept for longer
// than the long cap l. A queue not empty for longer than L stands whatever
// the last window said (adaptive LIFO's rule: the short timeout once the
// queue has not been empty for a while), so a window judged calm while
// the clients paused does not let frames queue up to L until it closes.
func (b *Busy) Standing(now, l int64) bool { return b.hot || now-b.awakeAt > l }

// Set forces the judgement; for tests that start from an overloaded loop.
func (b *Busy) Set(overloaded bool) { b.hot = overloaded }
