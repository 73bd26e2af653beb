package bench

import (
	"errors"
	"strings"
	"testing"
)

func TestRequestResponseRoundTrip(t *testing.T) {
	for _, c := range []Codec{CodecLength, CodecLine} {
		for _, size := range []int{1, 7, 8, 15, 16, 17, 64, 4096} {
			filler := newFiller(size)
			var stream []byte
			for seq := uint64(0); seq < 5; seq++ {
				stream = appendRequest(stream, c, seq+1000, size, filler)
			}
			if len(stream) != 5*c.WireBytes(size) {
				t.Fatalf("%v/%d: %d wire bytes, want %d", c, size, len(stream), 5*c.WireBytes(size))
			}
			// Feed the stream in every split, as a server may deliver it.
			for split := 0; split <= len(stream); split += max(1, len(stream)/37) {
				seq := uint64(1000)
				left := decodeSplit(t, c, stream, split, func(payload []byte) {
					if err := checkResponse(c, payload, seq, size, filler); err != nil {
						t.Fatalf("%v/%d split %d seq %d: %v", c, size, split, seq, err)
					}
					seq++
				})
				if seq != 1005 || left != 0 {
					t.Fatalf("%v/%d split %d: matched up to %d with %d bytes left", c, size, split, seq, left)
				}
			}
		}
	}
}

// decodeSplit decodes stream with nextResponse, delivered as stream[:split]
// first and the rest once that is used up, calling each with every payload;
// it returns the bytes left undecoded.
func decodeSplit(t *testing.T, c Codec, stream []byte, split int, each func(payload []byte)) int {
	t.Helper()
	buf := append([]byte(nil), stream[:split]...)
	rest := stream[split:]
	for {
		payload, n, err := nextResponse(c, buf)
		if err != nil {
			t.Fatalf("%v split %d: %v", c, split, err)
		}
		if n == 0 {
			if len(rest) == 0 {
				return len(buf)
			}
			buf, rest = append(buf, rest...), nil
			continue
		}
		each(payload)
		buf = buf[n:]
	}
}

func TestCheckResponseMismatch(t *testing.T) {
	cases := []struct {
		c       Codec
		size    int
		payload string
		seq     uint64
	}{
		{CodecLength, 64, "", 1},                                  // wrong length
		{CodecLine, 16, "000000000000000a", 11},                   // wrong sequence
		{CodecLine, 16, "00000000000000zz", 0},                    // not hex
		{CodecLine, 20, "0000000000000001xxx", 1},                 // short
		{CodecLength, 8, "\x00\x00\x00\x00\x00\x00\x00\x02", 1},   // wrong sequence
		{CodecLength, 9, "\x00\x00\x00\x00\x00\x00\x00\x01xy", 1}, // long
	}
	for i, tc := range cases {
		err := checkResponse(tc.c, []byte(tc.payload), tc.seq, tc.size, newFiller(64))
		if !errors.Is(err, ErrMismatch) {
			t.Errorf("%d: err %v, want ErrMismatch", i, err)
		}
	}
	if err := checkResponse(CodecLine, []byte("0000000000000011y"), 17, 17, newFiller(17)); !errors.Is(err, ErrMismatch) {
		t.Fatalf("altered filler accepted: %v", err)
	}
	if err := checkResponse(CodecLine, []byte("0000000000000011x"), 17, 17, newFiller(17)); err != nil {
		t.Fatalf("valid response rejected: %v", err)
	}
}

func TestNextResponseLimits(t *testing.T) {
	if _, _, err := nextResponse(CodecLength, []byte{0x7f, 0, 0, 0}); !errors.Is(err, ErrMismatch) {
		t.Fatalf("oversized length header: %v", err)
	}
	long := []byte(strings.Repeat("x", MaxMessageBytes+1))
	if _, _, err := nextResponse(CodecLine, long); !errors.Is(err, ErrMismatch) {
		t.Fatalf("line without end: %v", err)
	}
	if _, _, err := nextResponse(CodecRaw, []byte("x")); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("raw has no frames: %v", err)
	}
	if _, n, err := nextResponse(CodecLength, []byte{0, 0}); n != 0 || err != nil {
		t.Fatalf("partial header: n %d err %v", n, err)
	}
}

