package ioflush_test

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/ringq"
	"golang.org/x/sys/unix"
)

func repeat(n, size int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = size
	}
	return s
}

func TestFlushScripted(t *testing.T) {
	const M = ioflush.MaxIovecs
	tests := []struct {
		name     string
		sizes    []int
		budget   int
		steps    []step
		wantN    int
		wantRes  ioflush.Result
		wantErr  error // errors.Is target, nil for none
		wantIovs []int // iovec count per writev call
		wantLeft []int // Buf lengths left in the queue
	}{
		{"all at once", []int{10, 20, 30}, 0, nil, 60, ioflush.Flushed, nil, []int{3}, []int{}},
		{"short write inside head", []int{10, 20, 30}, 0, []step{{accept: 5}}, 5, ioflush.WouldBlock, nil, []int{3}, []int{5, 20, 30}},
		{"short write inside second", []int{10, 20, 30}, 0, []step{{accept: 15}}, 15, ioflush.WouldBlock, nil, []int{3}, []int{15, 30}},
		{"short write on a boundary", []int{10, 20, 30}, 0, []step{{accept: 30}}, 30, ioflush.WouldBlock, nil, []int{3}, []int{30}},
		{"short write of zero bytes", []int{10}, 0, []step{{accept: 0}}, 0, ioflush.WouldBlock, nil, []int{1}, []int{10}},
		{"EAGAIN", []int{10, 20}, 0, []step{eagain}, 0, ioflush.WouldBlock, nil, []int{2}, []int{10, 20}},
		{"EINTR retried", []int{10, 20}, 0, []step{eintr, eintr}, 30, ioflush.Flushed, nil, []int{2, 2, 2}, []int{}},
		{"EINTR then short", []int{10, 20}, 0, []step{eintr, {accept: 12}}, 12, ioflush.WouldBlock, nil, []int{2, 2}, []int{18}},
		{"EINTR then EAGAIN", []int{10}, 0, []step{eintr, eagain}, 0, ioflush.WouldBlock, nil, []int{1, 1}, []int{10}},
		{"EPIPE", []int{10}, 0, []step{epipe}, 0, ioflush.Flushed, unix.EPIPE, []int{1}, []int{10}},
		{"EINTR then ECONNRESET", []int{10}, 0, []step{eintr, {errno: unix.ECONNRESET}}, 0, ioflush.Flushed, unix.ECONNRESET, []int{1, 1}, []int{10}},
		{"count above offered", []int{10, 20}, 0, []step{{over: true}}, 0, ioflush.Flushed, ioflush.ErrInvalidWrite, []int{2}, []int{10, 20}},
		{"budget splits the head", []int{300}, 100, nil, 100, ioflush.BudgetSpent, nil, []int{1}, []int{200}},
		{"budget ends mid segment", []int{60, 60}, 100, nil, 100, ioflush.BudgetSpent, nil, []int{2}, []int{20}},
		{"budget exactly drains", []int{60, 40}, 100, nil, 100, ioflush.Flushed, nil, []int{2}, []int{}},
		{"budget larger than queue", []int{60, 40}, 1000, nil, 100, ioflush.Flushed, nil, []int{2}, []int{}},
		{"short write under budget", []int{60, 60}, 100, []step{{accept: 70}}, 70, ioflush.WouldBlock, nil, []int{2}, []int{50}},
		{"EAGAIN under budget", []int{300}, 100, []step{eagain}, 0, ioflush.WouldBlock, nil, []int{1}, []int{300}},
		{"more than MaxIovecs", repeat(M+476, 1), 0, nil, M + 476, ioflush.Flushed, nil, []int{M, 476}, []int{}},
		{"more than MaxIovecs, then EAGAIN", repeat(M+476, 1), 0, []step{all, eagain}, M, ioflush.WouldBlock, nil, []int{M, 476}, repeat(476, 1)},
		{"more than MaxIovecs, then short", repeat(M+476, 1), 0, []step{all, {accept: 6}}, M + 6, ioflush.WouldBlock, nil, []int{M, 476}, repeat(470, 1)},
		{"more than MaxIovecs, then EPIPE", repeat(M+476, 1), 0, []step{all, epipe}, M, ioflush.Flushed, unix.EPIPE, []int{M, 476}, repeat(476, 1)},
		{"more than MaxIovecs, short first", repeat(M+476, 1), 0, []step{{accept: 1000}}, 1000, ioflush.WouldBlock, nil, []int{M}, repeat(500, 1)},
		{"budget stops at first batch", repeat(M+476, 1), M, nil, M, ioflush.BudgetSpent, nil, []int{M}, repeat(476, 1)},
		{"budget inside second batch", repeat(M+476, 1), 1200, nil, 1200, ioflush.BudgetSpent, nil, []int{M, 176}, repeat(300, 1)},
		{"budget inside first batch", repeat(M+476, 1), 10, nil, 10, ioflush.BudgetSpent, nil, []int{10}, repeat(M+466, 1)},
		{"empty segments skipped", []int{0, 10, 0, 0, 20, 0}, 0, nil, 30, ioflush.Flushed, nil, []int{2}, []int{}},
		{"empty segments behind a short write", []int{10, 0, 5}, 0, []step{{accept: 10}}, 10, ioflush.WouldBlock, nil, []int{2}, []int{5}},
		{"only empty segments", []int{0, 0}, 0, nil, 0, ioflush.Flushed, nil, []int{}, []int{}},
		{"empty queue", []int{}, 100, nil, 0, ioflush.Flushed, nil, []int{}, []int{}},
	}
	for _, tt := range tests {
		rel := make([]int, len(tt.sizes))
		q, want := queue(tt.sizes, rel)
		fw := &fakeWriter{t: t, steps: tt.steps, record: true}
		restore := ioflush.SetWritev(fw.writev)
		var f ioflush.Flusher
		n, res, err := f.Flush(3, q, tt.budget)
		restore()

		if n != tt.wantN || res != tt.wantRes {
			t.Errorf("%s: Flush = (%d, %v), want (%d, %v)", tt.name, n, res, tt.wantN, tt.wantRes)
		}
		switch {
		case tt.wantErr == nil && err != nil:
			t.Errorf("%s: unexpected error %v", tt.name, err)
		case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
			t.Errorf("%s: error %v, want errors.Is %v", tt.name, err, tt.wantErr)
		}
		var se *os.SyscallError
		if errors.As(err, &se) && se.Syscall != "writev" {
			t.Errorf("%s: error names syscall %q, want writev", tt.name, se.Syscall)
		}
		if !slices.Equal(fw.iovs, tt.wantIovs) && !(len(fw.iovs) == 0 && len(tt.wantIovs) == 0) {
			t.Errorf("%s: iovecs per call %v, want %v", tt.name, fw.iovs, tt.wantIovs)
		}
		if got := lens(q); !slices.Equal(got, tt.wantLeft) {
			t.Errorf("%s: left %v, want %v", tt.name, short(got), short(tt.wantLeft))
		}
		if !bytes.Equal(fw.sink, want[:len(fw.sink)]) || len(fw.sink) != n {
			t.Errorf("%s: wrote %d bytes (n=%d) that are not the queue's first bytes", tt.name, len(fw.sink), n)
		}
		if !ioflush.ScratchClear(&f) {
			t.Errorf("%s: iovec scratch still references buffers", tt.name)
		}
		checkReleases(t, tt.name, rel, len(tt.sizes)-q.Len())
	}
}

