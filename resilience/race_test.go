//go:build race

package resilience

// raceEnabled: the race detector is on; it slows the long single-goroutine
// simulations tenfold, so their reference rows are cut short.
const raceEnabled = true
