package kv

import (
	"sync"
	"testing"
	"time"
)

// TestPool: submit never blocks; a full queue and a closed pool say so;
// close lets running tasks finish, drops the queued ones and waits.
func TestPool(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	var mu sync.Mutex
	var ran, dropped []uint64
	p := newPool(1, 2,
		func(tk *task) {
			started <- struct{}{}
			<-release
			mu.Lock()
			ran = append(ran, tk.msg.RequestID)
			mu.Unlock()
		},
		func(tk *task) {
			mu.Lock()
			dropped = append(dropped, tk.msg.RequestID)
			mu.Unlock()
		})
	mk := func(id uint64) *task {
		tk, err := newTask(nil, req{id: id, method: "PUT", payload: AppendPut(nil, []byte("k"), nil)}.frame(t), t0, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	if r := p.submit(mk(1)); r != submitted {
		t.Fatalf("first submit: %v", r)
	}
	<-started // the worker holds task 1
	for id := uint64(2); id <= 3; id++ {
		if r := p.submit(mk(id)); r != submitted {
			t.Fatalf("submit %d: %v", id, r)
		}
	}
	if r := p.submit(mk(4)); r != submitFull {
		t.Fatalf("submit to a full queue: %v, want submitFull", r)
	}
	if p.queued() != 2 {
		t.Fatalf("queued %d, want 2", p.queued())
	}
	closed := make(chan struct{})
	go func() { p.close(); close(closed) }()
	// close must wait for the running task
	select {
	case <-closed:
		t.Fatal("close returned while a task was running")
	case <-time.After(20 * time.Millisecond):
	}
	if r := p.submit(mk(5)); r != submitClosed {
		t.Fatalf("submit after close: %v, want submitClosed", r)
	}
	close(release)
	<-closed
	p.close() // a second close returns at once
	mu.Lock()
	defer mu.Unlock()
	// task 1 ran; 2 and 3 were dropped, unless the worker picked one of
	// them before it saw the close
	if len(ran)+len(dropped) != 3 || ran[0] != 1 {
		t.Fatalf("ran %v, dropped %v: want 1 ran and 2, 3 answered", ran, dropped)
	}
}
