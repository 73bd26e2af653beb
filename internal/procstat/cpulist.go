package procstat

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseCPUList parses a CPU list such as "1", "0,2" or "0-3".
func ParseCPUList(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("%w: %q", ErrInvalidCPUList, s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("%w: %q", ErrInvalidCPUList, s)
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %q is empty", ErrInvalidCPUList, s)
	}
	return out, nil
}
