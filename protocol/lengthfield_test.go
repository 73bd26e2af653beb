package protocol

import (
	"bytes"
	"errors"
	"testing"
)

func TestLengthFieldDecode(t *testing.T) {
	tests := []struct {
		c       LengthField
		in      []byte
		frame   string
		n       int
		wantErr error
	}{
		{LengthField{}, []byte{0, 0, 0, 3, 'a', 'b', 'c'}, "abc", 7, nil},
		{LengthField{}, []byte{0, 0, 0, 3, 'a', 'b'}, "", 0, nil},
		{LengthField{Size: 2}, nil, "", 0, nil},
		{LengthField{Size: 2}, []byte{0}, "", 0, nil},
		{LengthField{Size: 2}, []byte{0, 0}, "", 2, nil},
		{LengthField{Size: 2}, []byte{0, 2, 'h', 'i', 'x'}, "hi", 4, nil},
		{LengthField{Size: 2, LittleEndian: true}, []byte{2, 0, 'h', 'i'}, "hi", 4, nil},
		{LengthField{Size: 1}, []byte{1, 'z'}, "z", 2, nil},
		{LengthField{Size: 8}, []byte{0, 0, 0, 0, 0, 0, 0, 1, 'z'}, "z", 9, nil},
		{LengthField{Size: 8, LittleEndian: true}, []byte{1, 0, 0, 0, 0, 0, 0, 0, 'z'}, "z", 9, nil},
		// A type byte, then the length: the body by default, all with KeepHeader.
		{LengthField{Offset: 1, Size: 2}, []byte{7, 0, 1, 'q'}, "q", 4, nil},
		{LengthField{Offset: 1, Size: 2, KeepHeader: true}, []byte{7, 0, 1, 'q'}, "\x07\x00\x01q", 4, nil},
		// The length counts the header: 5 = 2 header bytes + 3.
		{LengthField{Size: 2, IncludesHeader: true}, []byte{0, 5, 'a', 'b', 'c'}, "abc", 5, nil},
		{LengthField{Size: 2, IncludesHeader: true}, []byte{0, 1}, "", 0, ErrMalformed},
		{LengthField{Size: 2, IncludesHeader: true}, []byte{0, 2}, "", 2, nil},
		// Adjustment: a 2-byte checksum after the body is not counted.
		{LengthField{Size: 1, Adjustment: 2}, []byte{1, 'a', 'c', 'k'}, "ack", 4, nil},
		{LengthField{Size: 1, Adjustment: -1}, []byte{3, 'a', 'b', 'c'}, "ab", 3, nil},
		{LengthField{Size: 1, Adjustment: -1}, []byte{0}, "", 0, ErrMalformed},
		// MaxFrameBytes is checked on the header alone, against the frame returned.
		{LengthField{Size: 2, MaxFrameBytes: 10}, []byte{0, 10}, "", 0, nil},
		{LengthField{Size: 2, MaxFrameBytes: 10}, []byte{0, 11}, "", 0, ErrFrameTooLarge},
		{LengthField{Size: 2, MaxFrameBytes: 10, KeepHeader: true}, []byte{0, 8}, "", 0, nil},
		{LengthField{Size: 2, MaxFrameBytes: 10, KeepHeader: true}, []byte{0, 9}, "", 0, ErrFrameTooLarge},
		{LengthField{Size: 8}, []byte{0x40, 0, 0, 0, 0, 0, 0, 1}, "", 0, ErrFrameTooLarge},
		{LengthField{Size: 8}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "", 0, ErrFrameTooLarge},
		{LengthField{}, []byte{0, 0x10, 0, 1}, "", 0, ErrFrameTooLarge},
		// Invalid configurations.
		{LengthField{Size: 3}, []byte{0, 0, 0}, "", 0, ErrInvalidConfig},
		{LengthField{Offset: -1}, nil, "", 0, ErrInvalidConfig},
		{LengthField{Adjustment: MaxLengthAdjustment + 1}, nil, "", 0, ErrInvalidConfig},
		{LengthField{MaxFrameBytes: -1}, nil, "", 0, ErrInvalidConfig},
	}
	for i, tt := range tests {
		frame, n, err := tt.c.Decode(tt.in)
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
			t.Errorf("%d: %+v Decode(%x) err = %v; want %v", i, tt.c, tt.in, err, tt.wantErr)
			continue
		}
		if n != tt.n || string(frame) != tt.frame {
			t.Errorf("%d: %+v Decode(%x) = %q, %d; want %q, %d", i, tt.c, tt.in, frame, n, tt.frame, tt.n)
		}
		if err != nil && (n != 0 || frame != nil) {
			t.Errorf("%d: error with n=%d frame=%q", i, n, frame)
		}
		if frame != nil && cap(frame) != len(frame) {
			t.Errorf("%d: frame capacity %d not clipped to %d", i, cap(frame), len(frame))
		}
	}
}

