package netpoll

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestParker: a parked wait returns when its descriptor becomes readable
// and poll reports events, and when kicked (with what poll reports then,
// here nothing); a kick leaves no deadline behind for the next wait, and a
// kick while nothing is parked is a no-op.
func TestParker(t *testing.T) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	var k parker
	poll := func() (int, error) {
		var b [8]byte
		if n, _ := unix.Read(fd, b[:]); n == 8 {
			return 1, nil
		}
		return 0, nil
	}
	if err := k.open(fd, "test-park", poll); err != nil {
		t.Fatal(err)
	}
	defer k.close()

	type result struct {
		n  int
		ok bool
	}
	park := func() chan result {
		ch := make(chan result, 1)
		go func() {
			n, err, ok := k.sleep(func() error { return nil })
			if err != nil {
				t.Error(err)
			}
			ch <- result{n, ok}
		}()
		deadline := time.Now().Add(5 * time.Second)
		for !k.parked.Load() {
			if time.Now().After(deadline) {
				t.Fatal("wait never parked")
			}
			time.Sleep(time.Millisecond)
		}
		return ch
	}
	get := func(ch chan result, why string) result {
		t.Helper()
		select {
		case r := <-ch:
			if !r.ok {
				t.Fatalf("%s: the netpoller refused the eventfd", why)
			}
			return r
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the parked wait did not return", why)
		}
		return result{}
	}

	ch := park()
	k.kick()
	if r := get(ch, "kicked"); r.n != 0 {
		t.Fatalf("kicked with nothing ready: n = %d, want 0", r.n)
	}

	k.kick() // not parked: no-op
	ch = park()
	select {
	case r := <-ch:
		t.Fatalf("a wait after a kick returned without a kick or an event: %+v", r)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := unix.Write(fd, []byte{1, 0, 0, 0, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if r := get(ch, "readable"); r.n != 1 {
		t.Fatalf("woken by the eventfd: n = %d, want 1", r.n)
	}
}
