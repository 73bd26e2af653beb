//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package uring_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/uring"
)

func TestDetect(t *testing.T) {
	f := requireUring(t)
	if !f.Has(uring.Required) {
		t.Fatalf("Detect returned no error but features %v lack %v", f, uring.Required&^f)
	}
	t.Logf("features: %v", f)
}

// TestNewCloseNoLeak sets up and closes rings with a buffer ring and a
// waker, and checks that no descriptor or mapping is left behind.
func TestNewCloseNoLeak(t *testing.T) {
	f := requireUring(t)
	for _, setup := range []uring.Feature{0, f.Setup()} {
		t.Run(setup.String(), func(t *testing.T) {
			open := func() {
				r, err := uring.New(uring.Config{Entries: 64, CQEntries: 256, Setup: setup})
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				br, err := r.NewBufRing(3, 16, 4096)
				if err != nil {
					t.Fatalf("NewBufRing: %v", err)
				}
				// Close with a multishot recv armed and a buffer lent.
				sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer unix.Close(sp[0])
				defer unix.Close(sp[1])
				if _, err := unix.Write(sp[1], []byte("hello")); err != nil {
					t.Fatal(err)
				}
				if _, err := r.PrepRecvMultishot(sp[0], br.Group(), 0, uring.Pack(kindRecv, 0, 0)); err != nil {
					t.Fatal(err)
				}
				c := waitCQEs(t, r, countOf(uring.Pack(kindRecv, 0, 0), 1))[0]
				if _, data, err := br.Take(c); err != nil || string(data) != "hello" {
					t.Fatalf("Take(%+v) = %q, %v", c, data, err)
				}
				if _, err := r.NewWaker(uring.Pack(kindWake, 0, 0)); err != nil {
					t.Fatalf("NewWaker: %v", err)
				}
				if _, err := r.Submit(); err != nil {
					t.Fatalf("Submit: %v", err)
				}
				if err := r.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
				if err := r.Close(); err != nil {
					t.Fatalf("second Close: %v", err)
				}
			}
			lockThread(t)
			open() // warm up whatever the runtime maps once
			fds, maps := openFDs(t), mappings(t)
			for range 50 {
				open()
			}
			if got := openFDs(t); got != fds {
				t.Errorf("open descriptors: %d before, %d after 50 rings", fds, got)
			}
			// The runtime may map memory of its own meanwhile; a leak would
			// add at least 50 (a ring maps 2 or 3 regions, a buffer ring 2).
			if got := mappings(t); got > maps+10 {
				t.Errorf("mappings: %d before, %d after 50 rings", maps, got)
			}
		})
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for i, c := range []uring.Config{
		{Entries: 3},
		{Entries: 1 << 16},
		{Entries: 64, CQEntries: 32},
		{Setup: uring.FeatDeferTaskrun},
		{Setup: uring.FeatOpSend},
	} {
		if _, err := uring.New(c); !errors.Is(err, uring.ErrBadConfig) {
			t.Errorf("%d: New(%+v) = %v, want ErrBadConfig", i, c, err)
		}
	}
}

func TestRingAfterClose(t *testing.T) {
	requireUring(t)
	r, err := uring.New(uring.Config{Entries: 8})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := r.GetSQE(); !errors.Is(err, uring.ErrClosed) {
		t.Errorf("GetSQE after Close = %v, want ErrClosed", err)
	}
	if _, err := r.SubmitAndWait(1, time.Millisecond); !errors.Is(err, uring.ErrClosed) {
		t.Errorf("SubmitAndWait after Close = %v, want ErrClosed", err)
	}
	if n := r.PeekBatch(make([]uring.CQE, 4)); n != 0 {
		t.Errorf("PeekBatch after Close = %d", n)
	}
}

// TestSubmitQueueFull fills the submission queue: GetSQE submits it and
// carries on, and every no-op completes.
func TestSubmitQueueFull(t *testing.T) {
	r := newRing(t, uring.Config{Entries: 8, CQEntries: 64})
	for i := range 40 {
		if _, err := r.PrepNop(uring.Pack(kindMsg, uint32(i), 0)); err != nil {
			t.Fatalf("PrepNop %d: %v", i, err)
		}
	}
	got := waitCQEs(t, r, func(cs []uring.CQE) bool { return len(cs) >= 40 })
	for i, c := range got {
		if c.UserData != uring.Pack(kindMsg, uint32(i), 0) || c.Res != 0 {
			t.Fatalf("completion %d = %+v, want no-op %d in order", i, c, i)
		}
	}
}

// TestEcho runs the echo loop against concurrent Go clients sending
// messages from 1 byte to larger than a buffer, each waiting for its echo.
func TestEcho(t *testing.T) {
	r := newRing(t, uring.Config{Entries: 64, CQEntries: 1024})
	lfd, addr := listen(t)
	e := newEchoLoop(t, r, lfd, 64, 1024)
	const clients, rounds = 4, 50
	var done atomic.Int32
	errs := make(chan error, clients)
	for c := range clients {
		go func() {
			defer done.Add(1)
			errs <- echoClient(addr, c, rounds)
		}()
	}
	e.until(func() bool { return done.Load() == clients && e.closed == clients })
	for range clients {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if e.accepted != clients {
		t.Errorf("accepted %d connections, want %d", e.accepted, clients)
	}
	if e.br.Lent() != 0 {
		t.Errorf("%d buffers still lent after every connection closed", e.br.Lent())
	}
	t.Logf("echoed %d bytes, %d short sends, %d ENOBUFS, %d stale", e.echoed, e.shortSends, e.nobufs, e.stale)
}

func echoClient(addr string, id, rounds int) error {
	c, err := net.DialTimeout("tcp", addr, testDeadline)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(testDeadline))
	got := make([]byte, 5000)
	for i := range rounds {
		msg := bytes.Repeat([]byte{byte('a' + id)}, 1+(i*97)%4000)
		msg[0] = byte(i)
		if _, err := c.Write(msg); err != nil {
			return fmt.Errorf("client %d round %d: write: %w", id, i, err)
		}
		if _, err := io.ReadFull(c, got[:len(msg)]); err != nil {
			return fmt.Errorf("client %d round %d: read: %w", id, i, err)
		}
		if !bytes.Equal(got[:len(msg)], msg) {
			return fmt.Errorf("client %d round %d: echo differs", id, i)
		}
	}
	return nil
}

// TestShortSend sends more than the socket buffers hold to a peer that
// reads slowly: the send completes short, and resubmitting the rest from
// the same buffer delivers every byte in order.
func TestShortSend(t *testing.T) {
	r := newRing(t, uring.Config{Entries: 8})
	fd, client := acceptPair(t)
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, 1<<20)
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	got := make(chan []byte, 1)
	start := make(chan struct{})
	go func() {
		<-start
		client.SetReadDeadline(time.Now().Add(testDeadline))
		b, _ := io.ReadAll(io.LimitReader(client, int64(len(msg))))
		got <- b
	}()
	tag := uring.Pack(kindSend, 0, 0)
	sent, completions, short := 0, 0, 0
	for sent < len(msg) {
		if _, err := r.PrepSend(fd, msg[sent:], unix.MSG_NOSIGNAL, tag); err != nil {
			t.Fatal(err)
		}
		c := waitCQEs(t, r, countOf(tag, 1))[0]
		if c.Res <= 0 {
			t.Fatalf("send completion %+v", c)
		}
		if completions == 0 {
			close(start) // the first send completed short; let the peer read now
		}
		completions++
		sent += int(c.Res)
		if sent < len(msg) {
			short++
		}
	}
	b := <-got
	if !bytes.Equal(b, msg) {
		t.Fatalf("peer received %d bytes, not the %d sent in order", len(b), len(msg))
	}
	if short == 0 {
		t.Fatalf("no short send in %d completions: the test did not exercise it", completions)
	}
	t.Logf("%d completions, %d short", completions, short)
}

