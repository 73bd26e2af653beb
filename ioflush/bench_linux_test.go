package ioflush_test

import (
	"testing"
	"unsafe"

	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/ringq"
	"golang.org/x/sys/unix"
)

// acceptAll is a writev seam that takes every byte without copying: what is
// left is Flush's own overhead.
func acceptAll(fd int, iov []unix.Iovec) (int, unix.Errno) {
	n := 0
	for _, v := range iov {
		n += int(v.Len)
	}
	return n, 0
}

// BenchmarkFlushSocketpair16x64 queues 16 segments of 64 B, flushes them to a
// Unix socketpair in one writev, and drains the reader synchronously, so each
// op is one writev(2) and one read(2).
func BenchmarkFlushSocketpair16x64(b *testing.B) {
	w, r := nonblockingPair(b, "unix", 0)
	benchSocket(b, w, r, 16, 64)
}

// BenchmarkFlushTCP16x64 is BenchmarkFlushSocketpair16x64 over loopback TCP.
func BenchmarkFlushTCP16x64(b *testing.B) {
	w, r := nonblockingPair(b, "tcp", 0)
	benchSocket(b, w, r, 16, 64)
}

func benchSocket(b *testing.B, w, r, segs, size int) {
	q := ringq.New[ioflush.Segment](segs)
	buf := make([]byte, size)
	rbuf := make([]byte, 64<<10)
	total := segs * size
	var f ioflush.Flusher
	warmUp(b, &f, w, r)
	b.SetBytes(int64(total))
	b.ReportAllocs()
	for b.Loop() {
		for range segs {
			q.Push(ioflush.Segment{Buf: buf})
		}
		if n, res, err := f.Flush(w, q, 0); n != total || res != ioflush.Flushed || err != nil {
			b.Fatalf("Flush = (%d, %v, %v)", n, res, err)
		}
		for got := 0; got < total; {
			n, err := unix.Read(r, rbuf)
			if err == unix.EAGAIN { // TCP loopback: the bytes are on their way
				continue
			}
			if err != nil {
				b.Fatal(err)
			}
			got += n
		}
	}
}

// BenchmarkFlushSeam16x64 measures Flush's overhead alone (gather, release,
// pop, clear) for 16 segments of 64 B, with a writev seam that accepts all.
func BenchmarkFlushSeam16x64(b *testing.B) { benchSeam(b, 16, 64, 0) }

// BenchmarkFlushSeam1024x64 is the same with a full MaxIovecs batch.
func BenchmarkFlushSeam1024x64(b *testing.B) { benchSeam(b, ioflush.MaxIovecs, 64, 0) }

// BenchmarkFlushSeamBudget splits one 64 KiB segment into 4 KiB budgeted
// flushes: 16 Flush calls per op.
func BenchmarkFlushSeamBudget(b *testing.B) { benchSeam(b, 1, 64<<10, 4<<10) }

func benchSeam(b *testing.B, segs, size, budget int) {
	defer ioflush.SetWritev(acceptAll)()
	q := ringq.New[ioflush.Segment](segs)
	buf := make([]byte, size)
	free := func() {}
	var f ioflush.Flusher
	warmUp(b, &f, 3, -1)
	b.SetBytes(int64(segs * size))
	b.ReportAllocs()
	for b.Loop() {
		for range segs {
			q.Push(ioflush.Segment{Buf: buf, Free: free})
		}
		for {
			_, res, err := f.Flush(3, q, budget)
			if err != nil {
				b.Fatal(err)
			}
			if res == ioflush.Flushed {
				break
			}
		}
	}
}

// BenchmarkWritev compares the system calls a flush can make, each writing
// to a socketpair and then read back once: the raw writev Flush uses
// against the ordinary (entersyscall/exitsyscall) one, 16 iovecs of 64 B;
// and for a single 1 KiB buffer, the write(2) RawWritev makes for one iovec
// against a writev(2) of it (about 150 ns apart per call on the target
// machines).
func BenchmarkWritev(b *testing.B) {
	writevWith := func(call func(trap, a1, a2, a3 uintptr) (uintptr, uintptr, unix.Errno)) ioflush.WritevFunc {
		return func(fd int, iov []unix.Iovec) (int, unix.Errno) {
			r, _, errno := call(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
			return int(r), errno
		}
	}
	for _, bc := range []struct {
		name       string
		fn         ioflush.WritevFunc
		iovs, size int
	}{
		{"16x64/raw", ioflush.RawWritev, 16, 64},
		{"16x64/syscall", writevWith(unix.Syscall), 16, 64},
		{"1x1024/write", ioflush.RawWritev, 1, 1024},
		{"1x1024/writev", writevWith(unix.RawSyscall), 1, 1024},
	} {
		b.Run(bc.name, func(b *testing.B) {
			w, r := nonblockingPair(b, "unix", 0)
			buf := make([]byte, bc.size)
			iov := make([]unix.Iovec, bc.iovs)
			for i := range iov {
				iov[i].Base = &buf[0]
				iov[i].SetLen(len(buf))
			}
			want := bc.iovs * bc.size
			rbuf := make([]byte, 4096)
			b.ReportAllocs()
			for b.Loop() {
				if n, errno := bc.fn(w, iov); n != want || errno != 0 {
					b.Fatalf("writev = %d, %v", n, errno)
				}
				if n, err := unix.Read(r, rbuf); n != want || err != nil {
					b.Fatalf("read = %d, %v", n, err)
				}
			}
		})
	}
}

// warmUp makes f allocate its scratch before the timed loop, writing one byte
// to w and reading it back from r (r < 0: nothing to read).
func warmUp(b *testing.B, f *ioflush.Flusher, w, r int) {
	q := ringq.New[ioflush.Segment](1)
	q.Push(ioflush.Segment{Buf: []byte{1}})
	if _, res, err := f.Flush(w, q, 0); res != ioflush.Flushed || err != nil {
		b.Fatalf("warm-up Flush = %v, %v", res, err)
	}
	if r >= 0 {
		for {
			if _, err := unix.Read(r, make([]byte, 1)); err != unix.EAGAIN {
				return
			}
		}
	}
}
