//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package uring_test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/uring"
)

// BenchmarkEchoCycle measures one echo over loopback through the ring:
// the client's write, the loop's turns (multishot recv into a provided
// buffer, send from it, recycle), the client's read. Client and loop share
// the goroutine, so ns/op is the whole round trip, both sides' system calls
// included.
func BenchmarkEchoCycle(b *testing.B) {
	for _, size := range []int{64, 1024} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			g := newEchoRig(b, size)
			g.cycle(b)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			turns := g.e.turns
			for b.Loop() {
				g.cycle(b)
			}
			b.ReportMetric(float64(g.e.turns-turns)/float64(b.N), "enters/op")
		})
	}
}

// BenchmarkNop measures the ring's own overhead per operation: prepare a
// no-op, submit and wait with one io_uring_enter, reap it.
func BenchmarkNop(b *testing.B) {
	for _, batch := range []int{1, 32} {
		b.Run(fmt.Sprintf("batch%d", batch), func(b *testing.B) {
			r := newRing(b, uring.Config{Entries: 64})
			var cqes [64]uring.CQE
			b.ReportAllocs()
			for b.Loop() {
				for range batch {
					if _, err := r.PrepNop(1); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := r.SubmitAndWait(batch, time.Second); err != nil {
					b.Fatal(err)
				}
				n := r.PeekBatch(cqes[:])
				r.Advance(n)
				if n != batch {
					b.Fatalf("reaped %d of %d", n, batch)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/nop")
		})
	}
}

// BenchmarkEchoCycleSyscalls is the same cycle with the server side done by
// plain blocking read and write system calls on the accepted socket, as a
// reference for BenchmarkEchoCycle: both make four system calls per echo
// (client write, two on the server side, client read).
func BenchmarkEchoCycleSyscalls(b *testing.B) {
	for _, size := range []int{64, 1024} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			sfd, client := acceptPair(b)
			raw, err := client.(*net.TCPConn).SyscallConn()
			if err != nil {
				b.Fatal(err)
			}
			var cfd int
			raw.Control(func(fd uintptr) { cfd = int(fd) })
			_ = unix.SetNonblock(cfd, false)
			_ = unix.SetsockoptInt(cfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
			_ = unix.SetsockoptInt(sfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
			msg, buf, back := make([]byte, size), make([]byte, 4096), make([]byte, size)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := unix.Write(cfd, msg); err != nil {
					b.Fatal(err)
				}
				n, err := unix.Read(sfd, buf)
				if n != size || err != nil {
					b.Fatalf("server read = %d, %v", n, err)
				}
				if _, err := unix.Write(sfd, buf[:n]); err != nil {
					b.Fatal(err)
				}
				for got := 0; got < size; {
					n, err := unix.Read(cfd, back[got:])
					if n <= 0 || err != nil {
						b.Fatalf("client read = %d, %v", n, err)
					}
					got += n
				}
			}
		})
	}
}
