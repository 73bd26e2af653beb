package server

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluicenet/sluice/ioflush"
)

type countWaker struct{ n atomic.Int32 }

func (w *countWaker) wakeup() { w.n.Add(1) }

func TestInboxBoundedFIFO(t *testing.T) {
	var ib inbox
	ib.init(4)
	var w countWaker
	for i := 0; i < 4; i++ {
		if err := ib.push(task{kind: taskWrite, fd: int32(i)}, &w); err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
	}
	if err := ib.push(task{}, &w); err != ErrInboxFull {
		t.Fatalf("push to a full inbox: %v, want ErrInboxFull", err)
	}
	if w.n.Load() != 4 {
		t.Errorf("wakeups = %d, want one per accepted push", w.n.Load())
	}
	dst := make([]task, 3)
	if n := ib.take(dst); n != 3 || dst[0].fd != 0 || dst[2].fd != 2 {
		t.Fatalf("take = %d %v", n, dst)
	}
	if n := ib.take(dst); n != 1 || dst[0].fd != 3 {
		t.Fatalf("second take = %d %v", n, dst[:n])
	}
	if n := ib.take(dst); n != 0 {
		t.Fatalf("take from empty = %d", n)
	}
}

func TestInboxCloseReleases(t *testing.T) {
	var ib inbox
	ib.init(8)
	var w countWaker
	freed := 0
	for i := 0; i < 3; i++ {
		ib.push(task{kind: taskWrite, seg: ioflush.Segment{Buf: []byte("x"), Free: func() { freed++ }}}, &w)
	}
	ib.close()
	if freed != 3 {
		t.Errorf("close released %d segments, want 3", freed)
	}
	if err := ib.push(task{}, &w); err != ErrEngineClosed {
		t.Errorf("push after close: %v, want ErrEngineClosed", err)
	}
	before := w.n.Load()
	ib.signal(&w)
	if w.n.Load() != before {
		t.Error("signal woke a closed inbox's loop")
	}
}

// TestInboxConcurrent: producers' tasks all arrive, each producer's in
// order.
func TestInboxConcurrent(t *testing.T) {
	const producers, per = 4, 500
	var ib inbox
	ib.init(64)
	var w countWaker
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < per; {
				if ib.push(task{fd: int32(p), gen: uint64(i)}, &w) == nil {
					i++
				}
			}
		}(p)
	}
	next := make([]uint64, producers)
	dst := make([]task, 16)
	got := 0
	for got < producers*per {
		n := ib.take(dst)
		for _, tk := range dst[:n] {
			if tk.gen != next[tk.fd] {
				t.Fatalf("producer %d: got %d, want %d", tk.fd, tk.gen, next[tk.fd])
			}
			next[tk.fd]++
		}
		got += n
	}
	wg.Wait()
}
