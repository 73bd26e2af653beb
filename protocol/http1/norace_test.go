//go:build !race

package http1

// raceEnabled: the race detector is off, so allocation tests run.
const raceEnabled = false