func TestRawAccountSplitsAndCoalesces(t *testing.T) {
	// Requests of 64, 10 and 100 bytes are outstanding; the echo comes back
	// in arbitrary chunks. The table gives the chunk sizes and the requests
	// each chunk completes.
	cases := []struct {
		name   string
		sizes  []int32
		chunks []int
		done   []int
		excess bool
	}{
		{"exact", []int32{64, 10, 100}, []int{64, 10, 100}, []int{1, 1, 1}, false},
		{"coalesced", []int32{64, 10, 100}, []int{174}, []int{3}, false},
		{"split", []int32{64, 10, 100}, []int{1, 62, 1, 9, 1, 99, 1}, []int{0, 0, 1, 0, 1, 0, 1}, false},
		{"straddling", []int32{64, 10, 100}, []int{70, 50, 54}, []int{1, 1, 1}, false},
		{"excess", []int32{64}, []int{65}, []int{1}, true},
		{"nothing outstanding", nil, []int{1}, []int{0}, true},
	}
	for _, tc := range cases {
		q := newInflight(8)
		for _, s := range tc.sizes {
			q.push(request{size: s})
		}
		var a rawAccount
		for i, n := range tc.chunks {
			k, err := a.take(n, &q)
			if tc.excess && i == len(tc.chunks)-1 {
				if !errors.Is(err, ErrMismatch) {
					t.Fatalf("%s: err %v, want ErrMismatch", tc.name, err)
				}
				continue
			}
			if err != nil || k != tc.done[i] {
				t.Fatalf("%s chunk %d (%d bytes): completed %d err %v, want %d", tc.name, i, n, k, err, tc.done[i])
			}
			for j := 0; j < k; j++ {
				q.pop()
			}
		}
		if !tc.excess && (q.len() != 0 || a.partialBytes != 0) {
			t.Fatalf("%s: %d outstanding, %d partial bytes at the end", tc.name, q.len(), a.partialBytes)
		}
	}
}

func TestInflightFIFO(t *testing.T) {
	q := newInflight(3) // rounds up to 4
	for i := 0; i < 4; i++ {
		if !q.push(request{intendedNanos: int64(i)}) {
			t.Fatalf("push %d refused", i)
		}
	}
	if q.push(request{}) || !q.full() {
		t.Fatalf("push beyond capacity accepted")
	}
	for round := 0; round < 10; round++ { // wrap around
		r, ok := q.pop()
		if !ok || r.intendedNanos != int64(round) {
			t.Fatalf("pop %d: %v %v", round, r, ok)
		}
		q.push(request{intendedNanos: int64(round + 4)})
		if q.at(0).intendedNanos != int64(round+1) {
			t.Fatalf("at(0) = %d after round %d", q.at(0).intendedNanos, round)
		}
	}
	q.reset()
	if _, ok := q.pop(); ok || q.len() != 0 {
		t.Fatalf("reset left %d", q.len())
	}
}

func TestParseCodecAndSize(t *testing.T) {
	for _, s := range []string{"raw", "length", "line", "resp", "http", "length1", "length2", "length8", "length2le", "length4le", "length8le"} {
		c, err := ParseCodec(s)
		if err != nil || c.String() != s {
			t.Fatalf("ParseCodec(%q) = %v, %v", s, c, err)
		}
	}
	if _, err := ParseCodec("varint"); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("unknown codec: %v", err)
	}
	for _, tc := range []struct {
		in       string
		min, max int
		ok       bool
	}{
		{"64", 64, 64, true}, {"4k", 4096, 4096, true}, {"64-4096", 64, 4096, true}, {"1-1K", 1, 1024, true},
		{"0", 0, 0, false}, {"100-50", 0, 0, false}, {"2000k", 0, 0, false}, {"x", 0, 0, false},
	} {
		s, err := ParseSize(tc.in)
		if (err == nil) != tc.ok || (tc.ok && (s.Min != tc.min || s.Max != tc.max)) {
			t.Errorf("ParseSize(%q) = %+v, %v", tc.in, s, err)
		}
	}
}
