package bench

import (
	"bytes"
	"testing"
)

func TestRejectReason(t *testing.T) {
	for i, c := range []struct {
		in   string
		want int
	}{
		{"-REJECT tenant 120", 1},
		{"-REJECT codel 100", 4},
		{"-REJECT global 0", 0},
		{"-REJECT draining", 7},
		{"-REJECT fair 100", 8},
		{"-REJECT in_progress 5", len(knownReasons)},
		{"-REJECT ", len(knownReasons)},
		{"-REJECT", -1},
		{"xxxxxxxx", -1},
		{"", -1},
		{"\x00\x00\x00\x00\x00\x00\x00\x01xx", -1},
	} {
		if got := rejectReason([]byte(c.in)); got != c.want {
			t.Errorf("%d: rejectReason(%q) = %d, want %d", i, c.in, got, c.want)
		}
	}
	var rc rejectCounts
	rc[1], rc[len(knownReasons)] = 3, 2
	if m := rc.asMap(); len(m) != 2 || m["tenant"] != 3 || m["other"] != 2 {
		t.Errorf("asMap %v", m)
	}
}

// FuzzRejectReason: never panics, stays in range, and a frame the
// generator sends (sequence number and filler) is never taken for a reject.
func FuzzRejectReason(f *testing.F) {
	f.Add([]byte("-REJECT tenant 120"))
	f.Add([]byte("-REJECT "))
	f.Add([]byte("xxxx"))
	f.Fuzz(func(t *testing.T, b []byte) {
		k := rejectReason(b)
		if k >= numRejectKinds || k < -1 {
			t.Fatalf("index %d", k)
		}
		if k >= 0 && !bytes.HasPrefix(b, []byte(rejectPrefix)) {
			t.Fatalf("%q taken for a reject", b)
		}
		req := appendRequest(nil, CodecLength, uint64(len(b)), 64, newFiller(64))
		if rejectReason(req[lengthHeaderBytes:]) >= 0 {
			t.Fatalf("request %q taken for a reject", req)
		}
	})
}

func TestGoAwayKind(t *testing.T) {
	if knownReasons[goAwayKind] != "goaway" {
		t.Fatalf("knownReasons[goAwayKind] = %q, want goaway", knownReasons[goAwayKind])
	}
}
