package http1

import (
	"sync"
	"time"
	"unsafe"
)

// Scratch space sizes.
const (
	// initOutBytes is the initial response buffer: a plaintext response
	// with its head is about 130 bytes.
	initOutBytes = 512
	// keepOutBytes bounds the response buffer kept for reuse; one that grew
	// past it (a large body) is dropped, so a burst of large responses does
	// not pin memory.
	keepOutBytes = 64 << 10
	// maxClockReuse bounds how many consecutive frames may share one clock
	// reading (see scratch.clock).
	maxClockReuse = 1024
)

// scratch is the per-request working space of Server and
// ServerCodec.AppendReject: a Request (about 3 KiB), the response buffer,
// the Date cache and the clock reading of the current read batch. It is
// pooled rather than kept per connection so that an idle connection holds
// none of it; sync.Pool keeps one per P, which under the engine (one loop
// goroutine per locked thread) means in practice one per loop, reused
// without contention.
type scratch struct {
	req   Request
	out   []byte
	dates DateCache

	now     time.Time
	lastEnd uintptr // address just past the previous frame
	reuse   int     // frames that used now since it was read
}

var scratchPool = sync.Pool{New: func() any {
	return &scratch{out: make([]byte, 0, initOutBytes)}
}}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func putScratch(s *scratch) {
	if cap(s.out) > keepOutBytes {
		s.out = make([]byte, 0, initOutBytes)
	}
	s.out = s.out[:0]
	scratchPool.Put(s)
}

// clock returns the time for frame's response, reading clock (nil:
// time.Now) once per read batch rather than once per request. The engine
// hands a handler the frames of one read back to back, each starting where
// the previous one ended in the loop's buffer; a frame that starts anywhere
// else begins a new batch and reads the clock. A coincidental match (a new
// buffer starting exactly where the last frame ended) would reuse a stale
// reading, so a reading serves at most maxClockReuse frames. Read once per
// batch, the Date field is at most one batch late, far under its one-second
// resolution.
func (s *scratch) clock(frame []byte, clock func() time.Time) time.Time {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(frame)))
	if start == 0 || start != s.lastEnd || s.reuse >= maxClockReuse {
		if clock == nil {
			s.now = time.Now()
		} else {
			s.now = clock()
		}
		s.reuse = 0
	}
	s.reuse++
	s.lastEnd = start + uintptr(len(frame))
	return s.now
}
