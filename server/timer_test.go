package server

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// popAll pops every timer due at now, returning their deadlines in order.
func popAll(th *timerHeap, now int64) []int64 {
	var got []int64
	for t := th.popDue(now); t != nil; t = th.popDue(now) {
		got = append(got, t.at)
	}
	return got
}

func newTimers(n int) []*timer {
	ts := make([]*timer, n)
	for i := range ts {
		ts[i] = &timer{idx: -1}
	}
	return ts
}

func TestTimerHeapTable(t *testing.T) {
	// time passed in: t0 = 0, deadlines in ns of the loop clock
	ts := newTimers(5)
	var th timerHeap
	for i, at := range []int64{50, 10, 40, 20, 30} {
		th.set(ts[i], at)
	}
	th.set(ts[0], 5)  // move earlier: 5
	th.set(ts[2], 45) // move later: 45
	th.remove(ts[3])  // cancel 20
	th.remove(ts[3])  // cancelling twice is harmless
	steps := []struct {
		now  int64
		want []int64
	}{
		{0, nil},
		{5, []int64{5}},
		{29, []int64{10}},
		{30, []int64{30}},
		{44, nil},
		{100, []int64{45}},
		{200, nil},
	}
	for i, s := range steps {
		if got := popAll(&th, s.now); !slices.Equal(got, s.want) {
			t.Errorf("step %d: popDue(%d) = %v, want %v", i, s.now, got, s.want)
		}
	}
	if th.len() != 0 || th.peek() != nil {
		t.Errorf("heap not empty: len %d", th.len())
	}
	for i, tm := range ts {
		if tm.queued() {
			t.Errorf("timer %d still queued (idx %d)", i, tm.idx)
		}
	}
}

// TestTimerHeapModel drives the heap with random set/remove/popDue against
// a plain map model.
func TestTimerHeapModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ts := newTimers(200)
	model := map[*timer]int64{}
	var th timerHeap
	now := int64(0)
	for step := 0; step < 20000; step++ {
		tm := ts[rng.IntN(len(ts))]
		switch op := rng.IntN(10); {
		case op < 5:
			at := now + rng.Int64N(1000)
			th.set(tm, at)
			model[tm] = at
		case op < 7:
			th.remove(tm)
			delete(model, tm)
		default:
			now += rng.Int64N(100)
			var want []int64
			for _, at := range model {
				if at <= now {
					want = append(want, at)
				}
			}
			slices.Sort(want)
			got := popAll(&th, now)
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: popDue(%d) = %v, want %v", step, now, got, want)
			}
			for k, at := range model {
				if at <= now {
					delete(model, k)
				}
			}
		}
		if th.len() != len(model) {
			t.Fatalf("step %d: len %d, model %d", step, th.len(), len(model))
		}
		for i, x := range th.h {
			if x.t.idx != i || x.t.at != x.at {
				t.Fatalf("step %d: h[%d] = {%d, idx %d at %d}", step, i, x.at, x.t.idx, x.t.at)
			}
			if i > 0 && th.h[(i-1)/heapArity].at > x.at {
				t.Fatalf("step %d: heap order broken at %d", step, i)
			}
		}
	}
}

// wheel is a hashed timing wheel (Varghese & Lauck), kept here only to
// measure the heap against it: O(1) set and remove, but every tick costs a
// slot scan, deadlines are rounded to the tick, and a deadline beyond one
// revolution costs a visit per revolution.
type wheel struct {
	tickNs int64
	slots  []wheelNode // list heads
	mask   int64
	cur    int64 // ticks processed
}

type wheelNode struct {
	at         int64
	prev, next *wheelNode
	linked     bool
}

func newWheel(tickNs int64, slots int) *wheel {
	w := &wheel{tickNs: tickNs, slots: make([]wheelNode, slots), mask: int64(slots - 1)}
	for i := range w.slots {
		w.slots[i].prev, w.slots[i].next = &w.slots[i], &w.slots[i]
	}
	return w
}

