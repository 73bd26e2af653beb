//go:build race

package protocol_test

// raceEnabled: the race detector is on (its bookkeeping allocates, and
// sync.Pool drops items at random), so allocation tests skip.
const raceEnabled = true
