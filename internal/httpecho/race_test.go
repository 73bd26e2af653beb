//go:build race

package httpecho

const raceEnabled = true
