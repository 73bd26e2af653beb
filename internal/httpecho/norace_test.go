//go:build !race

package httpecho

const raceEnabled = false
