//go:build race

package client

// raceEnabled: the race detector is on (its bookkeeping allocates), so the
// allocation tests skip; `make allocs` runs them without it.
const raceEnabled = true
