//go:build !race

package uring_test

// raceEnabled: the race detector is off, so allocation tests run.
const raceEnabled = false