// checkReleases asserts that exactly the first k segments were released, once
// each.
func checkReleases(t testing.TB, name string, rel []int, k int) {
	t.Helper()
	for i, c := range rel {
		want := 0
		if i < k {
			want = 1
		}
		if c != want {
			t.Errorf("%s: segment %d released %d times, want %d", name, i, c, want)
			return
		}
	}
}

func short(s []int) any {
	if len(s) > 8 {
		return len(s)
	}
	return s
}

func TestFlushBudgetSplitsAcrossCalls(t *testing.T) {
	const size, budget = 10000, 1000
	rel := make([]int, 2)
	q, want := queue([]int{size, 5}, rel)
	fw := &fakeWriter{t: t, record: true}
	defer ioflush.SetWritev(fw.writev)()
	var f ioflush.Flusher
	for call := 0; ; call++ {
		n, res, err := f.Flush(3, q, budget)
		if err != nil {
			t.Fatalf("call %d: %v", call, err)
		}
		if n != min(budget, len(want)-call*budget) {
			t.Fatalf("call %d: n = %d", call, n)
		}
		if call < size/budget {
			wantRel := 0 // the head is released by the call that writes its last byte
			if call == size/budget-1 {
				wantRel = 1
			}
			if res != ioflush.BudgetSpent || rel[0] != wantRel {
				t.Fatalf("call %d: res %v, head released %d times, want BudgetSpent and %d", call, res, rel[0], wantRel)
			}
			continue
		}
		if res != ioflush.Flushed || call != size/budget {
			t.Fatalf("call %d: res %v, want Flushed on call %d", call, res, size/budget)
		}
		break
	}
	if !bytes.Equal(fw.sink, want) {
		t.Fatal("bytes written differ from bytes queued")
	}
	checkReleases(t, "split", rel, 2)
	for i, off := range fw.offered {
		if off > budget {
			t.Errorf("call %d offered %d bytes, more than the budget", i, off)
		}
	}
}

