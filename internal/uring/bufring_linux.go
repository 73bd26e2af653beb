//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package uring

import (
	"errors"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BufRing is a provided buffer ring (IORING_REGISTER_PBUF_RING): a group of
// equal-sized buffers the kernel picks from when a recv completes, so memory
// for reads is shared by all connections instead of held by each. Both the
// ring and the buffers are anonymous mappings outside the Go heap.
//
// Every buffer is either the kernel's (in the ring, which may write into it
// at any time) or lent to the application (named by a completion and handed
// out by Take). Only a lent buffer may be read, and Recycle is the only way
// back; BufRing tracks the state so a double recycle or a stray id is an
// error, never a buffer the kernel and the application share.
//
// A BufRing belongs to its Ring's goroutine and is not safe for concurrent
// use. Ring.Close closes it.
type BufRing struct {
	r       *Ring
	group   uint16
	size    int
	mask    uint16
	ringMem []byte // struct io_uring_buf[entries]; the tail overlays entry 0's resv
	bufMem  []byte
	entries []bufRingEntry
	tail    uint16 // local copy of the published tail
	bid0    uint16 // entry 0's bid, republished with the tail (same 32-bit word)
	lent    []uint64
	nLent   int
	closed  bool
}

// NewBufRing registers a buffer ring for group with entries buffers (a power
// of two up to 32768) of size bytes each, all given to the kernel.
func (r *Ring) NewBufRing(group uint16, entries int, size int) (*BufRing, error) {
	if r.closed {
		return nil, ErrClosed
	}
	if entries <= 0 || entries > maxBufRingEntries || entries&(entries-1) != 0 || size <= 0 || size > 1<<31-1 {
		return nil, errors.Join(ErrBadConfig, errors.New("BufRing entries must be a power of two up to 32768 and size positive"))
	}
	page := os.Getpagesize()
	ringBytes := (entries*int(unsafe.Sizeof(bufRingEntry{})) + page - 1) &^ (page - 1)
	b := &BufRing{r: r, group: group, size: size, mask: uint16(entries - 1), lent: make([]uint64, (entries+63)/64)}
	var err error
	if b.ringMem, err = mapAnon(ringBytes, true); err != nil {
		return nil, err
	}
	if b.bufMem, err = mapAnon(entries*size, false); err != nil { // resident only as the kernel fills buffers
		b.unmap()
		return nil, err
	}
	b.entries = unsafe.Slice((*bufRingEntry)(unsafe.Pointer(&b.ringMem[0])), entries)
	reg := bufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&b.ringMem[0]))), ringEntries: uint32(entries), bgid: group}
	if err := r.register(registerPbufRing, unsafe.Pointer(&reg), 1); err != nil {
		b.unmap()
		return nil, err
	}
	for i := range entries {
		b.put(uint16(i))
	}
	b.publish()
	r.bufRings = append(r.bufRings, b)
	return b, nil
}

// mapAnon maps n bytes of anonymous memory, faulted in at once when
// populate is set.
func mapAnon(n int, populate bool) ([]byte, error) {
	flags := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	if populate {
		flags |= unix.MAP_POPULATE
	}
	m, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	return m, nil
}

// Group returns the buffer group id that recv submissions name.
func (b *BufRing) Group() uint16 { return b.group }

// Size returns the size of each buffer in bytes.
func (b *BufRing) Size() int { return b.size }

// Entries returns the number of buffers.
func (b *BufRing) Entries() int { return len(b.entries) }

// Lent returns how many buffers the application holds (taken, not yet
// recycled); the kernel has Entries() - Lent() to choose from.
func (b *BufRing) Lent() int { return b.nLent }

