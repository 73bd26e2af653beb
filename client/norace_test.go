//go:build !race

package client

// raceEnabled: the race detector is off, so allocation tests run.
const raceEnabled = false