// TestSendmsgShort sends iovecs with sendmsg to a slow reader, consuming
// short sends with ConsumeIovecs.
func TestSendmsgShort(t *testing.T) {
	r := newRing(t, uring.Config{Entries: 8})
	fd, client := acceptPair(t)
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
		t.Fatal(err)
	}
	parts := [][]byte{bytes.Repeat([]byte("a"), 256<<10), []byte("b"), bytes.Repeat([]byte("c"), 768<<10)}
	want := bytes.Join(parts, nil)
	iovs := make([]unix.Iovec, len(parts))
	for i, p := range parts {
		iovs[i].Base = &p[0]
		iovs[i].SetLen(len(p))
	}
	got := make(chan []byte, 1)
	go func() {
		client.SetReadDeadline(time.Now().Add(testDeadline))
		b, _ := io.ReadAll(io.LimitReader(client, int64(len(want))))
		got <- b
	}()
	tag := uring.Pack(kindSend, 1, 0)
	rest, short := iovs, 0
	for len(rest) > 0 {
		if _, err := r.PrepSendmsg(fd, rest, unix.MSG_NOSIGNAL, tag); err != nil {
			t.Fatal(err)
		}
		c := waitCQEs(t, r, countOf(tag, 1))[0]
		if c.Res <= 0 {
			t.Fatalf("sendmsg completion %+v", c)
		}
		rest = uring.ConsumeIovecs(rest, int(c.Res))
		if len(rest) > 0 {
			short++
		}
	}
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("peer received %d bytes, not the %d sent in order", len(b), len(want))
	}
	t.Logf("%d short sendmsg completions", short)
}