// Take claims the buffer a completion carries and returns its id and the
// received bytes, which stay valid (and untouched by the kernel) until
// Recycle(id). It returns ErrNoBuffer when c carries none, ErrBufferState
// when the buffer is not the kernel's to give.
func (b *BufRing) Take(c CQE) (id uint16, data []byte, err error) {
	if b.closed {
		return 0, nil, ErrClosed
	}
	if !c.HasBuffer() {
		return 0, nil, ErrNoBuffer
	}
	id = c.BufferID()
	if int(id) >= len(b.entries) || b.isLent(id) {
		return id, nil, ErrBufferState
	}
	b.lent[id/64] |= 1 << (id % 64)
	b.nLent++
	n := max(0, min(int(c.Res), b.size))
	return id, b.buf(id)[:n:n], nil
}

// Buf returns the whole buffer id, for a caller that holds it (Take).
func (b *BufRing) Buf(id uint16) []byte { return b.buf(id) }

func (b *BufRing) buf(id uint16) []byte {
	off := int(id) * b.size
	return b.bufMem[off : off+b.size : off+b.size]
}

func (b *BufRing) isLent(id uint16) bool { return b.lent[id/64]&(1<<(id%64)) != 0 }

// Recycle gives a lent buffer back to the kernel, which may write into it
// from then on; the caller must not touch it (a send from it must have
// completed). It makes no system call and does not allocate.
func (b *BufRing) Recycle(id uint16) error {
	if b.closed {
		return ErrClosed
	}
	if int(id) >= len(b.entries) || !b.isLent(id) {
		return ErrBufferNotLent
	}
	b.lent[id/64] &^= 1 << (id % 64)
	b.nLent--
	b.put(id)
	b.publish()
	return nil
}

// put writes buffer id into the next ring slot without publishing it.
func (b *BufRing) put(id uint16) {
	i := b.tail & b.mask
	e := &b.entries[i]
	e.addr = uint64(uintptr(unsafe.Pointer(&b.bufMem[int(id)*b.size])))
	e.len = uint32(b.size)
	e.bid = id
	if i == 0 {
		b.bid0 = id
	}
	b.tail++
}

// publish makes the slots written by put visible to the kernel. The tail is
// a 16-bit field sharing a 32-bit word with entry 0's bid, and sync/atomic
// has no 16-bit store, so the whole word is stored, with entry 0's bid
// rewritten to the value it already has (only we write the ring; the kernel
// reads it). The store orders the entry writes before the tail, as the
// kernel's smp_load_acquire of the tail expects.
func (b *BufRing) publish() {
	word := (*uint32)(unsafe.Pointer(&b.ringMem[bufRingTailWordOffset]))
	atomic.StoreUint32(word, uint32(b.bid0)|uint32(b.tail)<<16)
}

// close unregisters the group (the kernel can pick no buffer afterwards)
// and unmaps ring and buffers.
func (b *BufRing) close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	reg := bufReg{bgid: b.group}
	if err := b.r.register(unregisterPbufRing, unsafe.Pointer(&reg), 1); err != nil {
		// Still registered: the kernel may pick a buffer and write into it
		// until the ring is gone, so the memory stays mapped (leaked)
		// rather than risk the range being reused by someone else.
		b.entries = nil
		return err
	}
	b.unmap()
	return nil
}

// Close unregisters the buffer ring and unmaps it. In-flight recvs of its
// group complete with -ENOBUFS afterwards. Buffers lent out are invalid
// after Close. On the wrong thread of a SINGLE_ISSUER ring the kernel
// refuses to unregister: Close returns an error matching ErrWrongThread and
// leaves the memory mapped.
func (b *BufRing) Close() error {
	if b.closed {
		return nil
	}
	for i, x := range b.r.bufRings {
		if x == b {
			b.r.bufRings = append(b.r.bufRings[:i], b.r.bufRings[i+1:]...)
			break
		}
	}
	return b.close()
}

func (b *BufRing) unmap() {
	if b.bufMem != nil {
		_ = unix.Munmap(b.bufMem)
		b.bufMem = nil
	}
	if b.ringMem != nil {
		_ = unix.Munmap(b.ringMem)
		b.ringMem = nil
	}
	b.entries = nil
}
