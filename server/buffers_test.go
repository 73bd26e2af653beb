package server

import (
	"bytes"
	"testing"

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
		if err := l.writeFrame(c, frame); err != nil {
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
	l.releaseOut(c)
}
