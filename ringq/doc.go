// Package ringq provides Ring, a fixed-capacity first-in first-out queue.
//
// ringq owns one thing: a bounded FIFO whose capacity is a power of two fixed
// at construction, that reports full instead of growing, reports empty
// instead of blocking, and never allocates after New or Init. Popped and
// reset slots are zeroed so the garbage collector can free what they pointed
// at.
//
// ringq refuses to own synchronisation (a Ring is not safe for concurrent use;
// the event loop that owns it serialises access), blocking, growth, and any
// notion of what the elements mean (byte accounting, release of buffers and
// writev live in ioflush and server).
//
// Usage:
//
//	q := ringq.New[Segment](64) // capacity 64; never grows
//	if !q.Push(seg) {
//		// full: the caller decides (reject, shed, close)
//	}
//	for i := 0; i < q.Len(); i++ {
//		s := q.At(i) // pointer into the ring, valid until popped or Reset
//		_ = s
//	}
//	seg, ok := q.Pop() // the vacated slot is zeroed
//
// A Ring may be embedded by value and prepared with Init:
//
//	type conn struct{ out ringq.Ring[Segment] }
//	c.out.Init(64)
package ringq
