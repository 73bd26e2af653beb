//go:build race

package uring_test

// raceEnabled: the race detector is on (its bookkeeping allocates), so
// allocation tests skip.
const raceEnabled = true
