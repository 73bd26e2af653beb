//go:build sluice_rxstamp || sluice_stages

package server

// A measurement build, not a feature: with -tags sluice_rxstamp every
// connection's reads go through recvmsg(2) with SO_TIMESTAMPNS on, and the
// engine keeps a histogram of how long the bytes each read returned had
// waited in the kernel's receive buffer: the read's wall clock minus the
// receive timestamp the kernel reports for TCP, the arrival of the last
// segment the read consumed (so a lower bound on the wait of the read's
// oldest bytes). Once a second it prints that second's distribution to
// standard error:
//
//	rxwait reads=N stamped=N p50=… p90=… p99=… p999=… max=…
//
// It answers the overload issue's question whether the queue the loop
// cannot see (bytes waiting in the socket before the loop reads them)
// matters; see docs/OVERLOAD.md. The default build has none of this: the
// indirection is sysRead and listenHook (sys.go).

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rxBucketNanos and rxBuckets: 5 µs buckets up to 100 ms; the last bucket
// holds everything longer.
const (
	rxBucketNanos = 5_000
	rxBuckets     = 20_000
)

// rxNote, when set (the sluice_stages build), hears each stamped read's
// wait by descriptor.
var rxNote func(fd int, waitNanos int64)

var (
	rxHist     [rxBuckets]atomic.Uint64
	rxReads    atomic.Uint64
	rxStamped  atomic.Uint64
	rxMaxNanos atomic.Int64
)

func init() {
	listenHook = func(fd int) error {
		return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}
	sysRead = stampedRead
	go rxReport()
}

// stampedRead is rawRead through recvmsg(2), recording the kernel's
// receive timestamp of what it read.
func stampedRead(fd int, b []byte) (int, errno) {
	var oob [64]byte
	iov := unix.Iovec{Base: unsafe.SliceData(b)}
	iov.SetLen(len(b))
	msg := unix.Msghdr{Iov: &iov, Iovlen: 1, Control: &oob[0]}
	msg.SetControllen(len(oob))
	r, _, e := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), 0)
	if e != 0 {
		return 0, e
	}
	if r > 0 {
		rxReads.Add(1)
		if ts, ok := rxStamp(oob[:msg.Controllen]); ok {
			rxStamped.Add(1)
			w := max(time.Now().UnixNano()-ts, 0)
			if rxNote != nil {
				rxNote(fd, w)
			}
			rxHist[min(w/rxBucketNanos, rxBuckets-1)].Add(1)
			for m := rxMaxNanos.Load(); w > m && !rxMaxNanos.CompareAndSwap(m, w); m = rxMaxNanos.Load() {
			}
		}
	}
	return int(r), 0
}

// rxStamp finds the SCM_TIMESTAMPNS message in oob.
func rxStamp(oob []byte) (int64, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			return (*unix.Timespec)(unsafe.Pointer(&m.Data[0])).Nano(), true
		}
	}
	return 0, false
}

// rxReport prints each second's distribution and starts the next.
func rxReport() {
	var snap [rxBuckets]uint64
	for range time.Tick(time.Second) {
		var n uint64
		for i := range rxHist {
			snap[i] = rxHist[i].Swap(0)
			n += snap[i]
		}
		reads, stamped, mx := rxReads.Swap(0), rxStamped.Swap(0), rxMaxNanos.Swap(0)
		if reads == 0 {
			continue
		}
		q := func(f float64) time.Duration {
			want, acc := uint64(f*float64(n)), uint64(0)
			for i, k := range snap {
				if acc += k; acc > want {
					return time.Duration((i + 1) * rxBucketNanos)
				}
			}
			return time.Duration(rxBuckets * rxBucketNanos)
		}
		fmt.Fprintf(os.Stderr, "rxwait reads=%d stamped=%d p50=%v p90=%v p99=%v p999=%v max=%v\n",
			reads, stamped, q(0.5), q(0.9), q(0.99), q(0.999), time.Duration(mx))
	}
}
