//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package uring_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/uring"
)

// TestBufRingWrap drives more than 65536 recycles through a four-buffer
// ring, in a shuffled order so ring slot 0 carries different buffer ids
// over time: the 16-bit tail wraps, slot 0's id is republished with every
// tail store, and every message lands whole in the buffer the completion
// names.
func TestBufRingWrap(t *testing.T) {
	rounds := 70000
	if testing.Short() {
		rounds = 5000
	}
	r := newRing(t, uring.Config{Entries: 8, CQEntries: 64})
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(sp[0]); unix.Close(sp[1]) })
	br, err := r.NewBufRing(5, 4, 64)
	if err != nil {
		t.Fatal(err)
	}
	tag := uring.Pack(kindRecv, 0, 0)
	arm := func() {
		if _, err := r.PrepRecvMultishot(sp[0], br.Group(), 0, tag); err != nil {
			t.Fatal(err)
		}
	}
	arm()
	rng := rand.New(rand.NewPCG(1, 2))
	var held []uint16
	var msg [8]byte
	var cqes [4]uring.CQE
	deadline := time.Now().Add(4 * testDeadline)
	for i := range rounds {
		binary.LittleEndian.PutUint64(msg[:], uint64(i))
		if _, err := unix.Write(sp[1], msg[:]); err != nil {
			t.Fatal(err)
		}
		n := 0
		for n == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no completion", i)
			}
			if _, err := r.SubmitAndWait(1, time.Second); err != nil {
				t.Fatal(err)
			}
			n = r.PeekBatch(cqes[:1])
		}
		c := cqes[0]
		r.Advance(1)
		if !c.More() {
			t.Fatalf("round %d: multishot ended: %+v (%v)", i, c, c.Err())
		}
		id, data, err := br.Take(c)
		if err != nil {
			t.Fatalf("round %d: Take(%+v): %v", i, c, err)
		}
		if len(data) != 8 || binary.LittleEndian.Uint64(data) != uint64(i) {
			t.Fatalf("round %d: buffer %d holds %x", i, id, data)
		}
		held = append(held, id)
		for len(held) >= 3 { // keep one buffer with the kernel, recycle a random held one
			k := rng.IntN(len(held))
			if err := br.Recycle(held[k]); err != nil {
				t.Fatalf("round %d: Recycle(%d): %v", i, held[k], err)
			}
			held = append(held[:k], held[k+1:]...)
		}
	}
}
