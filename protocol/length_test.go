package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

func TestLengthFixed32Decode(t *testing.T) {
	c := LengthPrefixed{Header: Fixed32, MaxFrameBytes: 300}
	tests := []struct {
		in      []byte
		frame   string
		n       int
		wantErr error
	}{
		{nil, "", 0, nil},
		{[]byte{0}, "", 0, nil},
		{[]byte{0, 0, 0}, "", 0, nil},
		{[]byte{0, 0, 0, 0}, "", 4, nil},                   // empty frame
		{[]byte{0, 0, 0, 0, 'x'}, "", 4, nil},              // empty frame, trailing byte left
		{[]byte{0, 0, 0, 3, 'a', 'b'}, "", 0, nil},         // payload incomplete
		{[]byte{0, 0, 0, 3, 'a', 'b', 'c'}, "abc", 7, nil}, // exact
		{[]byte{0, 0, 0, 2, 'a', 'b', 'c'}, "ab", 6, nil},  // next frame begins
		{[]byte{0, 0, 1, 44}, "", 0, nil},                  // 300: exactly the max, waits for payload
		{[]byte{0, 0, 1, 45}, "", 0, ErrFrameTooLarge},     // 301: rejected from the header alone
		{[]byte{0, 0, 2}, "", 0, ErrFrameTooLarge},         // >= 512 already with 3 header bytes
		{[]byte{1}, "", 0, ErrFrameTooLarge},               // >= 16 MiB with 1 header byte
		{[]byte{0xff, 0xff, 0xff, 0xff}, "", 0, ErrFrameTooLarge},
	}
	for i, tt := range tests {
		frame, n, err := c.Decode(tt.in)
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
			t.Errorf("%d: Decode(%x) err = %v; want %v", i, tt.in, err, tt.wantErr)
			continue
		}
		if n != tt.n || string(frame) != tt.frame {
			t.Errorf("%d: Decode(%x) = %q, %d; want %q, %d", i, tt.in, frame, n, tt.frame, tt.n)
		}
		if err != nil && (n != 0 || frame != nil) {
			t.Errorf("%d: error with n=%d frame=%q", i, n, frame)
		}
	}
}

func TestLengthUvarintDecode(t *testing.T) {
	c := LengthPrefixed{Header: Uvarint, MaxFrameBytes: 300}
	tests := []struct {
		in      []byte
		frame   string
		n       int
		wantErr error
	}{
		{nil, "", 0, nil},
		{[]byte{0}, "", 1, nil},
		{[]byte{3, 'a', 'b'}, "", 0, nil},
		{[]byte{3, 'a', 'b', 'c', 'd'}, "abc", 4, nil},
		{[]byte{0x80}, "", 0, nil},                    // 128..: may still fit
		{[]byte{0xac, 0x02}, "", 0, nil},              // 300: the max, waits for payload
		{[]byte{0xad, 0x02}, "", 0, ErrFrameTooLarge}, // 301
		{[]byte{0x80, 0x03}, "", 0, ErrFrameTooLarge}, // 384
		{[]byte{0x80, 0x80}, "", 0, ErrFrameTooLarge}, // at least 16384: early
		{[]byte{0x81, 0x00}, "", 0, ErrMalformed},     // non-minimal 1
		{[]byte{0x80, 0x00}, "", 0, ErrMalformed},     // non-minimal 0
	}
	for i, tt := range tests {
		frame, n, err := c.Decode(tt.in)
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
			t.Errorf("%d: Decode(%x) err = %v; want %v", i, tt.in, err, tt.wantErr)
			continue
		}
		if n != tt.n || string(frame) != tt.frame {
			t.Errorf("%d: Decode(%x) = %q, %d; want %q, %d", i, tt.in, frame, n, tt.frame, tt.n)
		}
	}
}

// TestReadUvarint exercises the header reader at the edges of 64 bits, where
// the codec limit (at most MaxInt) never lets a real Decode reach.
func TestReadUvarint(t *testing.T) {
	max := binary.AppendUvarint(nil, math.MaxUint64)
	tests := []struct {
		in      []byte
		limit   uint64
		size    uint64
		hdr     int
		wantErr error
	}{
		{max, math.MaxUint64, math.MaxUint64, 10, nil},
		{max[:9], math.MaxUint64, 0, 0, nil},
		{append(bytes.Repeat([]byte{0xff}, 9), 2), math.MaxUint64, 0, 0, ErrMalformed},
		{bytes.Repeat([]byte{0xff}, 10), math.MaxUint64, 0, 0, ErrMalformed}, // a tenth byte may not continue
		{bytes.Repeat([]byte{0xff}, 11), math.MaxUint64, 0, 0, ErrMalformed},
		{append(bytes.Repeat([]byte{0x80}, 9), 1), math.MaxUint64, 1 << 63, 10, nil},
		{bytes.Repeat([]byte{0x80}, 9), math.MaxInt64, 0, 0, ErrFrameTooLarge},
		{[]byte{0x7f}, 127, 127, 1, nil},
		{[]byte{0x80, 0x01}, 127, 0, 0, ErrFrameTooLarge},
		{[]byte{0x80}, 127, 0, 0, ErrFrameTooLarge},
		{[]byte{0x80}, 128, 0, 0, nil},
	}
	for i, tt := range tests {
		size, hdr, err := readUvarint(tt.in, tt.limit)
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
			t.Errorf("%d: readUvarint(%x, %d) err = %v; want %v", i, tt.in, tt.limit, err, tt.wantErr)
			continue
		}
		if size != tt.size || hdr != tt.hdr {
			t.Errorf("%d: readUvarint(%x, %d) = %d, %d; want %d, %d", i, tt.in, tt.limit, size, hdr, tt.size, tt.hdr)
		}
	}
}

