package http1

import (
	"math/rand/v2"
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
