//go:build !race

package resilience

// raceEnabled: the race detector is off.
const raceEnabled = false
