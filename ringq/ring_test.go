package ringq_test

import (
	"testing"

	"github.com/sluicenet/sluice/ringq"
)

func TestRoundCapacity(t *testing.T) {
	tests := []struct{ in, want int }{
		{-7, 1}, {0, 1}, {1, 1}, {2, 2}, {3, 4}, {4, 4}, {5, 8},
		{1000, 1024}, {1024, 1024}, {1025, 2048},
		{ringq.MaxCapacity - 1, ringq.MaxCapacity}, {ringq.MaxCapacity, ringq.MaxCapacity},
		{ringq.MaxCapacity + 1, ringq.MaxCapacity}, {int(^uint(0) >> 1), ringq.MaxCapacity},
	}
	for i, tt := range tests {
		if got := ringq.RoundCapacity(tt.in); got != tt.want {
			t.Errorf("%d: RoundCapacity(%d) = %d, want %d", i, tt.in, got, tt.want)
		}
	}
}

func TestNewCap(t *testing.T) {
	tests := []struct{ in, want int }{{0, 1}, {1, 1}, {3, 4}, {8, 8}, {9, 16}}
	for i, tt := range tests {
		r := ringq.New[int](tt.in)
		if r.Cap() != tt.want || r.Len() != 0 || !r.Empty() || r.Full() {
			t.Errorf("%d: New(%d): Cap=%d Len=%d Empty=%v Full=%v, want Cap=%d empty",
				i, tt.in, r.Cap(), r.Len(), r.Empty(), r.Full(), tt.want)
		}
		var e ringq.Ring[int]
		e.Init(tt.in)
		if e.Cap() != tt.want {
			t.Errorf("%d: Init(%d): Cap=%d, want %d", i, tt.in, e.Cap(), tt.want)
		}
	}
}

func TestZeroRing(t *testing.T) {
	var r ringq.Ring[int]
	if r.Cap() != 0 || r.Len() != 0 || !r.Empty() || !r.Full() {
		t.Fatalf("zero Ring: Cap=%d Len=%d Empty=%v Full=%v", r.Cap(), r.Len(), r.Empty(), r.Full())
	}
	if r.Push(1) {
		t.Error("zero Ring: Push succeeded")
	}
	if _, ok := r.Pop(); ok {
		t.Error("zero Ring: Pop succeeded")
	}
	if _, ok := r.Peek(); ok {
		t.Error("zero Ring: Peek succeeded")
	}
	if p := r.At(0); p != nil {
		t.Error("zero Ring: At(0) != nil")
	}
	r.Reset() // must not panic
}

// op is one step of a scripted table test.
type op struct {
	kind  byte // 'u' push, 'o' pop, 'k' peek, 'a' peekAt, 'r' reset
	v     int  // value to push, or index for peekAt
	want  int  // expected value (pop, peek, peekAt)
	ok    bool // expected success
	wantN int  // expected Len after the op
}

