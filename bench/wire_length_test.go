package bench

import (
	"bytes"
	"errors"
	"testing"
)

func TestLengthFieldHeaders(t *testing.T) {
	for i, tc := range []struct {
		c    Codec
		size int
		head string
	}{
		{CodecLength1, 200, "\xc8"},
		{CodecLength2, 0x0102, "\x01\x02"},
		{CodecLength2LE, 0x0102, "\x02\x01"},
		{CodecLength, 0x010203, "\x00\x01\x02\x03"},
		{CodecLength4LE, 0x010203, "\x03\x02\x01\x00"},
		{CodecLength8, 0x0102, "\x00\x00\x00\x00\x00\x00\x01\x02"},
		{CodecLength8LE, 0x0102, "\x02\x01\x00\x00\x00\x00\x00\x00"},
	} {
		filler := newFiller(tc.size)
		req := appendRequest(nil, tc.c, 99, tc.size, filler)
		if !bytes.HasPrefix(req, []byte(tc.head)) || len(req) != tc.c.WireBytes(tc.size) || len(req) != len(tc.head)+tc.size {
			t.Fatalf("%d: %v header % x, %d bytes", i, tc.c, req[:min(len(req), 8)], len(req))
		}
		// Every split of two requests, echoed, decodes back.
		stream := append(req, appendRequest(nil, tc.c, 100, tc.size, filler)...)
		for split := 0; split <= len(stream); split += max(1, len(stream)/23) {
			seq := uint64(99)
			left := decodeSplit(t, tc.c, stream, split, func(payload []byte) {
				if err := checkResponse(tc.c, payload, seq, tc.size, filler); err != nil {
					t.Fatalf("%d: %v split %d seq %d: %v", i, tc.c, split, seq, err)
				}
				seq++
			})
			if seq != 101 || left != 0 {
				t.Fatalf("%d: %v split %d: matched up to %d with %d bytes left", i, tc.c, split, seq, left)
			}
		}
	}
	if _, _, err := nextResponse(CodecLength8LE, []byte("\xff\xff\xff\xff\x00\x00\x00\x00")); !errors.Is(err, ErrMismatch) {
		t.Fatalf("8-byte length above the maximum: %v", err)
	}
	for _, tc := range []struct {
		c   Codec
		max int
	}{{CodecLength1, 255}, {CodecLength2LE, 65535}, {CodecLength8, MaxMessageBytes}, {CodecLine, MaxMessageBytes}} {
		if got := tc.c.MaxPayloadBytes(); got != tc.max {
			t.Errorf("%v carries %d, want %d", tc.c, got, tc.max)
		}
		cfg := LoadConfig{Addr: "127.0.0.1:1", Codec: tc.c, Conns: 1, Duration: 1, Size: FixedSize(tc.max)}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%v at its maximum: %v", tc.c, err)
		}
		if tc.max < MaxMessageBytes {
			cfg.Size = FixedSize(tc.max + 1)
			if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%v above its maximum: %v", tc.c, err)
			}
		}
	}
}