// TestFlushTailAppend appends to a pooled tail segment between flushes, as the
// engine may, and checks the appended bytes go out in order.
func TestFlushTailAppend(t *testing.T) {
	fw := &fakeWriter{t: t, steps: []step{{accept: 3}}, record: true}
	defer ioflush.SetWritev(fw.writev)()
	q := ringq.New[ioflush.Segment](4)
	rel := 0
	p := newPooled("abcdef")
	q.Push(ioflush.Segment{Buf: p.B, Pooled: p, Free: func() { rel++ }})
	var f ioflush.Flusher
	if _, res, _ := f.Flush(3, q, 0); res != ioflush.WouldBlock {
		t.Fatalf("first Flush: %v", res)
	}
	tail := q.At(q.Len() - 1)
	off := len(tail.Pooled.B) - len(tail.Buf)
	tail.Pooled.B = append(tail.Pooled.B, "ghijklmnopqrstuvwxyz"...)
	tail.Buf = tail.Pooled.B[off:]
	if n, res, err := f.Flush(3, q, 0); n != 23 || res != ioflush.Flushed || err != nil {
		t.Fatalf("second Flush = (%d, %v, %v)", n, res, err)
	}
	if string(fw.sink) != "abcdefghijklmnopqrstuvwxyz" || rel != 1 {
		t.Fatalf("wrote %q, released %d", fw.sink, rel)
	}
}

func TestFlushNilQueue(t *testing.T) {
	var f ioflush.Flusher
	if n, res, err := f.Flush(-1, nil, 0); n != 0 || res != ioflush.Flushed || err != nil {
		t.Fatalf("Flush(nil) = (%d, %v, %v)", n, res, err)
	}
}

func TestFlushBadFD(t *testing.T) {
	var f ioflush.Flusher
	q, _ := queue([]int{4}, make([]int, 1))
	_, _, err := f.Flush(-1, q, 0)
	var se *os.SyscallError
	if !errors.Is(err, unix.EBADF) || !errors.As(err, &se) || se.Syscall != "writev" {
		t.Fatalf("Flush(-1) error = %v, want writev: EBADF", err)
	}
	if q.Len() != 1 {
		t.Fatal("queue changed after a failed writev")
	}
}

func TestFlushEPIPE(t *testing.T) {
	w, r := nonblockingPair(t, "unix", 0)
	unix.Close(r)
	rel := make([]int, 2)
	q, _ := queue([]int{10, 10}, rel)
	var f ioflush.Flusher
	_, _, err := f.Flush(w, q, 0)
	if !errors.Is(err, unix.EPIPE) {
		t.Fatalf("Flush to a closed peer: %v, want EPIPE", err)
	}
	ioflush.Drop(q)
	checkReleases(t, "EPIPE", rel, 2)
}

func TestScratchAllocatedOnce(t *testing.T) {
	fw := &fakeWriter{t: t}
	defer ioflush.SetWritev(fw.writev)()
	var f ioflush.Flusher
	if ioflush.ScratchLen(&f) != 0 {
		t.Fatal("zero Flusher has scratch")
	}
	f.Flush(3, ringq.New[ioflush.Segment](1), 0)
	if ioflush.ScratchLen(&f) != 0 {
		t.Fatal("Flush of an empty queue allocated scratch")
	}
	q, _ := queue([]int{1}, make([]int, 1))
	f.Flush(3, q, 0)
	if ioflush.ScratchLen(&f) != ioflush.MaxIovecs {
		t.Fatalf("scratch has %d iovecs, want MaxIovecs", ioflush.ScratchLen(&f))
	}
}

func TestFlushNoAllocsSeam(t *testing.T) {
	fw := &fakeWriter{t: t}
	defer ioflush.SetWritev(fw.writev)()
	q := ringq.New[ioflush.Segment](32)
	buf := make([]byte, 64)
	free := func() {}
	var f ioflush.Flusher
	allocs := testing.AllocsPerRun(200, func() {
		for range 16 {
			q.Push(ioflush.Segment{Buf: buf, Free: free})
		}
		fw.steps = fw.steps[:0]
		if _, res, err := f.Flush(3, q, 512); res != ioflush.BudgetSpent || err != nil {
			t.Fatalf("Flush = %v, %v", res, err)
		}
		if _, res, err := f.Flush(3, q, 0); res != ioflush.Flushed || err != nil {
			t.Fatalf("Flush = %v, %v", res, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Flush allocated %.1f times per run, want 0", allocs)
	}
}

func TestFlushNoAllocsSocketpair(t *testing.T) {
	w, r := nonblockingPair(t, "unix", 0)
	q := ringq.New[ioflush.Segment](32)
	buf := make([]byte, 64)
	rbuf := make([]byte, 4096)
	var f ioflush.Flusher
	allocs := testing.AllocsPerRun(200, func() {
		for range 16 {
			q.Push(ioflush.Segment{Buf: buf})
		}
		if n, res, err := f.Flush(w, q, 0); n != 1024 || res != ioflush.Flushed || err != nil {
			t.Fatalf("Flush = %d, %v, %v", n, res, err)
		}
		for got := 0; got < 1024; {
			n, err := unix.Read(r, rbuf)
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	})
	if allocs != 0 {
		t.Fatalf("Flush allocated %.1f times per run, want 0", allocs)
	}
}
