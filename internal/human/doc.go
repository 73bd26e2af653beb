// Package human formats the load generator's and the comparison lab's
// numbers for people: rates with k and M suffixes, latencies in µs or ms.
// It owns formatting only; it refuses to own any number's meaning.
package human
