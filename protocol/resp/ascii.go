package resp

import "math"

// EqualFold reports whether arg equals name under ASCII case folding, the
// way redis-server matches command names and options ("get", "GET", "Px").
// It does not allocate. Non-ASCII bytes must match exactly.
func EqualFold(arg []byte, name string) bool {
	if len(arg) != len(name) {
		return false
	}
	for i := 0; i < len(arg); i++ {
		a, b := arg[i], name[i]
		if a == b {
			continue
		}
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

// ParseInt parses arg as a base-10 int64 with redis's string2ll syntax: an
// optional '-', digits without leading zeros ("0" alone is allowed, "-0",
// "+1", " 1" and "" are not), within the int64 range. ok is false for
// anything else. It does not allocate; use it for INCRBY amounts, PX
// milliseconds and the like.
func ParseInt(arg []byte) (v int64, ok bool) {
	if len(arg) == 0 || len(arg) > maxLenDigits+1 {
		return 0, false
	}
	neg := arg[0] == '-'
	digits := arg
	if neg {
		digits = arg[1:]
	}
	if len(digits) == 0 || len(digits) > maxLenDigits || digits[0] == '0' && len(digits) > 1 {
		return 0, false
	}
	var u uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0') // 19 digits cannot overflow uint64
	}
	switch {
	case neg && u == 0:
		return 0, false
	case neg && u <= math.MaxInt64+1:
		return int64(-u), true // -u wraps to the two's complement value
	case !neg && u <= math.MaxInt64:
		return int64(u), true
	}
	return 0, false
}
