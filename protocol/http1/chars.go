package http1

import (
	"encoding/binary"
	"math/bits"
)

// Byte classes from RFC 9110 section 5.6.2 (token) and 5.5 (field value),
// as lookup tables so the scanners do one load per byte.
var (
	// tokenChar: tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" /
	// "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA.
	tokenChar [256]bool
	// targetChar: the visible ASCII a request-target may hold (0x21-0x7e).
	targetChar [256]bool
	// fieldChar: field-vchar / SP / HTAB, where field-vchar = VCHAR /
	// obs-text (0x80-0xff). Everything else is a control character.
	fieldChar [256]bool
)

func init() {
	for c := 0; c < 256; c++ {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			tokenChar[c] = true
		}
		targetChar[c] = 0x21 <= c && c <= 0x7e
		fieldChar[c] = c == ' ' || c == '\t' || 0x21 <= c && c != 0x7f
	}
	for _, c := range []byte("!#$%&'*+-.^_`|~") {
		tokenChar[c] = true
	}
}

// lower folds an ASCII upper-case letter.
func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// equalFold reports whether b equals s under ASCII case folding (field
// names and Connection options are case-insensitive). It does not
// allocate.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if b[i] != s[i] && lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}

// equalLower reports whether b equals lower, lower-case letters and '-',
// under ASCII case folding, for a b that holds no CR (a token, or a field
// value, which ends at its CR): then b[i]|0x20 == lower[i] holds just for
// the letter in either case, and for '-' (the only other byte that folds
// to '-' is CR). The parser compares field names and options with it,
// eight bytes at a time.
func equalLower(b []byte, lower string) bool {
	n := len(b)
	if n != len(lower) {
		return false
	}
	const fold = ones * 0x20
	if n < 8 {
		for i := 0; i < n; i++ {
			if b[i]|0x20 != lower[i] {
				return false
			}
		}
		return true
	}
	for i := 0; i < n-8; i += 8 {
		if binary.LittleEndian.Uint64(b[i:])|fold != word(lower[i:]) {
			return false
		}
	}
	return binary.LittleEndian.Uint64(b[n-8:])|fold == word(lower[n-8:]) // overlaps the previous word
}

// word returns the first eight bytes of s as a little-endian word.
func word(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// trimOWS removes optional white space (SP, HTAB) from both ends.
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// Word-at-a-time scanning (SWAR): the bytes of a little-endian uint64 are
// tested eight at a time. Each mask below flags, with its high bit, the
// bytes of a class, every byte computed on its own (no carry or borrow
// crosses a byte), so every flag is exact and the lowest one is the first
// byte of the class. Names, values and targets are mostly plain ASCII, so
// the scanners skip most of the per-byte table loads.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// byteMask flags (with its high bit) exactly the bytes of x that equal c:
// on the 7-bit part of each byte of x^c, adding 0x7f sets the high bit
// unless the byte is zero, with no carry into the next byte.
func byteMask(x uint64, c byte) uint64 {
	const low7 = ones * 0x7f
	y := x ^ ones*uint64(c)
	return ^(y&low7 + low7 | y) & highs
}

// firstFlag returns the index of the byte the lowest flag of m marks.
func firstFlag(m uint64) int { return bits.TrailingZeros64(m) >> 3 }

// ctlMask flags exactly the bytes of x that are ASCII control characters
// (0x00-0x1f, 0x7f). Each byte is computed on its own, with no carry or
// borrow between bytes: y = (c&0x7f)+1, masked to 7 bits, maps 0x7f to 0
// and 0x00-0x1f to 1-0x20, the rest of ASCII to 0x21-0x7f; y+0x5f then
// has its high bit clear just for the control characters.
func ctlMask(x uint64) uint64 {
	const low7 = ones * 0x7f
	y := (x&low7 + ones) & low7
	return ^(y + ones*0x5f | x) & highs
}

// scanField returns the index of the first byte at or after i that is not
// a fieldChar (the CR ending the value, or an invalid byte): the first
// control character other than HTAB. It reads a word at a time, the last
// one overlapping the previous when fewer than eight bytes are left.
func scanField(b []byte, i int) int {
	for i+8 <= len(b) {
		if m := ctlMask(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			if j, ok := firstNotTab(b, i, m); ok {
				return j
			}
		}
		i += 8
	}
	if i < len(b) && len(b) >= 8 {
		last := len(b) - 8
		m := ctlMask(binary.LittleEndian.Uint64(b[last:])) >> (8 * (i - last)) // drop bytes before i
		if m != 0 {
			if j, ok := firstNotTab(b, i, m); ok {
				return j
			}
		}
		return len(b)
	}
	for i < len(b) && fieldChar[b[i]] {
		i++
	}
	return i
}

// firstNotTab returns the index of the first byte flagged in m, the
// control characters of the word at b[i:], that is not HTAB.
func firstNotTab(b []byte, i int, m uint64) (int, bool) {
	for ; m != 0; m &= m - 1 {
		if j := i + firstFlag(m); b[j] != '\t' {
			return j, true
		}
	}
	return 0, false
}

// scanTarget returns the index of the first byte at or after i that is not
// a targetChar (the SP ending the target, or an invalid byte): a control
// character, SP, or a byte above 0x7e.
func scanTarget(b []byte, i int) int {
	for i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:])
		if m := x&highs | ctlMask(x) | byteMask(x, ' '); m != 0 {
			return i + firstFlag(m)
		}
		i += 8
	}
	for i < len(b) && targetChar[b[i]] {
		i++
	}
	return i
}

// alnumMask flags exactly the bytes of x that are ASCII letters, digits
// or '-', the bytes of nearly every method and field name. As in ctlMask,
// every byte is computed on its own: on 7-bit values, each sum below stays
// under 0x100, and its high bit answers one comparison.
func alnumMask(x uint64) uint64 {
	const low7 = ones * 0x7f
	y := x & low7
	l := y | ones*0x20 // letters in lower case
	letter := (l + ones*(0x80-'a')) &^ (l + ones*(0x80-'z'-1))
	digit := (y + ones*(0x80-'0')) &^ (y + ones*(0x80-'9'-1))
	dash := ^((y ^ ones*'-') + low7)
	return (letter | digit | dash) &^ x & highs
}

// scanToken returns the index of the first byte at or after i that is not
// a tokenChar. It skips letters, digits and '-' a word at a time; the byte
// loop decides from the first other byte on (the SP or ':' that ends the
// token, or a rarer token character).
func scanToken(b []byte, i int) int {
	for i+8 <= len(b) {
		if m := ^alnumMask(binary.LittleEndian.Uint64(b[i:])) & highs; m != 0 {
			i += firstFlag(m)
			break
		}
		i += 8
	}
	for i < len(b) && tokenChar[b[i]] {
		i++
	}
	return i
}
