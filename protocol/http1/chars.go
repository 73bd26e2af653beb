package http1

import "encoding/binary"

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
// tested eight at a time, and the byte loop takes over at the first word
// that may hold a byte outside the class. Values and targets are mostly
// plain ASCII, so this skips most of the per-byte table loads.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// hasLess reports whether some byte of x that is below 0x80 is below n
// (n <= 0x80): the classic "haszero(x - n)" bit trick.
func hasLess(x uint64, n byte) bool {
	return (x-ones*uint64(n))&^x&highs != 0
}

// hasByte reports whether some byte of x equals c.
func hasByte(x uint64, c byte) bool {
	y := x ^ ones*uint64(c)
	return (y-ones)&^y&highs != 0
}

// scanField returns the index of the first byte at or after i that is not
// a fieldChar (the CR ending the value, or an invalid byte).
func scanField(b []byte, i int) int {
	for i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:])
		if hasLess(x, 0x20) || hasByte(x, 0x7f) {
			break
		}
		i += 8
	}
	for i < len(b) && fieldChar[b[i]] {
		i++
	}
	return i
}

// scanTarget returns the index of the first byte at or after i that is not
// a targetChar (the SP ending the target, or an invalid byte).
func scanTarget(b []byte, i int) int {
	for i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:])
		if x&highs != 0 || hasLess(x, 0x21) || hasByte(x, 0x7f) {
			break
		}
		i += 8
	}
	for i < len(b) && targetChar[b[i]] {
		i++
	}
	return i
}
