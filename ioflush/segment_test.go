package ioflush_test

import (
	"errors"
	"testing"

	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/ringq"
	"github.com/valyala/bytebufferpool"
)

func TestResultString(t *testing.T) {
	tests := []struct {
		r    ioflush.Result
		want string
	}{
		{ioflush.Flushed, "flushed"},
		{ioflush.WouldBlock, "would-block"},
		{ioflush.BudgetSpent, "budget-spent"},
		{ioflush.Result(7), "Result(7)"},
	}
	for i, tt := range tests {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("%d: String() = %q, want %q", i, got, tt.want)
		}
	}
}

func TestErrUnsupported(t *testing.T) {
	if !errors.Is(ioflush.ErrUnsupported, errors.ErrUnsupported) {
		t.Error("ErrUnsupported does not match errors.ErrUnsupported")
	}
	for i, err := range []error{ioflush.ErrUnsupported, ioflush.ErrInvalidWrite} {
		if msg := err.Error(); len(msg) < 8 || msg[:8] != "sluice: " {
			t.Errorf("%d: message %q lacks the sluice: prefix", i, msg)
		}
	}
}

func TestReleaseOnce(t *testing.T) {
	frees := 0
	p := bytebufferpool.Get()
	p.B = append(p.B, "hello"...)
	s := ioflush.Segment{Buf: p.B[1:], Pooled: p, Free: func() { frees++ }}
	s.Release()
	if frees != 1 {
		t.Fatalf("Free ran %d times, want 1", frees)
	}
	if s.Buf != nil || s.Pooled != nil || s.Free != nil {
		t.Fatalf("Release left %+v, want the zero Segment", s)
	}
	if len(p.B) != 0 {
		t.Errorf("pooled buffer not reset by bytebufferpool.Put: len %d", len(p.B))
	}
	s.Release()
	if frees != 1 {
		t.Fatalf("second Release ran Free again (%d)", frees)
	}
}

func TestReleaseReentrant(t *testing.T) {
	frees := 0
	var s ioflush.Segment
	s = ioflush.Segment{Buf: []byte("x"), Free: func() { frees++; s.Release() }}
	s.Release()
	if frees != 1 {
		t.Fatalf("Free ran %d times, want 1", frees)
	}
}

func TestConsume(t *testing.T) {
	tests := []struct {
		sizes    []int
		written  int
		wantLeft []int
		wantRel  int
	}{
		{[]int{10, 20}, 0, []int{10, 20}, 0},
		{[]int{10, 20}, 5, []int{5, 20}, 0},
		{[]int{10, 20}, 10, []int{20}, 1},
		{[]int{10, 20}, 29, []int{1}, 1},
		{[]int{10, 20}, 30, []int{}, 2},
		{[]int{0, 0, 10}, 0, []int{10}, 2},
		{[]int{10, 0, 0, 5}, 10, []int{5}, 3},
		{[]int{10, 0}, 10, []int{}, 2},
		{[]int{}, 0, []int{}, 0},
	}
	for i, tt := range tests {
		q := ringq.New[ioflush.Segment](8)
		rel := 0
		for _, n := range tt.sizes {
			q.Push(ioflush.Segment{Buf: make([]byte, n), Free: func() { rel++ }})
		}
		ioflush.Consume(q, tt.written)
		if got := lens(q); !equalInts(got, tt.wantLeft) || rel != tt.wantRel {
			t.Errorf("%d: consume(%v, %d): left %v released %d, want %v released %d",
				i, tt.sizes, tt.written, got, rel, tt.wantLeft, tt.wantRel)
		}
	}
}

func TestDrop(t *testing.T) {
	q := ringq.New[ioflush.Segment](4)
	rel := make([]int, 4)
	for i := range rel {
		p := bytebufferpool.Get()
		p.B = append(p.B, "abcdef"...)
		q.Push(ioflush.Segment{Buf: p.B, Pooled: p, Free: func() { rel[i]++ }})
	}
	ioflush.Consume(q, 8) // one released, the next advanced
	ioflush.Drop(q)
	if !q.Empty() {
		t.Fatalf("Drop left %d segments", q.Len())
	}
	for i, n := range rel {
		if n != 1 {
			t.Errorf("segment %d released %d times, want 1", i, n)
		}
	}
	ioflush.Drop(q)   // empty: nothing happens
	ioflush.Drop(nil) // ignored
}

func lens(q *ringq.Ring[ioflush.Segment]) []int {
	out := []int{}
	for i := range q.Len() {
		out = append(out, len(q.At(i).Buf))
	}
	return out
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