// TestENOBUFS drains a two-buffer ring: the multishot recv ends with
// -ENOBUFS (no More), the data stays in the socket, and after recycling and
// re-arming every byte arrives in order.
func TestENOBUFS(t *testing.T) {
	r := newRing(t, uring.Config{Entries: 8})
	fd, client := acceptPair(t)
	br, err := r.NewBufRing(7, 2, 16)
	if err != nil {
		t.Fatal(err)
	}
	msg := pattern(100)
	if _, err := client.Write(msg); err != nil {
		t.Fatal(err)
	}
	tag := uring.Pack(kindRecv, 0, 1)
	var got []byte
	var ids []uint16
	sawNobufs := 0
	for len(got) < len(msg) {
		if _, err := r.PrepRecvMultishot(fd, br.Group(), 0, tag); err != nil {
			t.Fatal(err)
		}
		// Wait until the multishot ends or every byte has arrived (it
		// then stays armed).
		total := len(got)
		cs := waitCQEs(t, r, func(cs []uring.CQE) bool {
			n := total
			for _, c := range cs {
				n += max(0, int(c.Res))
			}
			return n == len(msg) || len(cs) > 0 && !cs[len(cs)-1].More()
		})
		for _, c := range cs {
			if c.HasBuffer() {
				id, data, err := br.Take(c)
				if err != nil {
					t.Fatalf("Take(%+v): %v", c, err)
				}
				got = append(got, data...)
				ids = append(ids, id)
			}
		}
		last := cs[len(cs)-1]
		if last.Res != -int32(unix.ENOBUFS) {
			if len(got) < len(msg) || !last.More() {
				t.Fatalf("multishot ended with %+v (%v) after %d of %d bytes", last, last.Err(), len(got), len(msg))
			}
			break
		}
		sawNobufs++
		if br.Lent() != br.Entries() {
			t.Fatalf("ENOBUFS with %d of %d buffers lent", br.Lent(), br.Entries())
		}
		for _, id := range ids {
			if err := br.Recycle(id); err != nil {
				t.Fatalf("Recycle(%d): %v", id, err)
			}
		}
		if err := br.Recycle(ids[0]); !errors.Is(err, uring.ErrBufferNotLent) {
			t.Fatalf("double Recycle = %v, want ErrBufferNotLent", err)
		}
		ids = ids[:0]
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("received %v, want %v", got, msg)
	}
	if sawNobufs == 0 {
		t.Fatal("the buffer ring never ran dry")
	}
	t.Logf("%d ENOBUFS re-arms", sawNobufs)
}

