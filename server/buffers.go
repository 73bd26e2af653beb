package server

import (
	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/ringq"
)

// Output buffers. Copied writes on the loop land in fixed-size chunks from a
// per-loop free list, appended to the tail chunk while it has room (so a
// burst of small replies becomes one iovec), and each chunk goes back to the
// list when ioflush releases its segment. Idle connections hold no chunk and
// no out-queue; steady state allocates nothing.
const (
	// outChunkBytes is the size of one output chunk: large enough that a
	// turn's replies to one connection take a few iovecs, small enough that
	// a connection with little queued output wastes little.
	outChunkBytes = 16 << 10
	// bigWriteBytes: a copied write larger than this takes one pooled
	// segment (bytebufferpool) instead of a run of chunks.
	bigWriteBytes = 64 << 10
	// encodeSlackBytes is the room WriteFrame leaves beyond the frame for
	// the codec's header; a codec that needs more takes the slow path.
	encodeSlackBytes = 64
	// maxOutSegments caps the segments in one out-queue (a 128-slot ring is
	// 5 KiB). Coalescing makes a segment per chunk, so only WriteOwned
	// messages and off-loop writes use one segment each.
	maxOutSegments = 128
	// maxFreeChunks and maxFreeOutQueues bound the per-loop free lists; what
	// a burst allocates beyond them goes back to the garbage collector.
	maxFreeChunks    = 256
	maxFreeOutQueues = 1024
)

// chunk is a loop-owned output buffer; its Free func (bound once) returns it
// to the loop's free list when ioflush releases the segment that holds it.
type chunk struct {
	b    []byte // len: bytes filled; cap: outChunkBytes
	pool *chunkPool
	free func()
	next *chunk
}

func (ch *chunk) room() int { return cap(ch.b) - len(ch.b) }

func (ch *chunk) release() {
	ch.b = ch.b[:0]
	p := ch.pool
	if p.n < maxFreeChunks {
		ch.next = p.head
		p.head = ch
		p.n++
	}
}

// chunkPool is a loop's free list of chunks; not safe for concurrent use.
type chunkPool struct {
	head *chunk
	n    int
}

func (p *chunkPool) get() *chunk {
	if ch := p.head; ch != nil {
		p.head = ch.next
		ch.next = nil
		p.n--
		return ch
	}
	ch := &chunk{b: make([]byte, 0, outChunkBytes), pool: p}
	ch.free = ch.release
	return ch
}

// outQueue is a connection's out-queue: segments for ioflush and, in step
// with them, how many messages end in each segment (so the message budget is
// released exactly when a message's last byte is written).
type outQueue struct {
	segs ringq.Ring[ioflush.Segment]
	msgs ringq.Ring[int32]
	next *outQueue
}

// inClasses are the size classes of the per-loop free lists for connection
// input buffers (a partial frame, or frames held back by backpressure).
var inClasses = [...]int{1 << 10, 4 << 10, 16 << 10, 64 << 10}

const maxFreeInPerClass = 64

// inPool recycles input buffers by size class; not safe for concurrent use.
type inPool struct {
	free [len(inClasses)][][]byte
}

// get returns an empty buffer with capacity at least n.
func (p *inPool) get(n int) []byte {
	for i, size := range inClasses {
		if n <= size {
			if f := p.free[i]; len(f) > 0 {
				b := f[len(f)-1]
				f[len(f)-1] = nil
				p.free[i] = f[:len(f)-1]
				return b[:0]
			}
			return make([]byte, 0, size)
		}
	}
	return make([]byte, 0, n)
}

// put recycles b if it is one of the classes and the list has room.
func (p *inPool) put(b []byte) {
	c := cap(b)
	for i, size := range inClasses {
		if c == size {
			if p.free[i] == nil {
				p.free[i] = make([][]byte, 0, maxFreeInPerClass)
			}
			if len(p.free[i]) < maxFreeInPerClass {
				p.free[i] = append(p.free[i], b[:0])
			}
			return
		}
	}
}
