//go:build race

package resp_test

// raceEnabled: whether the race detector is on (its bookkeeping
// allocates, so allocation checks skip).
const raceEnabled = true
