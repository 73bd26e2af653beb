package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicenet/sluice/ioflush"
	"github.com/valyala/bytebufferpool"
)

// TestOffLoopWritesInOrder: writes from another goroutine arrive complete
// and in order, through the inbox, with backpressure reported as
// ErrQueueFull or ErrInboxFull and retried by the writer.
func TestOffLoopWritesInOrder(t *testing.T) {
	h := newTestHandler()
	e := start(t, Config{Loops: 2, InboxTasks: 16, OutQueueMsgs: 64, OutQueueBytes: 8 << 10}, h)
	c := dial(t, e)
	sc := h.nextOpen(t)
	const n = 3000
	errc := make(chan error, 1)
	var retries atomic.Int64
	go func() {
		for i := 0; i < n; i++ {
			msg := fmt.Appendf(nil, "msg-%05d\n", i)
			for {
				var err error
				switch i % 3 {
				case 0:
					err = sc.Write(msg)
				case 1:
					err = sc.WriteFrame(msg) // raw codec: encodes to itself
				default:
					bb := bytebufferpool.Get()
					bb.B = append(bb.B[:0], msg...)
					err = sc.WriteOwned(bb.B, func() { bytebufferpool.Put(bb) })
					if err != nil {
						bytebufferpool.Put(bb)
					}
				}
				if err == nil {
					break
				}
				if !errors.Is(err, ErrQueueFull) && !errors.Is(err, ErrInboxFull) {
					errc <- err
					return
				}
				retries.Add(1)
				time.Sleep(100 * time.Microsecond)
			}
		}
		errc <- nil
	}()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	for i := 0; i < n; i++ {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if want := fmt.Sprintf("msg-%05d\n", i); line != want {
			t.Fatalf("line %d = %q, want %q", i, line, want)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	waitStats(t, e, "every write through the inbox", func(s Stats) bool { return s.InboxTasks >= n })
	t.Logf("writer retried %d times (queue or inbox full)", retries.Load())
}

// TestReusedFdGetsNothingStale: after a connection closes and a new one
// reuses its fd, writes aimed at the old connection (off-loop, or already in
// the inbox with the old generation) never reach the new one.
func TestReusedFdGetsNothingStale(t *testing.T) {
	h := newTestHandler()
	e := start(t, Config{Loops: 1}, h)
	a := dial(t, e)
	ac := h.nextOpen(t)
	a.Close()
	h.closeOf(t, ac, 5*time.Second)

	var b io.ReadWriter
	var bc *Conn
	for i := 0; i < 20; i++ { // the kernel hands out the lowest free fd: usually at once
		nb := dial(t, e)
		c := h.nextOpen(t)
		if c.fd == ac.fd {
			b, bc = nb, c
			break
		}
		nb.Close()
	}
	if bc == nil {
		t.Skip("fd not reused")
	}
	if err := ac.Write([]byte("stale\n")); !errors.Is(err, ErrClosed) {
		t.Errorf("Write on the closed conn: %v, want ErrClosed", err)
	}
	// a task queued before the close was noticed: right fd, old generation
	bb := bytebufferpool.Get()
	bb.B = append(bb.B[:0], "stale\n"...)
	if err := ac.loop.submit(task{kind: taskWrite, fd: ac.fd, gen: ac.gen,
		seg: ioflush.Segment{Buf: bb.B, Pooled: bb}}); err != nil {
		t.Fatal(err)
	}
	if err := bc.Write([]byte("fresh\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(b)
	line, err := r.ReadString('\n')
	if err != nil || line != "fresh\n" {
		t.Fatalf("new connection read %q, %v; want only its own bytes", line, err)
	}
	waitUntil(t, 5*time.Second, "stale task dropped", func() bool { return e.Stats().StaleTasks >= 1 })
}