func TestScript(t *testing.T) {
	tests := []struct {
		name string
		cap  int
		ops  []op
	}{
		{"fill and drain", 2, []op{
			{'u', 1, 0, true, 1}, {'u', 2, 0, true, 2}, {'u', 3, 0, false, 2},
			{'o', 0, 1, true, 1}, {'o', 0, 2, true, 0}, {'o', 0, 0, false, 0},
		}},
		{"wraparound", 3, []op{ // capacity 4
			{'u', 1, 0, true, 1}, {'u', 2, 0, true, 2}, {'u', 3, 0, true, 3},
			{'o', 0, 1, true, 2}, {'o', 0, 2, true, 1},
			{'u', 4, 0, true, 2}, {'u', 5, 0, true, 3}, {'u', 6, 0, true, 4}, {'u', 7, 0, false, 4},
			{'k', 0, 3, true, 4}, {'a', 3, 6, true, 4}, {'a', 4, 0, false, 4}, {'a', -1, 0, false, 4},
			{'o', 0, 3, true, 3}, {'o', 0, 4, true, 2}, {'o', 0, 5, true, 1}, {'o', 0, 6, true, 0},
			{'k', 0, 0, false, 0},
		}},
		{"reset keeps capacity", 2, []op{
			{'u', 1, 0, true, 1}, {'u', 2, 0, true, 2}, {'r', 0, 0, true, 0},
			{'o', 0, 0, false, 0}, {'u', 9, 0, true, 1}, {'a', 0, 9, true, 1},
		}},
		{"capacity one", 1, []op{
			{'u', 5, 0, true, 1}, {'u', 6, 0, false, 1}, {'k', 0, 5, true, 1},
			{'o', 0, 5, true, 0}, {'u', 6, 0, true, 1}, {'o', 0, 6, true, 0},
		}},
	}
	for _, tt := range tests {
		r := ringq.New[int](tt.cap)
		for i, o := range tt.ops {
			var got int
			var ok bool
			switch o.kind {
			case 'u':
				ok = r.Push(o.v)
			case 'o':
				got, ok = r.Pop()
			case 'k':
				got, ok = r.Peek()
			case 'a':
				got, ok = r.PeekAt(o.v)
			case 'r':
				r.Reset()
				ok = true
			}
			if ok != o.ok || got != o.want || r.Len() != o.wantN {
				t.Errorf("%s: op %d (%c %d): got (%d, %v) Len=%d, want (%d, %v) Len=%d",
					tt.name, i, o.kind, o.v, got, ok, r.Len(), o.want, o.ok, o.wantN)
			}
		}
	}
}

func TestAtModifiesInPlace(t *testing.T) {
	r := ringq.New[int](4)
	for i := range 4 {
		r.Push(i)
	}
	r.Pop()
	r.Push(4) // wraps
	for i := range r.Len() {
		p := r.At(i)
		if p == nil {
			t.Fatalf("%d: At returned nil", i)
		}
		*p *= 10
	}
	for i := range r.Len() {
		if v, _ := r.PeekAt(i); v != (i+1)*10 {
			t.Errorf("%d: PeekAt = %d, want %d", i, v, (i+1)*10)
		}
	}
	for i, idx := range []int{-1, 4, 100} {
		if r.At(idx) != nil {
			t.Errorf("%d: At(%d) != nil", i, idx)
		}
	}
}

func TestPopZeroesSlot(t *testing.T) {
	r := ringq.New[*int](2)
	a, b, c := new(int), new(int), new(int)
	r.Push(a)
	r.Push(b)
	if v, _ := r.Pop(); v != a {
		t.Fatal("Pop returned the wrong element")
	}
	r.Push(c)
	r.Pop()
	for i, s := range ringq.Slots(r) {
		want := (*int)(nil)
		if s == c {
			want = c
		}
		if s != want {
			t.Errorf("slot %d still references a popped element", i)
		}
	}
	r.Reset()
	for i, s := range ringq.Slots(r) {
		if s != nil {
			t.Errorf("slot %d not zeroed by Reset", i)
		}
	}
}

func TestInitDiscards(t *testing.T) {
	r := ringq.New[int](2)
	r.Push(1)
	r.Init(8)
	if r.Len() != 0 || r.Cap() != 8 || ringq.Head(r) != 0 {
		t.Fatalf("after Init(8): Len=%d Cap=%d", r.Len(), r.Cap())
	}
}

func TestNoAllocs(t *testing.T) {
	r := ringq.New[[4]*int](16)
	p := new(int)
	allocs := testing.AllocsPerRun(100, func() {
		for range 16 {
			r.Push([4]*int{p})
		}
		for r.At(0) != nil {
			r.Pop()
		}
		r.Push([4]*int{p})
		r.Reset()
	})
	if allocs != 0 {
		t.Fatalf("Push/Pop/Reset allocated %.1f times per run, want 0", allocs)
	}
}
