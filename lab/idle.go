package lab

import "fmt"

// IdleResult is a server's resident memory with many idle connections.
type IdleResult struct {
	Server string `json:"server"`
	// Conns is how many connections were open during the measurement.
	Conns int    `json:"conns"`
	Error string `json:"error,omitempty"`
	// BaseRSSKiB is VmRSS before connecting; IdleRSSKiB with every connection
	// accepted and idle; EchoedRSSKiB after one 64-byte echo on each (a server
	// that allocates per-connection buffers lazily shows it here).
	BaseRSSKiB   int64 `json:"base_rss_kib"`
	IdleRSSKiB   int64 `json:"idle_rss_kib"`
	EchoedRSSKiB int64 `json:"echoed_rss_kib"`
	// Per connection: (IdleRSSKiB - BaseRSSKiB) / Conns and likewise after
	// the echo.
	IdleKiBPerConn   float64 `json:"idle_kib_per_conn"`
	EchoedKiBPerConn float64 `json:"echoed_kib_per_conn"`
}

// line is a one-line summary for the progress output.
func (r IdleResult) line() string {
	if r.Error != "" {
		return "failed: " + r.Error
	}
	return fmt.Sprintf("%d conns: %.2f KiB/conn idle, %.2f KiB/conn after one echo", r.Conns, r.IdleKiBPerConn, r.EchoedKiBPerConn)
}