func TestLengthEncode(t *testing.T) {
	tests := []struct {
		c     LengthPrefixed
		frame []byte
		want  []byte
	}{
		{LengthPrefixed{}, nil, []byte{0, 0, 0, 0}},
		{LengthPrefixed{}, []byte("ab"), []byte{0, 0, 0, 2, 'a', 'b'}},
		{LengthPrefixed{Header: Uvarint}, []byte("ab"), []byte{2, 'a', 'b'}},
		{LengthPrefixed{Header: Uvarint}, bytes.Repeat([]byte{'z'}, 300), append([]byte{0xac, 0x02}, bytes.Repeat([]byte{'z'}, 300)...)},
		{LengthPrefixed{Header: 9}, []byte("ab"), nil},
	}
	for i, tt := range tests {
		got := tt.c.AppendEncode(nil, tt.frame)
		if !bytes.Equal(got, tt.want) {
			t.Errorf("%d: AppendEncode = %x; want %x", i, got, tt.want)
		}
		if tt.c.Validate() == nil && tt.c.HeaderBytes(len(tt.frame))+len(tt.frame) != len(got) {
			t.Errorf("%d: HeaderBytes(%d) = %d, encoded %d bytes", i, len(tt.frame), tt.c.HeaderBytes(len(tt.frame)), len(got))
		}
	}
}

func TestLengthAppendFrame(t *testing.T) {
	tests := []struct {
		c       LengthPrefixed
		size    int
		wantErr error
	}{
		{LengthPrefixed{MaxFrameBytes: 4}, 4, nil},
		{LengthPrefixed{MaxFrameBytes: 4}, 5, ErrFrameTooLarge},
		{LengthPrefixed{Header: Uvarint, MaxFrameBytes: 4}, 5, ErrFrameTooLarge},
		{LengthPrefixed{}, DefaultMaxFrameBytes, nil},
		{LengthPrefixed{}, DefaultMaxFrameBytes + 1, ErrFrameTooLarge},
		{LengthPrefixed{Header: 2}, 1, ErrInvalidConfig},
		{LengthPrefixed{MaxFrameBytes: -1}, 1, ErrInvalidConfig},
	}
	for i, tt := range tests {
		dst := []byte("keep")
		got, err := tt.c.AppendFrame(dst, make([]byte, tt.size))
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
			t.Errorf("%d: AppendFrame(%d bytes) err = %v; want %v", i, tt.size, err, tt.wantErr)
			continue
		}
		if err != nil {
			if string(got) != "keep" {
				t.Errorf("%d: dst changed on error: %q", i, got)
			}
			continue
		}
		frame, n, derr := tt.c.Decode(got[4:])
		if derr != nil || n != len(got)-4 || len(frame) != tt.size {
			t.Errorf("%d: Decode after AppendFrame = %d bytes, %d, %v", i, len(frame), n, derr)
		}
	}
}

func TestLengthInvalidConfig(t *testing.T) {
	for i, c := range []LengthPrefixed{{Header: 2}, {Header: 255}, {MaxFrameBytes: -5}} {
		if _, n, err := c.Decode([]byte{0, 0, 0, 0}); !errors.Is(err, ErrInvalidConfig) || n != 0 {
			t.Errorf("%d: Decode on %#v = %d, %v; want ErrInvalidConfig", i, c, n, err)
		}
	}
	if s := HeaderKind(7).String(); s != "HeaderKind(7)" {
		t.Errorf("HeaderKind(7).String() = %q", s)
	}
	if Fixed32.String() != "fixed32" || Uvarint.String() != "uvarint" {
		t.Errorf("HeaderKind names: %q %q", Fixed32, Uvarint)
	}
}

// TestLengthStream decodes several frames fed one byte at a time.
func TestLengthStream(t *testing.T) {
	for i, c := range []LengthPrefixed{{Header: Fixed32}, {Header: Uvarint}} {
		msgs := []string{"", "a", "hello", string(bytes.Repeat([]byte("q"), 200))}
		var wire []byte
		for _, m := range msgs {
			wire = c.AppendEncode(wire, []byte(m))
		}
		var got []string
		var buf []byte
		for _, b := range wire {
			buf = append(buf, b)
			frames, rest, err := decodeAll(c, buf)
			if err != nil {
				t.Fatalf("%d: %v", i, err)
			}
			for _, f := range frames {
				got = append(got, string(f))
			}
			buf = append([]byte(nil), rest...)
		}
		if len(got) != len(msgs) || len(buf) != 0 {
			t.Fatalf("%d: got %d frames, %d bytes left; want %d, 0", i, len(got), len(buf), len(msgs))
		}
		for j := range msgs {
			if got[j] != msgs[j] {
				t.Errorf("%d.%d: frame %q; want %q", i, j, got[j], msgs[j])
			}
		}
	}
}
