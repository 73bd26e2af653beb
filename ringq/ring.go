package ringq

import "math/bits"

// MaxCapacity is the largest capacity a Ring can have (2^30 elements). New and
// Init clamp larger requests to it: a queue that large is a configuration
// mistake, and clamping keeps construction free of panics from make.
const MaxCapacity = 1 << 30

// Ring is a fixed-capacity FIFO queue of T whose capacity is a power of two.
//
// The zero Ring has capacity 0: Push always reports full and Pop always
// reports empty until Init is called. A Ring never allocates after New or
// Init. It is not safe for concurrent use.
type Ring[T any] struct {
	buf  []T // len(buf) is the capacity, a power of two (or 0)
	mask int // len(buf)-1
	head int // index in buf of the oldest element
	n    int // number of elements queued
}

// New returns a Ring whose capacity is capacity rounded up to a power of two,
// at least 1 and at most MaxCapacity.
func New[T any](capacity int) *Ring[T] {
	r := new(Ring[T])
	r.Init(capacity)
	return r
}

// Init prepares r, typically a Ring embedded by value, with capacity rounded
// up to a power of two, at least 1 and at most MaxCapacity. Any elements
// already in r are discarded and its previous storage is dropped.
func (r *Ring[T]) Init(capacity int) {
	c := roundCapacity(capacity)
	*r = Ring[T]{buf: make([]T, c), mask: c - 1}
}

// roundCapacity returns the power of two that New and Init use for capacity.
func roundCapacity(capacity int) int {
	if capacity <= 1 {
		return 1
	}
	if capacity >= MaxCapacity {
		return MaxCapacity
	}
	return 1 << bits.Len(uint(capacity-1))
}

// Push appends v at the tail. It reports false, leaving r unchanged, when r is
// full; a Ring never grows.
func (r *Ring[T]) Push(v T) bool {
	if r.n == len(r.buf) {
		return false
	}
	r.buf[(r.head+r.n)&r.mask] = v
	r.n++
	return true
}

// Pop removes and returns the head. It reports false when r is empty. The
// vacated slot is zeroed so that r no longer references what it held.
func (r *Ring[T]) Pop() (T, bool) {
	var zero T
	if r.n == 0 {
		return zero, false
	}
	v := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = (r.head + 1) & r.mask
	r.n--
	return v, true
}

// Peek returns the head without removing it. It reports false when r is
// empty.
func (r *Ring[T]) Peek() (T, bool) {
	return r.PeekAt(0)
}

// PeekAt returns the i-th element from the head (0 is the head) without
// removing it. It reports false when i is not in [0, Len()).
func (r *Ring[T]) PeekAt(i int) (T, bool) {
	if i < 0 || i >= r.n {
		var zero T
		return zero, false
	}
	return r.buf[(r.head+i)&r.mask], true
}

// At returns a pointer to the i-th element from the head (0 is the head), or
// nil when i is not in [0, Len()). The pointer lets the caller modify the
// element in place; it stays valid until that element is popped or r is Reset
// or re-Initialised. After that it points at a slot that may hold another
// element.
func (r *Ring[T]) At(i int) *T {
	if i < 0 || i >= r.n {
		return nil
	}
	return &r.buf[(r.head+i)&r.mask]
}

// Len returns the number of queued elements.
func (r *Ring[T]) Len() int { return r.n }

// Cap returns the fixed capacity: a power of two, or 0 for the zero Ring.
func (r *Ring[T]) Cap() int { return len(r.buf) }

// Full reports whether Push would fail. The zero Ring is always full.
func (r *Ring[T]) Full() bool { return r.n == len(r.buf) }

// Empty reports whether Pop would fail.
func (r *Ring[T]) Empty() bool { return r.n == 0 }

// Reset empties r and zeroes every slot; the capacity is kept and nothing is
// allocated.
func (r *Ring[T]) Reset() {
	clear(r.buf)
	r.head = 0
	r.n = 0
}
