//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package uring

import "sync/atomic"

// Ready returns how many completions wait in the completion queue. Under
// FeatDeferTaskrun the kernel posts completions only inside Submit or
// SubmitAndWait.
func (r *Ring) Ready() int {
	if r.closed {
		return 0
	}
	return int(atomic.LoadUint32(r.cqTail) - *r.cqHead)
}

// PeekBatch copies up to len(dst) ready completions into dst, oldest first,
// and returns how many it copied. It does not consume them: Advance does, and
// must follow before the next PeekBatch sees new ones. It makes no system
// call and does not allocate.
func (r *Ring) PeekBatch(dst []CQE) int {
	if r.closed {
		return 0
	}
	head := *r.cqHead // written only by us
	n := int(atomic.LoadUint32(r.cqTail) - head)
	n = min(n, len(dst))
	for i := range n {
		dst[i] = r.cqes[(head+uint32(i))&r.cqMask]
	}
	return n
}

// Advance consumes n completions, giving their slots back to the kernel. n
// must not exceed what PeekBatch returned.
func (r *Ring) Advance(n int) {
	if n <= 0 || r.closed {
		return
	}
	atomic.StoreUint32(r.cqHead, *r.cqHead+uint32(n))
}
