//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package uring_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicenet/sluice/internal/uring"
)

// BenchmarkEchoCycle measures one echo over loopback through the ring:
// the client's write, the loop's turns (multishot recv into a provided
// buffer, send from it, recycle), the client's read. Client and loop share
// the goroutine, so ns/op is the whole round trip, both sides' system calls
// included.
func BenchmarkEchoCycle(b *testing.B) {
	for _, size := range []int{64, 1024} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			g := newEchoRig(b, size)
			g.cycle(b)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				g.cycle(b)
			}
		})
	}
}

// BenchmarkNop measures the ring's own overhead per operation: prepare a
// no-op, submit and wait with one io_uring_enter, reap it.
func BenchmarkNop(b *testing.B) {
	for _, batch := range []int{1, 32} {
		b.Run(fmt.Sprintf("batch%d", batch), func(b *testing.B) {
			r := newRing(b, uring.Config{Entries: 64})
			var cqes [64]uring.CQE
			b.ReportAllocs()
			for b.Loop() {
				for range batch {
					if _, err := r.PrepNop(1); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := r.SubmitAndWait(batch, time.Second); err != nil {
					b.Fatal(err)
				}
				n := r.PeekBatch(cqes[:])
				r.Advance(n)
				if n != batch {
					b.Fatalf("reaped %d of %d", n, batch)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/nop")
		})
	}
}
