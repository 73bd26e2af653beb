package server

import (
	"bufio"
	"bytes"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/sluicenet/sluice/protocol"
)

// TestWriteFrameFillsChunks: frames that do not fit the tail chunk's room
// are split across it and a fresh chunk rather than leaving the room empty
// (4 KiB frames once took one 8 KiB chunk each: twice the memory the
// queued bytes account for), and the bytes queued are the encoded frames
// in order.
func TestWriteFrameFillsChunks(t *testing.T) {
	codec := protocol.LengthPrefixed{}
	e, err := New(Config{Loops: 1, Codec: codec}, HandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	l := e.loops[0]
	c := &Conn{loop: l, fd: 7, gen: 1}
	var want []byte
	const frames, size = 12, 4096 // the memory flood's frames: 4 100 bytes encoded, the second never fit
	for i := 0; i < frames; i++ {
		frame := bytes.Repeat([]byte{byte('a' + i)}, size)
		if err := c.writeFrame(frame); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		want = codec.AppendEncode(want, frame)
	}
	var got []byte
	chunks := map[*byte]bool{}
	for i := 0; i < c.out.segs.Len(); i++ {
		s := c.out.segs.At(i)
		got = append(got, s.Buf...)
		chunks[&s.Buf[:cap(s.Buf)][cap(s.Buf)-1]] = true // segments of one chunk share its end
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("queued bytes differ from the encoded frames (%d vs %d bytes)", len(got), len(want))
	}
	if c.outBytes != len(want) || c.outMsgs != frames {
		t.Errorf("outBytes %d outMsgs %d, want %d and %d", c.outBytes, c.outMsgs, len(want), frames)
	}
	if limit := (len(want)+outChunkBytes-1)/outChunkBytes + 1; len(chunks) > limit {
		t.Errorf("%d chunks for %d bytes, want at most %d", len(chunks), len(want), limit)
	}
	c.releaseOut()
}

// TestAvailableBufferInPlace: a reply appended to AvailableBuffer's buffer
// is queued without a copy, into the tail chunk's room or the loop's spare
// chunk (which becomes the tail); one that outgrew the buffer, or one over
// the budget, takes the ordinary path; the queued bytes are the replies in
// order either way.
func TestAvailableBufferInPlace(t *testing.T) {
	e, err := New(Config{Loops: 1, Codec: protocol.LengthPrefixed{}, OutQueueBytes: 3 * outChunkBytes}, HandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	l := e.loops[0]
	c := &Conn{loop: l, fd: 7, gen: 1}
	var want []byte
	write := func(b []byte) {
		t.Helper()
		if err := c.writeCopy(b); err != nil {
			t.Fatal(err)
		}
		want = append(want, b...)
	}

	// No out-queue yet: the spare chunk is lent and becomes the tail.
	buf := c.availableBuffer()
	if cap(buf) < minAvailableBytes {
		t.Fatalf("available %d bytes, want at least %d", cap(buf), minAvailableBytes)
	}
	spare := l.pools.spare
	write(append(buf, "first reply"...))
	if c.tailChunk != spare || l.pools.spare != nil || c.out.segs.Len() != 1 {
		t.Fatalf("the spare chunk was not queued in place (tail %p spare %p, %d segments)", c.tailChunk, spare, c.out.segs.Len())
	}

	// The tail has room: the next reply extends its segment.
	buf = c.availableBuffer()
	if unsafe.SliceData(buf[:1]) != &spare.b[:cap(spare.b)][len(spare.b)] {
		t.Fatal("AvailableBuffer did not offer the tail chunk's room")
	}
	write(append(buf, "second reply"...))
	if c.out.segs.Len() != 1 || c.outMsgs != 2 {
		t.Fatalf("%d segments, %d messages; want 1 and 2", c.out.segs.Len(), c.outMsgs)
	}

	// A reply that outgrows the buffer is copied (append moved it).
	buf = c.availableBuffer()
	write(append(buf, bytes.Repeat([]byte{'x'}, cap(buf)+1)...))

	// Too little room left in the tail: a spare chunk again.
	write(bytes.Repeat([]byte{'z'}, c.tailChunk.room()-100))
	buf = c.availableBuffer()
	if c.tailChunk != nil && c.tailChunk.room() >= minAvailableBytes {
		t.Fatalf("tail has %d bytes of room, the test wants less", c.tailChunk.room())
	}
	if l.pools.spare == nil || unsafe.SliceData(buf[:1]) != unsafe.SliceData(l.pools.spare.b[:1]) {
		t.Fatal("AvailableBuffer did not lend the spare chunk when the tail was short of room")
	}
	write(append(buf, "after the big one"...))

	// Over the byte budget: refused, nothing queued, the spare kept.
	buf = c.availableBuffer()
	before := c.outBytes
	if err := c.writeCopy(append(buf, bytes.Repeat([]byte{'y'}, 3*outChunkBytes)...)); err != ErrQueueFull {
		t.Fatalf("over budget: %v, want ErrQueueFull", err)
	}
	if c.outBytes != before {
		t.Fatalf("a refused write changed outBytes %d -> %d", before, c.outBytes)
	}

	var got []byte
	for i := 0; i < c.out.segs.Len(); i++ {
		got = append(got, c.out.segs.At(i).Buf...)
	}
	if !bytes.Equal(got, want) || c.outBytes != len(want) || c.outMsgs != 5 {
		t.Fatalf("queued %q (%d bytes, %d msgs), want %q (%d bytes, 5 msgs)", got, c.outBytes, c.outMsgs, want, len(want))
	}
	c.releaseOut()
}

// TestWriteOwnedReleasedOnce: the release function runs exactly once,
// whether the bytes were written or the connection closed first.
func TestWriteOwnedReleasedOnce(t *testing.T) {
	var released atomic.Int32
	h := newTestHandler()
	h.frame = func(c *Conn, frame []byte) Action {
		if err := c.WriteOwned([]byte("owned\n"), func() { released.Add(1) }); err != nil {
			t.Errorf("WriteOwned: %v", err)
		}
		if string(frame) == "close" {
			return Close
		}
		return None
	}
	e := start(t, Config{Loops: 1}, h)
	c := dial(t, e)
	sc := h.nextOpen(t)
	c.Write([]byte("x"))
	r := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := r.ReadString('\n'); err != nil || line != "owned\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	waitUntil(t, 5*time.Second, "release", func() bool { return released.Load() == 1 })

	// dropped: a peer that never reads, closed with output queued
	if err := sc.Close(); err != nil {
		t.Fatal(err)
	}
	h.closeOf(t, sc, 5*time.Second)
	e2 := start(t, Config{Loops: 1, WriteStallTimeout: 100 * time.Millisecond}, HandlerFuncs{
		Open: func(c *Conn) Action {
			big := make([]byte, 200<<10)
			for i := 0; i < 20; i++ {
				if c.WriteOwned(big, func() { released.Add(1) }) != nil {
					released.Add(1) // refused: still ours, count it as released
				}
			}
			return None
		},
	})
	bad, err := dialSmallWindow(e2.Addr().String(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	waitUntil(t, 10*time.Second, "releases after write stall", func() bool { return released.Load() == 21 })
	time.Sleep(50 * time.Millisecond)
	if n := released.Load(); n != 21 {
		t.Errorf("released %d times, want 21", n)
	}
}
