package ringq_test

import (
	"testing"

	"github.com/sluicenet/sluice/ringq"
)

// segment is shaped like ioflush.Segment (a slice, a pointer and a func), so
// the benchmarks move the element size the engine uses.
type segment struct {
	buf  []byte
	p    *int
	free func()
}

func BenchmarkPushPop(b *testing.B) {
	r := ringq.New[segment](64)
	s := segment{buf: make([]byte, 8), p: new(int), free: func() {}}
	b.ReportAllocs()
	for b.Loop() {
		r.Push(s)
		r.Pop()
	}
}

func BenchmarkPushPopInt(b *testing.B) {
	r := ringq.New[int](64)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.Push(i)
		r.Pop()
	}
}

// BenchmarkFillDrain pushes to full and pops to empty; ns/op is per element.
func BenchmarkFillDrain(b *testing.B) {
	const n = 1024
	r := ringq.New[segment](n)
	s := segment{buf: make([]byte, 8), p: new(int), free: func() {}}
	b.ReportAllocs()
	for b.Loop() {
		for range n {
			r.Push(s)
		}
		for range n {
			r.Pop()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/elem")
}