// TestMultishotLimit: a multishot recv capped at 256 bytes in all stays
// armed across the small messages within the cap and ends (no More) at the
// completion that reaches it, leaving the rest in the socket; armed again,
// it takes the next bytes. The completion that reaches the cap is not
// shortened: here it ends exactly at 256 because the 64-byte messages fill
// 64-byte buffers.
func TestMultishotLimit(t *testing.T) {
	r := newRing(t, uring.Config{Entries: 8})
	fd, client := acceptPair(t)
	br, err := r.NewBufRing(7, 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	msg := pattern(64)
	tag := uring.Pack(kindRecv, 0, 1)
	arm := func() {
		s, err := r.PrepRecvMultishot(fd, br.Group(), 0, tag)
		if err != nil {
			t.Fatal(err)
		}
		s.SetMultishotLimit(256)
	}
	arm()
	var got []byte
	take := func(cs []uring.CQE) (ended bool) {
		for _, c := range cs {
			if c.Res < 0 {
				t.Fatalf("recv failed: %v", c.Err())
			}
			if c.HasBuffer() {
				id, data, err := br.Take(c)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, data...)
				if err := br.Recycle(id); err != nil {
					t.Fatal(err)
				}
			}
			ended = ended || !c.More()
		}
		return ended
	}
	// One message at a time: each completes with More.
	for i := 0; i < 3; i++ {
		if _, err := client.Write(msg); err != nil {
			t.Fatal(err)
		}
		if take(waitCQEs(t, r, func(cs []uring.CQE) bool { return len(cs) > 0 })) {
			t.Fatalf("message %d: the multishot ended before its cap (%d bytes in)", i, len(got))
		}
	}
	// Five more messages at once: the fourth message reaches the cap.
	if _, err := client.Write(bytes.Repeat(msg, 5)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for !take(waitCQEs(t, r, func(cs []uring.CQE) bool { return len(cs) > 0 })) {
		if n++; n > 16 {
			t.Fatal("the multishot never ended")
		}
	}
	if len(got) != 256 {
		t.Fatalf("received %d bytes before the multishot ended, want its cap of 256", len(got))
	}
	arm()
	for len(got) < 8*len(msg) {
		take(waitCQEs(t, r, func(cs []uring.CQE) bool { return len(cs) > 0 }))
	}
	if want := bytes.Repeat(msg, 8); !bytes.Equal(got, want) {
		t.Fatalf("received %d bytes that differ from the %d sent", len(got), len(want))
	}
}

// TestCancelMultishot cancels an armed multishot accept by its tag and a
// multishot recv by its descriptor.
func TestCancelMultishot(t *testing.T) {
	r := newRing(t, uring.Config{Entries: 8})
	lfd, _ := listen(t)
	accept, cancel := uring.Pack(kindAccept, 0, 0), uring.Pack(kindCancel, 0, 0)
	if _, err := r.PrepAcceptMultishot(lfd, 0, accept); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.PrepCancel(accept, false, cancel); err != nil {
		t.Fatal(err)
	}
	cs := waitCQEs(t, r, func(cs []uring.CQE) bool { return countOf(accept, 1)(cs) && countOf(cancel, 1)(cs) })
	if c, _ := find(cs, cancel); c.Res != 0 {
		t.Errorf("cancel completion %+v, want Res 0 (found)", c)
	}
	if c, _ := find(cs, accept); c.Res != -int32(unix.ECANCELED) || c.More() {
		t.Errorf("accept completion %+v, want -ECANCELED without More", c)
	}
	// Nothing left to cancel: -ENOENT.
	if _, err := r.PrepCancel(accept, false, cancel); err != nil {
		t.Fatal(err)
	}
	if c := waitCQEs(t, r, countOf(cancel, 1))[0]; c.Res != -int32(unix.ENOENT) {
		t.Errorf("second cancel %+v, want -ENOENT", c)
	}

	fd, _ := acceptPair(t)
	br, err := r.NewBufRing(2, 4, 64)
	if err != nil {
		t.Fatal(err)
	}
	recv := uring.Pack(kindRecv, 1, 5)
	if _, err := r.PrepRecvMultishot(fd, br.Group(), 0, recv); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.PrepCancelFD(fd, cancel); err != nil {
		t.Fatal(err)
	}
	cs = waitCQEs(t, r, func(cs []uring.CQE) bool { return countOf(recv, 1)(cs) && countOf(cancel, 1)(cs) })
	if c, _ := find(cs, cancel); c.Res != 1 {
		t.Errorf("cancel by fd %+v, want Res 1 (one request)", c)
	}
	if c, _ := find(cs, recv); c.Res != -int32(unix.ECANCELED) || c.More() || c.HasBuffer() {
		t.Errorf("recv completion %+v, want -ECANCELED without More or buffer", c)
	}
}

// TestWakeFromGoroutines blocks the loop in SubmitAndWait without a
// timeout while other goroutines wake it; every burst of wake-ups ends the
// wait, and a burst costs at most as many completions as wake-ups.
func TestWakeFromGoroutines(t *testing.T) {
	r := newRing(t, uring.Config{Entries: 8})
	tag := uring.Pack(kindWake, 0, 0)
	w, err := r.NewWaker(tag)
	if err != nil {
		t.Fatal(err)
	}
	const rounds, wakers = 100, 4
	var inbox atomic.Int64 // stands for the loop inbox the wake-up announces
	var wg sync.WaitGroup
	for range wakers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				inbox.Add(1)
				if err := w.Wake(); err != nil {
					t.Errorf("Wake: %v", err)
					return
				}
				time.Sleep(50 * time.Microsecond)
			}
		}()
	}
	drained, wakeups := int64(0), 0
	var cqes [8]uring.CQE
	deadline := time.Now().Add(testDeadline)
	for drained < rounds*wakers {
		if time.Now().After(deadline) {
			t.Fatalf("drained %d of %d after %v", drained, rounds*wakers, testDeadline)
		}
		// Block without a limit only while work is certainly outstanding
		// and a wake-up therefore certainly follows; the last round waits
		// with a timeout so a bug fails the test instead of hanging it.
		if _, err := r.SubmitAndWait(1, time.Second); err != nil {
			t.Fatal(err)
		}
		n := r.PeekBatch(cqes[:])
		for _, c := range cqes[:n] {
			if c.UserData != tag {
				t.Fatalf("unexpected completion %+v", c)
			}
			wakeups++
			if err := w.Rearm(c); err != nil {
				t.Fatalf("Rearm: %v", err)
			}
			drained += inbox.Swap(0) // drain after Rearm
		}
		r.Advance(n)
	}
	wg.Wait()
	if wakeups > rounds*wakers {
		t.Errorf("%d wake-up completions for %d wakes", wakeups, rounds*wakers)
	}
	t.Logf("%d wakes, %d wake-up completions", rounds*wakers, wakeups)

	r.Close()
	if err := w.Rearm(uring.CQE{UserData: tag}); !errors.Is(err, uring.ErrClosed) {
		t.Errorf("Rearm after Close = %v, want ErrClosed", err)
	}
	// The pending flag may be set; clear it by a Wake that must fail or
	// be absorbed, never write to a closed descriptor.
	for range 2 {
		if err := w.Wake(); err != nil && !errors.Is(err, uring.ErrClosed) {
			t.Errorf("Wake after Close = %v", err)
		}
	}
}