func TestLengthFieldAppendFrame(t *testing.T) {
	tests := []struct {
		c       LengthField
		frame   string
		wire    string
		wantErr error
	}{
		{LengthField{}, "abc", "\x00\x00\x00\x03abc", nil},
		{LengthField{Size: 2, LittleEndian: true}, "hi", "\x02\x00hi", nil},
		{LengthField{Offset: 2, Size: 1}, "x", "\x00\x00\x01x", nil},
		{LengthField{Offset: 1, Size: 1, KeepHeader: true}, "\x07\x09xy", "\x07\x02xy", nil},
		{LengthField{Size: 2, IncludesHeader: true}, "abc", "\x00\x05abc", nil},
		{LengthField{Size: 1, Adjustment: 2}, "ack", "\x01ack", nil},
		{LengthField{Size: 1, Adjustment: 2}, "a", "", ErrMalformed},
		{LengthField{Size: 1}, string(make([]byte, 256)), "", ErrFrameTooLarge},
		{LengthField{Size: 2, MaxFrameBytes: 2}, "abc", "", ErrFrameTooLarge},
		{LengthField{Offset: 1, KeepHeader: true}, "abc", "", ErrMalformed},
		{LengthField{Size: 5}, "a", "", ErrInvalidConfig},
	}
	for i, tt := range tests {
		dst := []byte("keep")
		got, err := tt.c.AppendFrame(dst, []byte(tt.frame))
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
			t.Errorf("%d: %+v AppendFrame(%q) err = %v; want %v", i, tt.c, tt.frame, err, tt.wantErr)
			continue
		}
		want := "keep" + tt.wire
		if string(got) != want {
			t.Errorf("%d: %+v AppendFrame(%q) = %q; want %q", i, tt.c, tt.frame, got, want)
		}
		if enc := tt.c.AppendEncode(dst, []byte(tt.frame)); string(enc) != want {
			t.Errorf("%d: AppendEncode = %q; want %q", i, enc, want)
		}
	}
}

// TestLengthFieldMatchesLengthPrefixed: the zero LengthField frames as the
// zero LengthPrefixed does, on valid input.
func TestLengthFieldMatchesLengthPrefixed(t *testing.T) {
	var lf LengthField
	var lp LengthPrefixed
	for _, payload := range []string{"", "a", "hello", string(bytes.Repeat([]byte("z"), 1000))} {
		wire := lp.AppendEncode(nil, []byte(payload))
		if got := lf.AppendEncode(nil, []byte(payload)); !bytes.Equal(got, wire) {
			t.Errorf("encode %d bytes: %x != %x", len(payload), got, wire)
		}
		for p := 0; p <= len(wire); p++ {
			f1, n1, e1 := lf.Decode(wire[:p])
			f2, n2, e2 := lp.Decode(wire[:p])
			if !bytes.Equal(f1, f2) || n1 != n2 || (e1 == nil) != (e2 == nil) {
				t.Errorf("prefix %d of %d: LengthField %q %d %v, LengthPrefixed %q %d %v", p, len(wire), f1, n1, e1, f2, n2, e2)
			}
		}
	}
}

func TestLengthFieldReject(t *testing.T) {
	c := LengthField{Offset: 1, Size: 2, KeepHeader: true}
	wire := c.AppendReject(nil, []byte("\x09\x00\x01x"), "tenant", 1500)
	frame, n, err := c.Decode(wire)
	if err != nil || n != len(wire) {
		t.Fatalf("Decode(reject %q) = %d, %v", wire, n, err)
	}
	if reason, _, ok := ParseRejectText(frame[c.HeaderBytes():]); !ok || reason != "tenant" || frame[0] != 0 {
		t.Errorf("reject frame %q: reason %q ok %v", frame, reason, ok)
	}
	// A configuration that cannot frame the text appends nothing.
	bad := LengthField{Size: 1, Adjustment: 100}
	if got := bad.AppendReject([]byte("x"), nil, "codel", 0); string(got) != "x" {
		t.Errorf("unframeable reject appended %q", got)
	}
}
