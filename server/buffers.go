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
	// outChunkBytes is the size of one output chunk: a turn's replies to
	// one connection usually fit in one (16 pipelined 64-byte replies take
	// 1 KiB), and a turn that makes many connections dirty at once (up to
	// MaxEventsPerWait) holds one chunk each until the flush, so the size is
	// also the per-connection working set of a busy turn.
	outChunkBytes = 8 << 10
	// bigWriteBytes: a copied write larger than this takes one pooled
	// segment (bytebufferpool) instead of a run of chunks.
	bigWriteBytes = 64 << 10
	// encodeSlackBytes is the room WriteFrame leaves beyond the frame for
	// the codec's header; a codec that needs more takes the slow path.
	encodeSlackBytes = 64
	// smallOutSegments and largeOutSegments size the first two out-queue
	// classes. A queue starts small (coalescing makes one segment per
	// chunk, so a typical queue holds one or two) and moves to a large one
	// when it fills: 128 slots cost 5 KiB, more than most busy connections
	// need. Only WriteOwned messages and large off-loop writes take one
	// segment each; a queue with more moves to the last class, sized so
	// that the budgets, not the segments, decide what fits (maxSegments).
	smallOutSegments = 4
	largeOutSegments = 128
	// maxFreeChunks and maxFreeOutQueues bound the per-loop free lists
	// (4 MiB of chunks, ~0.5 MiB of queues); what a burst allocates beyond
	// them goes back to the garbage collector. With MaxQueuedBytes set, a
	// loop keeps up to its share of that budget in free chunks instead
	// (chunkPool.max): memory the operator has granted anyway, and reusing
	// it keeps repeated bursts from turning into garbage that the heap
	// must grow past before the collector returns it.
	maxFreeChunks = 512
	// minSplitRoomBytes: WriteFrame encodes a frame that does not fit the
	// tail chunk's room into the loop's scratch and copies it across the
	// tail and a fresh chunk when at least this much room would otherwise
	// be wasted (a 4 KiB frame per 8 KiB chunk left half of every chunk
	// empty: twice the memory the queued bytes account for).
	minSplitRoomBytes     = 1 << 10
	maxFreeSmallOutQueues = 1024
	maxFreeLargeOutQueues = 64
	maxFreeHugeOutQueues  = 8
)

// bufferPools are a loop's free lists and scratch space.
type bufferPools struct {
	outqs   outQueuePool
	chunks  chunkPool
	ins     inPool
	maxSegs int    // segments one out-queue may hold (maxSegments)
	scratch []byte // a frame encoded whole before it is split across chunks, or a reject (at most a chunk)
	spare   *chunk // the chunk Conn.AvailableBuffer lent when the tail had too little room; in no queue
}

// maxSegments is the most segments one out-queue may hold: one per
// message and per chunk the byte budget fills, twice over, so that a write
// within the budgets never finds the segments full (messages from other
// goroutines, booked against a published occupancy, may pass the budgets
// by what the loop queued meanwhile; docs/FANOUT.md).
func maxSegments(cfg *Config) int {
	return 2*(cfg.OutQueueMsgs+cfg.OutQueueBytes/outChunkBytes) + 4
}

// init sizes the pools for cfg (with defaults applied).
func (p *bufferPools) init(cfg *Config) {
	p.maxSegs = maxSegments(cfg)
	p.outqs.caps = [3]int{min(smallOutSegments, p.maxSegs), min(largeOutSegments, p.maxSegs), p.maxSegs}
	p.chunks.max = max(maxFreeChunks, cfg.MaxQueuedBytes/max(1, cfg.Loops)/outChunkBytes)
}

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
	if p.n < p.max {
		ch.next = p.head
		p.head = ch
		p.n++
	}
}

// chunkPool is a loop's free list of chunks; not safe for concurrent use.
type chunkPool struct {
	head *chunk
	n    int
	max  int // free chunks kept (maxFreeChunks, or the loop's share of MaxQueuedBytes)
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
	segs  ringq.Ring[ioflush.Segment]
	msgs  ringq.Ring[int32]
	class uint8 // its outQueuePool class: small, large, huge
	next  *outQueue
}

// outQueuePool is a loop's three free lists of out-queues; not safe for
// concurrent use.
type outQueuePool struct {
	caps [3]int       // each class's segments: small, large, huge
	free [3]*outQueue // by class
	n    [3]int
}

// get returns an empty queue of class i.
func (p *outQueuePool) get(i uint8) *outQueue {
	if q := p.free[i]; q != nil {
		p.free[i] = q.next
		q.next = nil
		p.n[i]--
		return q
	}
	q := &outQueue{class: i}
	q.segs.Init(p.caps[i])
	q.msgs.Init(p.caps[i])
	return q
}

// put recycles an empty queue.
func (p *outQueuePool) put(q *outQueue) {
	i := q.class
	if p.n[i] < [3]int{maxFreeSmallOutQueues, maxFreeLargeOutQueues, maxFreeHugeOutQueues}[i] {
		q.next = p.free[i]
		p.free[i] = q
		p.n[i]++
	}
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