// TestWaitTimeout checks that SubmitAndWait returns after its timeout with
// no completion and no error, and that a ring timeout fires with -ETIME.
func TestWaitTimeout(t *testing.T) {
	r := newRing(t, uring.Config{Entries: 8})
	start := time.Now()
	if _, err := r.SubmitAndWait(1, 20*time.Millisecond); err != nil {
		t.Fatalf("SubmitAndWait: %v", err)
	}
	if el := time.Since(start); el < 15*time.Millisecond || el > 5*time.Second {
		t.Errorf("SubmitAndWait(1, 20ms) returned after %v", el)
	}
	if n := r.Ready(); n != 0 {
		t.Errorf("%d completions after an idle wait", n)
	}
	tag := uring.Pack(kindTimeout, 0, 0)
	start = time.Now()
	if _, err := r.PrepTimeout(10*time.Millisecond, 0, tag); err != nil {
		t.Fatal(err)
	}
	c := waitCQEs(t, r, countOf(tag, 1))[0]
	if c.Res != -int32(unix.ETIME) {
		t.Errorf("timeout completion %+v, want -ETIME", c)
	}
	if el := time.Since(start); el < 9*time.Millisecond {
		t.Errorf("10ms timeout fired after %v", el)
	}
	// A cancelled timeout completes with -ECANCELED.
	if _, err := r.PrepTimeout(time.Hour, 0, tag); err != nil {
		t.Fatal(err)
	}
	cancel := uring.Pack(kindCancel, 0, 0)
	if _, err := r.PrepCancel(tag, false, cancel); err != nil {
		t.Fatal(err)
	}
	cs := waitCQEs(t, r, func(cs []uring.CQE) bool { return countOf(tag, 1)(cs) && countOf(cancel, 1)(cs) })
	if c, _ := find(cs, tag); c.Res != -int32(unix.ECANCELED) {
		t.Errorf("cancelled timeout %+v, want -ECANCELED", c)
	}
}

