package protocol_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol"
)

// TestLengthFieldDecodeAllocs: Decode allocates nothing, on frames and on
// its error paths, and AppendEncode and AppendReject allocate nothing into
// a buffer with room, for each field size and both byte orders.
func TestLengthFieldDecodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's bookkeeping allocates")
	}
	payload := bytes.Repeat([]byte("p"), 200)
	codecs := []protocol.LengthField{
		{},
		{Size: 1, MaxFrameBytes: 250},
		{Size: 2, LittleEndian: true},
		{Offset: 3, Size: 8, IncludesHeader: true, KeepHeader: true, Adjustment: -2},
	}
	bad := [][]byte{
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	}
	dst := make([]byte, 0, 1024)
	for i, c := range codecs {
		wire := c.AppendEncode(nil, payload)
		if c.KeepHeader {
			wire = c.AppendEncode(nil, append(make([]byte, c.HeaderBytes()), payload...))
		}
		a := testing.AllocsPerRun(200, func() {
			frame, n, err := c.Decode(wire)
			if err != nil || n != len(wire) {
				t.Fatalf("%d: Decode = %d bytes, %d, %v", i, len(frame), n, err)
			}
			dst = c.AppendEncode(dst[:0], frame)
			dst = c.AppendReject(dst, frame, "codel", time.Second)
			for _, b := range bad {
				c.Decode(b)
			}
		})
		if a != 0 {
			t.Errorf("%d: %+v: %v allocs per Decode+AppendEncode+AppendReject; want 0", i, c, a)
		}
	}
}

func ExampleLengthField() {
	// A header of one type byte and a 2-byte big-endian length of the body;
	// the handler wants the type byte, so the frame keeps the header.
	c := protocol.LengthField{Offset: 1, Size: 2, KeepHeader: true, MaxFrameBytes: 64}
	wire := c.AppendEncode(nil, []byte("\x01\x00\x00hello")) // the length field is filled in
	fmt.Printf("% x\n", wire[:3])
	frame, n, err := c.Decode(wire)
	fmt.Printf("type %d body %q n %d err %v\n", frame[0], frame[c.HeaderBytes():], n, err)

	// The limit is enforced on the header alone.
	_, _, err = c.Decode([]byte{0x01, 0x01, 0x00})
	fmt.Println(errors.Is(err, protocol.ErrFrameTooLarge))
	// Output:
	// 01 00 05
	// type 1 body "hello" n 8 err <nil>
	// true
}
