package ringq

// Slots exposes the backing array so tests can check that vacated slots are
// zeroed.
func Slots[T any](r *Ring[T]) []T { return r.buf }

// Head exposes the index of the head slot in the backing array.
func Head[T any](r *Ring[T]) int { return r.head }

// RoundCapacity exposes the capacity rounding without allocating.
var RoundCapacity = roundCapacity