// TestMsgRing wakes one ring from another with IORING_OP_MSG_RING.
func TestMsgRing(t *testing.T) {
	f := requireUring(t)
	if !f.Has(uring.FeatOpMsgRing) {
		t.Skip("kernel lacks IORING_OP_MSG_RING")
	}
	a := newRing(t, uring.Config{Entries: 8})
	b := newRing(t, uring.Config{Entries: 8})
	data, sent := uring.Pack(kindMsg, 42, 7), uring.Pack(kindMsg, 1, 0)
	if _, err := a.PrepMsgRing(b.Fd(), 1234, data, sent); err != nil {
		t.Fatal(err)
	}
	if c := waitCQEs(t, a, countOf(sent, 1))[0]; c.Res != 0 {
		t.Fatalf("sender's completion %+v", c)
	}
	if c := waitCQEs(t, b, countOf(data, 1))[0]; c.Res != 1234 {
		t.Fatalf("receiver's completion %+v, want Res 1234", c)
	}
}

// TestStaleCompletion closes a connection whose slot is reused before a
// completion tagged with the old generation arrives: the echo loop drops it
// and recycles its buffer.
func TestStaleCompletion(t *testing.T) {
	r := newRing(t, uring.Config{Entries: 16})
	lfd, addr := listen(t)
	e := newEchoLoop(t, r, lfd, 8, 256)
	c := dialRaw(t, addr)
	e.until(func() bool { return e.accepted == 1 })
	conn := e.conns[0]
	// A completion for generation gen-1 in slot 0, carrying a buffer the
	// kernel really handed out: take one with a real recv first.
	if _, err := unix.Write(c, []byte("x")); err != nil {
		t.Fatal(err)
	}
	e.until(func() bool { return e.echoed == 1 })
	before := e.stale
	e.handle(uring.CQE{UserData: uring.Pack(kindSend, 0, conn.gen-1), Res: 1})
	e.handle(uring.CQE{UserData: uring.Pack(kindRecv, 3, conn.gen), Res: 1})
	if e.stale != before+2 {
		t.Errorf("stale completions dropped: %d, want %d", e.stale-before, 2)
	}
	var b [1]byte
	if n, err := unix.Read(c, b[:]); n != 1 || err != nil || b[0] != 'x' {
		t.Fatalf("echo read = %d, %v", n, err)
	}
}