func (w *wheel) remove(n *wheelNode) {
	if n.linked {
		n.prev.next, n.next.prev = n.next, n.prev
		n.linked = false
	}
}

func (w *wheel) set(n *wheelNode, at int64) {
	w.remove(n)
	n.at = at
	tick := max(at/w.tickNs, w.cur)
	h := &w.slots[tick&w.mask]
	n.prev, n.next = h.prev, h
	h.prev.next, h.prev = n, n
	n.linked = true
}

// advance fires every node due at now.
func (w *wheel) advance(now int64, fire func(*wheelNode)) {
	for ; w.cur <= now/w.tickNs; w.cur++ {
		h := &w.slots[w.cur&w.mask]
		for n := h.next; n != h; {
			next := n.next
			if n.at <= now {
				w.remove(n)
				fire(n)
			}
			n = next
		}
	}
	w.cur = now / w.tickNs
}

// BenchmarkTimers compares the loop's timer pattern on the 4-ary heap and a
// hashed wheel (1 ms ticks, 4096 slots): 10,000 connections, each timer
// re-armed when it fires to now + 30 s ± 10 %, the clock advancing so that on
// average one timer fires per op. ns/op is the cost per fire + re-arm,
// including the wheel's empty ticks.
func BenchmarkTimers(b *testing.B) {
	const n = 10000
	const period = int64(30e9)
	step := period / n
	b.Run("heap4", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(3, 4))
		ts := newTimers(n)
		var th timerHeap
		for _, tm := range ts {
			th.set(tm, rng.Int64N(period))
		}
		now := int64(0)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			now += step
			for tm := th.popDue(now); tm != nil; tm = th.popDue(now) {
				th.set(tm, now+period-period/10+rng.Int64N(period/5))
			}
		}
	})
	b.Run("wheel", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(3, 4))
		w := newWheel(1e6, 4096)
		nodes := make([]wheelNode, n)
		for i := range nodes {
			w.set(&nodes[i], rng.Int64N(period))
		}
		now := int64(0)
		var due []*wheelNode
		collect := func(x *wheelNode) { due = append(due, x) }
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			now += step
			due = due[:0]
			w.advance(now, collect)
			for _, x := range due {
				w.set(x, now+period-period/10+rng.Int64N(period/5))
			}
		}
	})
}

// BenchmarkTimerChurn measures open/close churn: insert a timer and remove
// another one, 10,000 queued.
func BenchmarkTimerChurn(b *testing.B) {
	const n = 10000
	const period = int64(30e9)
	b.Run("heap4", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(5, 6))
		ts := newTimers(n)
		var th timerHeap
		for _, tm := range ts {
			th.set(tm, rng.Int64N(period))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			tm := ts[i%n]
			th.remove(tm)
			th.set(tm, rng.Int64N(period))
		}
	})
	b.Run("wheel", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(5, 6))
		w := newWheel(1e6, 4096)
		nodes := make([]wheelNode, n)
		for i := range nodes {
			w.set(&nodes[i], rng.Int64N(period))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			x := &nodes[i%n]
			w.remove(x)
			w.set(x, rng.Int64N(period))
		}
	})
}

func TestWheelModel(t *testing.T) {
	// the comparison is only fair if the wheel is correct
	rng := rand.New(rand.NewPCG(7, 8))
	w := newWheel(10, 16)
	nodes := make([]wheelNode, 50)
	model := map[*wheelNode]int64{}
	now := int64(0)
	for step := 0; step < 5000; step++ {
		x := &nodes[rng.IntN(len(nodes))]
		if rng.IntN(2) == 0 {
			at := now + rng.Int64N(500)
			w.set(x, at)
			model[x] = at
			continue
		}
		now += rng.Int64N(30)
		var got, want []int64
		w.advance(now, func(n *wheelNode) { got = append(got, n.at) })
		for k, at := range model {
			if at <= now {
				want = append(want, at)
				delete(model, k)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("step %d now %d: fired %v, want %v", step, now, got, want)
		}
	}
}
