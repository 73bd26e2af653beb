//go:build race

package http1

// raceEnabled: the race detector is on (its bookkeeping allocates, and
// sync.Pool drops items at random), so allocation tests skip.
const raceEnabled = true