func TestBufRingTakeErrors(t *testing.T) {
	r := newRing(t, uring.Config{Entries: 8})
	br, err := r.NewBufRing(9, 4, 32)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := br.Take(uring.CQE{Res: 5}); !errors.Is(err, uring.ErrNoBuffer) {
		t.Errorf("Take without F_BUFFER = %v, want ErrNoBuffer", err)
	}
	if _, _, err := br.Take(uring.CQE{Res: 5, Flags: 1 | 9<<16}); !errors.Is(err, uring.ErrBufferState) {
		t.Errorf("Take of id 9 in a 4-buffer ring = %v, want ErrBufferState", err)
	}
	// Stand in for the kernel handing out buffer 2.
	id, data, err := br.Take(uring.CQE{Res: 40, Flags: 1 | 2<<16})
	if err != nil || id != 2 || len(data) != 32 || br.Lent() != 1 {
		t.Fatalf("Take = %d, %d bytes, %v (lent %d), want 2, 32 bytes (clamped), nil, 1", id, len(data), err, br.Lent())
	}
	if _, _, err := br.Take(uring.CQE{Res: 1, Flags: 1 | 2<<16}); !errors.Is(err, uring.ErrBufferState) {
		t.Errorf("second Take of a lent buffer = %v, want ErrBufferState", err)
	}
	if err := br.Recycle(2); err != nil {
		t.Errorf("Recycle(2) = %v", err)
	}
	for _, id := range []uint16{2, 3, 9} {
		if err := br.Recycle(id); !errors.Is(err, uring.ErrBufferNotLent) {
			t.Errorf("Recycle(%d) of a buffer not lent = %v, want ErrBufferNotLent", id, err)
		}
	}
	if _, err := r.NewBufRing(10, 3, 32); !errors.Is(err, uring.ErrBadConfig) {
		t.Errorf("NewBufRing with 3 entries = %v, want ErrBadConfig", err)
	}
	if err := br.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if err := br.Recycle(0); !errors.Is(err, uring.ErrClosed) {
		t.Errorf("Recycle after Close = %v, want ErrClosed", err)
	}
	// The group id is free again.
	if _, err := r.NewBufRing(9, 4, 32); err != nil {
		t.Errorf("re-registering group 9 after Close: %v", err)
	}
}

// TestCloseWithHandsOverUnreaped: CloseWith hands drop the completions it
// reaps while cancelling, here a multishot accept's connection posted but
// never reaped, whose fd the owner must close.
func TestCloseWithHandsOverUnreaped(t *testing.T) {
	requireUring(t)
	lockThread(t)
	r, err := uring.New(uring.Config{Entries: 8, Setup: requireUring(t).Setup()})
	if err != nil {
		t.Fatal(err)
	}
	lfd, addr := listen(t)
	accept := uring.Pack(kindAccept, 0, 0)
	if _, err := r.PrepAcceptMultishot(lfd, unix.SOCK_CLOEXEC, accept); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	dialRaw(t, addr)
	// the accept completes (a wait runs the task work that posts it under
	// DEFER_TASKRUN); nobody reaps it
	if _, err := r.SubmitAndWait(1, 2*time.Second); err != nil || r.Ready() == 0 {
		t.Fatalf("waiting for the accept: %v, %d ready", err, r.Ready())
	}
	var fds []int32
	var last uring.CQE
	err = r.CloseWith(func(c uring.CQE) {
		if c.UserData == accept {
			last = c
			if c.Res >= 0 {
				fds = append(fds, c.Res)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(fds) != 1 {
		t.Fatalf("drop saw %d accepted fds, want 1", len(fds))
	}
	if last.Res != -int32(unix.ECANCELED) {
		t.Errorf("the accept's last completion %+v, want -ECANCELED", last)
	}
	if err := unix.Close(int(fds[0])); err != nil {
		t.Errorf("closing the accepted fd: %v", err)
	}
}
