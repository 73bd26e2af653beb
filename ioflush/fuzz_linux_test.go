package ioflush_test

import (
	"bytes"
	"testing"

	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/ringq"
	"github.com/valyala/bytebufferpool"
)

// FuzzFlush queues segments of fuzzed sizes (plain, pooled, some empty),
// flushes them with a fuzzed budget through a scripted writev whose answers
// (short writes, EAGAIN, EINTR, EPIPE) come from script, and between flushes
// appends to a pooled tail or pushes new segments, as an engine would. It
// asserts that the bytes the fake socket accepted equal the bytes queued, in
// order, that every Result agrees with the queue and the budget, that the
// iovec scratch is cleared, and that every segment is released exactly once
// (by Flush or, after an error, by Drop).
func FuzzFlush(f *testing.F) {
	f.Add([]byte{10, 20, 30}, uint16(0), []byte{})
	f.Add([]byte{250, 255, 0, 3}, uint16(100), []byte{3, 0x80, 1, 0, 2, 6, 7})
	f.Add([]byte{200, 1, 1, 0, 0, 9}, uint16(7), []byte{4, 0x10, 0x33, 5, 1, 0, 0x21, 6})
	f.Add(bytes.Repeat([]byte{1}, 1100), uint16(0), []byte{6, 0, 6, 3, 0x40})
	f.Add([]byte{9, 9, 9}, uint16(5), []byte{3, 0x41, 255})
	f.Fuzz(fuzzBody)
}

func fuzzBody(t *testing.T, sizes []byte, budget uint16, script []byte) {
	if len(sizes) > 3000 {
		sizes = sizes[:3000]
	}
	fl := &fuzzFlush{t: t, fw: &fakeWriter{t: t, record: true}}
	defer ioflush.SetWritev(fl.fw.writev)()
	fl.q = ringq.New[ioflush.Segment](len(sizes) + 64)
	for _, b := range sizes {
		if len(fl.want) > 256<<10 { // keep one iteration fast
			break
		}
		fl.push(b)
	}
	b := int(budget % 4097) // 0: no limit
	if b > 0 {
		b = max(b, len(fl.want)/1000) // keep one iteration to ~1000 flushes
	}
	fl.run(b, script)
}

type fuzzFlush struct {
	t    *testing.T
	fw   *fakeWriter
	q    *ringq.Ring[ioflush.Segment]
	f    ioflush.Flusher
	want []byte // every byte queued, in order
	rel  []int  // releases per segment
	// released counts releases so far; segment i must be the (i+1)th.
	released int
}

// push queues one segment whose size and kind come from b: below 200 it is b
// bytes, above it (b-200)*64 bytes; every third segment is pooled.
func (z *fuzzFlush) push(b byte) {
	n := int(b)
	if b >= 200 {
		n = int(b-200) * 64
	}
	data := pattern(len(z.want), n)
	z.want = append(z.want, data...)
	i := len(z.rel)
	z.rel = append(z.rel, 0)
	s := ioflush.Segment{Buf: data, Free: func() {
		// Segments leave the queue from the head, so releases come in
		// order; anything else is a double or early release.
		if i != z.released {
			z.t.Fatalf("segment %d released after %d releases", i, z.released)
		}
		z.rel[i]++
		z.released++
	}}
	if i%3 == 1 {
		s.Pooled = bytebufferpool.Get()
		s.Pooled.B = append(s.Pooled.B[:0], data...)
		s.Buf = s.Pooled.B
	}
	if !z.q.Push(s) {
		z.t.Fatalf("queue full at %d segments", z.q.Len())
	}
}

// appendTail grows a pooled tail segment by n bytes the way an engine does,
// keeping Buf a suffix of Pooled.B.
func (z *fuzzFlush) appendTail(n int) bool {
	tail := z.q.At(z.q.Len() - 1)
	if tail == nil || tail.Pooled == nil {
		return false
	}
	data := pattern(len(z.want), n)
	z.want = append(z.want, data...)
	off := len(tail.Pooled.B) - len(tail.Buf)
	tail.Pooled.B = append(tail.Pooled.B, data...)
	tail.Buf = tail.Pooled.B[off:]
	return true
}

// run flushes until the queue is empty or an error ends the connection.
// Each script byte scripts one writev answer (low 3 bits) and what the
// "engine" does after the Flush (high bits).
func (z *fuzzFlush) run(budget int, script []byte) {
	t := z.t
	for call := 0; ; call++ {
		if call > 100000 {
			t.Fatal("no progress after 100000 flushes")
		}
		var action byte
		z.fw.steps = z.fw.steps[:0]
		if call < len(script) {
			action = script[call] >> 3
			z.fw.steps = append(z.fw.steps, scriptStep(script[call]))
		}
		before := len(z.fw.sink)
		n, res, err := z.f.Flush(3, z.q, budget)
		if n != len(z.fw.sink)-before {
			t.Fatalf("call %d: n = %d, but %d bytes were accepted", call, n, len(z.fw.sink)-before)
		}
		if !bytes.Equal(z.fw.sink[before:], z.want[before:len(z.fw.sink)]) {
			t.Fatalf("call %d: bytes written are not the queued bytes in order", call)
		}
		if !ioflush.ScratchClear(&z.f) {
			t.Fatalf("call %d: iovec scratch still references buffers", call)
		}
		if budget > 0 && n > budget {
			t.Fatalf("call %d: wrote %d bytes, budget %d", call, n, budget)
		}
		if err != nil {
			ioflush.Drop(z.q)
			z.checkReleased(call, "after error")
			return
		}
		switch res {
		case ioflush.Flushed:
			if !z.q.Empty() {
				t.Fatalf("call %d: Flushed with %d segments queued", call, z.q.Len())
			}
		case ioflush.BudgetSpent:
			if budget <= 0 || n != budget || z.q.Empty() {
				t.Fatalf("call %d: BudgetSpent with n %d, budget %d, queue len %d", call, n, budget, z.q.Len())
			}
		case ioflush.WouldBlock:
			if z.q.Empty() {
				t.Fatalf("call %d: WouldBlock with an empty queue", call)
			}
		default:
			t.Fatalf("call %d: result %v", call, res)
		}
		// Segments popped so far are exactly the released ones (Free
		// checks the order, so counting suffices).
		if popped := len(z.rel) - z.q.Len(); z.released != popped {
			t.Fatalf("call %d: %d releases for %d popped segments", call, z.released, popped)
		}
		switch {
		case action&3 == 1 && call < len(script):
			z.appendTail(int(action >> 2))
		case action&3 == 2 && call < len(script) && !z.q.Full():
			z.push(action * 7)
		}
		if res == ioflush.Flushed && call >= len(script) {
			z.checkReleased(call, "at the end")
			if !bytes.Equal(z.fw.sink, z.want) {
				t.Fatalf("wrote %d bytes, queued %d", len(z.fw.sink), len(z.want))
			}
			return
		}
	}
}

// scriptStep maps a script byte to one writev answer.
func scriptStep(b byte) step {
	switch b & 7 {
	case 0:
		return eagain
	case 1:
		return eintr
	case 2:
		return step{accept: 0}
	case 3, 4:
		return step{accept: int(b >> 3)}
	case 5:
		return step{accept: int(b>>3) * 37}
	case 6:
		return all
	}
	if b == 255 {
		return epipe
	}
	return all
}

func (z *fuzzFlush) checkReleased(call int, when string) {
	for i, c := range z.rel {
		if c != 1 {
			z.t.Fatalf("call %d, %s: segment %d released %d times, want 1", call, when, i, c)
		}
	}
}
