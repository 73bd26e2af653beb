package http1

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// slowScan is the byte-at-a-time reference for scanField and scanTarget.
func slowScan(class *[256]bool, b []byte, i int) int {
	for i < len(b) && class[b[i]] {
		i++
	}
	return i
}

// TestScanWordsMatchBytes checks the word-at-a-time scanners against the
// byte tables: every byte value at every position of a 24-byte run of
// class members, from every start, and random buffers.
func TestScanWordsMatchBytes(t *testing.T) {
	scanners := []struct {
		name  string
		class *[256]bool
		scan  func([]byte, int) int
	}{
		{"field", &fieldChar, scanField},
		{"target", &targetChar, scanTarget},
		{"token", &tokenChar, scanToken},
	}
	for _, s := range scanners {
		for c := 0; c < 256; c++ {
			for pos := 0; pos < 24; pos++ {
				b := []byte("abcdefghijklmnopqrstuvwx")
				b[pos] = byte(c)
				for start := 0; start <= len(b); start++ {
					if got, want := s.scan(b, start), slowScan(s.class, b, start); got != want {
						t.Fatalf("%s: byte %#x at %d, start %d: %d; want %d", s.name, c, pos, start, got, want)
					}
				}
			}
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for n := 0; n < 20000; n++ {
			b := make([]byte, rng.IntN(40))
			for i := range b {
				if rng.IntN(8) == 0 {
					b[i] = byte(rng.IntN(256))
				} else {
					b[i] = byte(0x21 + rng.IntN(0x5e))
				}
			}
			start := 0
			if len(b) > 0 {
				start = rng.IntN(len(b) + 1)
			}
			if got, want := s.scan(b, start), slowScan(s.class, b, start); got != want {
				t.Fatalf("%s: %q from %d: %d; want %d", s.name, b, start, got, want)
			}
		}
	}
}

// TestCtlMaskExact: ctlMask flags exactly the control characters, every
// byte on its own, whatever its neighbours (scanField relies on every
// flag, not only the lowest).
func TestCtlMaskExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for c := 0; c < 256; c++ {
		for lane := 0; lane < 8; lane++ {
			for n := 0; n < 64; n++ {
				x := rng.Uint64()
				x = x&^(0xff<<(8*lane)) | uint64(c)<<(8*lane)
				m := ctlMask(x)
				for k := 0; k < 8; k++ {
					b := byte(x >> (8 * k))
					want := b < 0x20 || b == 0x7f
					if got := m>>(8*k)&0xff == 0x80; got != want || m>>(8*k)&0x7f != 0 {
						t.Fatalf("ctlMask(%#016x) = %#016x: byte %d (%#02x) flagged %v", x, m, k, b, got)
					}
				}
			}
		}
	}
}

// TestScanFieldTabs: HTAB is skipped wherever it falls in a word, however
// many there are, in full words and in the overlapping last one.
func TestScanFieldTabs(t *testing.T) {
	for n := 1; n <= 20; n++ {
		for mask := 0; mask < 1<<min(n, 10); mask++ {
			b := make([]byte, n)
			for i := range b {
				b[i] = 'a'
				if mask>>(i%10)&1 == 1 {
					b[i] = '\t'
				}
			}
			for start := 0; start <= n; start++ {
				if got, want := scanField(b, start), slowScan(&fieldChar, b, start); got != want {
					t.Fatalf("%q from %d: %d; want %d", b, start, got, want)
				}
				b2 := append(append([]byte(nil), b...), '\r')
				if got, want := scanField(b2, start), slowScan(&fieldChar, b2, start); got != want {
					t.Fatalf("%q from %d: %d; want %d", b2, start, got, want)
				}
			}
		}
	}
}

// TestEqualLowerMatchesFold: for every name and option the parser looks
// for, equalLower agrees with equalFold on every input without CR: each
// byte value at each position, in either case, and every length around.
func TestEqualLowerMatchesFold(t *testing.T) {
	for _, s := range []string{"host", "expect", "connection", "content-length", "transfer-encoding", "close", "keep-alive", "chunked"} {
		for pos := 0; pos < len(s); pos++ {
			for c := 0; c < 256; c++ {
				if c == '\r' {
					continue
				}
				for _, upper := range []bool{false, true} {
					b := []byte(s)
					if upper {
						b = []byte(strings.ToUpper(s))
					}
					b[pos] = byte(c)
					if got, want := equalLower(b, s), equalFold(b, s); got != want {
						t.Fatalf("equalLower(%q, %q) = %v, equalFold %v", b, s, got, want)
					}
				}
			}
		}
		for n := 0; n <= len(s)+1; n++ {
			b := []byte(strings.Repeat("a", n))
			if n <= len(s) {
				copy(b, s[:n])
			}
			if got, want := equalLower(b, s), equalFold(b, s); got != want {
				t.Fatalf("equalLower(%q, %q) = %v, equalFold %v", b, s, got, want)
			}
		}
	}
}

// TestAlnumMaskExact: alnumMask flags exactly the letters, digits and '-',
// every byte on its own, whatever its neighbours.
func TestAlnumMaskExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for c := 0; c < 256; c++ {
		for lane := 0; lane < 8; lane++ {
			for n := 0; n < 64; n++ {
				x := rng.Uint64()
				x = x&^(0xff<<(8*lane)) | uint64(c)<<(8*lane)
				m := alnumMask(x)
				for k := 0; k < 8; k++ {
					b := byte(x >> (8 * k))
					want := 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '-'
					if got := m>>(8*k)&0xff == 0x80; got != want || m>>(8*k)&0x7f != 0 {
						t.Fatalf("alnumMask(%#016x) = %#016x: byte %d (%#02x) flagged %v", x, m, k, b, got)
					}
				}
			}
		}
	}
}

// TestByteMaskExact: byteMask flags exactly the bytes equal to c, every
// byte on its own.
func TestByteMaskExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []byte{' ', ':', 0, 0x7f, 0x80, 0xff} {
		for v := 0; v < 256; v++ {
			for lane := 0; lane < 8; lane++ {
				for n := 0; n < 16; n++ {
					x := rng.Uint64()
					x = x&^(0xff<<(8*lane)) | uint64(v)<<(8*lane)
					m := byteMask(x, c)
					for k := 0; k < 8; k++ {
						b := byte(x >> (8 * k))
						if got := m>>(8*k)&0xff == 0x80; got != (b == c) || m>>(8*k)&0x7f != 0 {
							t.Fatalf("byteMask(%#016x, %#02x) = %#016x: byte %d (%#02x) flagged %v", x, c, m, k, b, got)
						}
					}
				}
			}
		}
	}
}
