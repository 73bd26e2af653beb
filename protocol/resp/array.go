package resp

import "math"

// lenStatus is the outcome of reading a "*N\r\n" or "$N\r\n" length line.
type lenStatus uint8

const (
	lenOK   lenStatus = iota // v and next are set
	lenMore                  // every byte so far is valid; the line is incomplete
	lenBad                   // not a canonical integer, or no CRLF after it
	lenBig                   // the digits so far already exceed max
)

// maxLenDigits is the number of decimal digits of math.MaxInt64.
const maxLenDigits = 19

// readLen reads a length line starting at buf[i] (just after '*' or '$'):
// an optional '-', decimal digits without leading zeros ("0" alone is
// allowed, "-0" is not), then CRLF, the integer syntax redis's string2ll
// accepts. A value above max is reported as lenBig as soon as its digits
// prove it, before the line is complete. next is the index after the LF.
func readLen(buf []byte, i int, max int64) (v int64, next int, st lenStatus) {
	neg := false
	if i < len(buf) && buf[i] == '-' {
		neg = true
		i++
	}
	start := i
	for ; i < len(buf); i++ {
		c := buf[i]
		if c >= '0' && c <= '9' {
			if i > start && buf[start] == '0' {
				return 0, 0, lenBad // leading zero
			}
			d := int64(c - '0')
			if v > (math.MaxInt64-d)/10 {
				return 0, 0, lenBad // overflows int64
			}
			v = v*10 + d
			if !neg && v > max {
				return 0, 0, lenBig
			}
			continue
		}
		if c != '\r' || i == start || (neg && v == 0) {
			return 0, 0, lenBad
		}
		if i+1 == len(buf) {
			return 0, 0, lenMore
		}
		if buf[i+1] != '\n' {
			return 0, 0, lenBad
		}
		if neg {
			v = -v
		}
		return v, i + 2, lenOK
	}
	return 0, 0, lenMore
}

// scanArray walks an array command ("*N\r\n" then N bulk strings) at the
// start of buf. n == 0 && err == nil means more input is needed. Like
// redis-server, a count of zero or below is an empty command.
func scanArray(buf []byte, lim *limits, args [][]byte, collect bool) (n int, out [][]byte, err error) {
	count, pos, st := readLen(buf, 1, int64(lim.maxArgs))
	switch st {
	case lenMore:
		return 0, args, nil
	case lenBad:
		return 0, args, ErrInvalidMultibulkLength
	case lenBig:
		return 0, args, ErrTooManyArgs
	}
	if pos > lim.maxCmd {
		return 0, args, ErrCommandTooLarge
	}
	out = args
	for k := int64(0); k < count; k++ {
		if pos >= len(buf) {
			return 0, args, nil
		}
		if buf[pos] != '$' {
			return 0, args, ErrExpectedDollar
		}
		size, next, st := readLen(buf, pos+1, int64(lim.maxBulk))
		switch {
		case st == lenMore:
			return 0, args, nil
		case st == lenBig:
			return 0, args, ErrBulkTooLarge
		case st == lenBad || size < 0:
			return 0, args, ErrInvalidBulkLength
		}
		// size <= maxBulk <= MaxInt; the subtraction cannot overflow and
		// goes negative (so any size fails) once next is past the limit.
		if size > int64(lim.maxCmd-next-2) {
			return 0, args, ErrCommandTooLarge
		}
		end := next + int(size)
		// Check the CRLF bytes that have arrived before waiting for the rest.
		if end < len(buf) && buf[end] != '\r' || end+1 < len(buf) && buf[end+1] != '\n' {
			return 0, args, ErrExpectedCRLF
		}
		if end+2 > len(buf) {
			return 0, args, nil
		}
		if collect {
			out = append(out, buf[next:end:end])
		}
		pos = end + 2
	}
	return pos, out, nil
}
