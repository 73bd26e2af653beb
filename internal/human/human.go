package human

import (
	"fmt"
	"math"
)

// Rate formats a rate with a k or M suffix: 950, 85.2k, 1.26M.
func Rate(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.2fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// Micros formats microseconds as µs or ms: 12.3µs, 128µs, 4.10ms.
func Micros(us float64) string {
	switch {
	case math.IsNaN(us) || math.IsInf(us, 0):
		return "-"
	case us >= 1e4:
		return fmt.Sprintf("%.0fms", us/1e3)
	case us >= 1e3:
		return fmt.Sprintf("%.2fms", us/1e3)
	case us >= 100:
		return fmt.Sprintf("%.0fµs", us)
	}
	return fmt.Sprintf("%.1fµs", us)
}
