package server

// timer is one deadline in a loop's timer heap. Every connection embeds
// exactly one; the loop re-arms it only when it fires (deadlines are checked
// lazily against per-turn progress stamps, see deadline.go), so
// the data path does no timer work.
type timer struct {
	at  int64 // deadline, monotonic nanoseconds of the loop clock
	idx int   // position in the heap, -1 when not queued
	c   *Conn // owner; nil in tests
}

// queued reports whether t is in a heap.
func (t *timer) queued() bool { return t.idx >= 0 }

// timerHeap is a 4-ary min-heap of timers ordered by deadline. A 4-ary heap
// is half as deep as a binary one and its four children share a cache line
// of pointers; BenchmarkTimers compares it with a hashed wheel (see
// timer_test.go and the package doc). Not safe for concurrent use: each loop
// owns one.
type timerHeap struct {
	h       []heapEntry
	firesAt int64 // when the timerfd fires next (0: not armed; deadline.go)
}

// heapEntry keeps the deadline beside the pointer so sifting compares
// without dereferencing timers scattered over the heap.
type heapEntry struct {
	at int64
	t  *timer
}

const heapArity = 4

func (th *timerHeap) len() int { return len(th.h) }

// peek returns the earliest timer, or nil.
func (th *timerHeap) peek() *timer {
	if len(th.h) == 0 {
		return nil
	}
	return th.h[0].t
}

// set queues t at deadline at, or moves it there if already queued.
func (th *timerHeap) set(t *timer, at int64) {
	if !t.queued() {
		t.at = at
		t.idx = len(th.h)
		th.h = append(th.h, heapEntry{at, t})
		th.up(t.idx)
		return
	}
	old := t.at
	t.at = at
	th.h[t.idx].at = at
	if at < old {
		th.up(t.idx)
	} else {
		th.down(t.idx)
	}
}

// remove takes t out of the heap; a timer that is not queued is left alone.
func (th *timerHeap) remove(t *timer) {
	i := t.idx
	if i < 0 {
		return
	}
	last := len(th.h) - 1
	if i != last {
		th.swap(i, last)
	}
	th.h[last] = heapEntry{}
	th.h = th.h[:last]
	t.idx = -1
	if i != last {
		th.down(i)
		th.up(i)
	}
}

// popDue removes and returns the earliest timer if its deadline is at or
// before now, else nil.
func (th *timerHeap) popDue(now int64) *timer {
	if len(th.h) == 0 || th.h[0].at > now {
		return nil
	}
	t := th.h[0].t
	th.remove(t)
	return t
}

func (th *timerHeap) swap(i, j int) {
	h := th.h
	h[i], h[j] = h[j], h[i]
	h[i].t.idx = i
	h[j].t.idx = j
}

func (th *timerHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / heapArity
		if th.h[p].at <= th.h[i].at {
			return
		}
		th.swap(i, p)
		i = p
	}
}

func (th *timerHeap) down(i int) {
	n := len(th.h)
	for {
		first := i*heapArity + 1
		if first >= n {
			return
		}
		m := first
		for c := first + 1; c < first+heapArity && c < n; c++ {
			if th.h[c].at < th.h[m].at {
				m = c
			}
		}
		if th.h[i].at <= th.h[m].at {
			return
		}
		th.swap(i, m)
		i = m
	}
}
