//go:build linux

package bench

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pairWorker returns a closed-loop worker with one connection on one end of a
// socketpair; the test plays the server on the other end.
func pairWorker(t testing.TB, codec Codec, inFlight, size int) (*worker, *conn, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	maxWire := codec.WireBytes(size)
	w := &worker{
		codec: codec, size: FixedSize(size), closed: true, inFlight: inFlight,
		rbuf: make([]byte, readBufferBytes+maxWire), filler: newFiller(size),
		base: time.Now(), warmEnd: 0, endNanos: int64(time.Hour),
		tally: newTally(),
	}
	c := &conn{fd: fds[0], q: newInflight(inFlight), out: make([]byte, 0, max(maxWire, min(inFlight*maxWire, maxOutBatchBytes)))}
	if codec != CodecRaw {
		c.tail = make([]byte, 0, maxWire)
	}
	w.conns = []*conn{c}
	now := w.now()
	for i := 0; i < inFlight; i++ {
		c.q.push(request{intendedNanos: now, size: int32(size)})
		c.owed++
	}
	return w, c, fds[1]
}

// echoPeer reads what the generator wrote and writes it back, optionally in
// two pieces to exercise partial frames.
func echoPeer(t testing.TB, fd int, buf []byte, split bool) {
	n, err := unix.Read(fd, buf)
	if err != nil {
		t.Fatalf("peer read: %v", err)
	}
	if split && n > 1 {
		if _, err := unix.Write(fd, buf[:n/2]); err != nil {
			t.Fatal(err)
		}
		if _, err := unix.Write(fd, buf[n/2:n]); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := unix.Write(fd, buf[:n]); err != nil {
		t.Fatalf("peer write: %v", err)
	}
}

func TestLoopRoundTripsAllocateNothing(t *testing.T) {
	for _, codec := range []Codec{CodecRaw, CodecLength, CodecLine} {
		w, c, peer := pairWorker(t, codec, 16, 64)
		buf := make([]byte, 1<<16)
		w.flush(c) // the first 16 requests
		round := func() {
			echoPeer(t, peer, buf, false)
			w.readConn(c) // completes 16, queues and writes 16 more
		}
		round()
		allocs := testing.AllocsPerRun(200, round)
		if allocs != 0 {
			t.Fatalf("%v: %.1f allocations per round trip of 16 messages, want 0", codec, allocs)
		}
		if c.dead || w.errs.total() != 0 {
			t.Fatalf("%v: connection failed: %v", codec, w.firstErr)
		}
		if w.msgs < 16*200 || w.hist.TotalCount() != w.msgs {
			t.Fatalf("%v: %d messages, %d latencies", codec, w.msgs, w.hist.TotalCount())
		}
	}
}

func TestLoopPartialFramesAndMismatch(t *testing.T) {
	for _, codec := range []Codec{CodecLength, CodecLine, CodecRaw} {
		w, c, peer := pairWorker(t, codec, 4, 100)
		buf := make([]byte, 1<<16)
		w.flush(c)
		for i := 0; i < 50; i++ {
			echoPeer(t, peer, buf, true)
			w.readConn(c)
			w.readConn(c) // the second half, if the first read did not see it
		}
		if c.dead || w.msgs < 4*49 {
			t.Fatalf("%v: %d messages, dead %v: %v", codec, w.msgs, c.dead, w.firstErr)
		}
		// A corrupted echo (wrong sequence number, altered byte) is a mismatch.
		n, _ := unix.Read(peer, buf)
		switch codec {
		case CodecLength:
			buf[4+7] ^= 1 // last byte of the sequence number
		case CodecLine:
			buf[15] = 'z' // not a hex digit
		default:
			buf[n/2] ^= 0x20
		}
		_, _ = unix.Write(peer, buf[:n])
		w.readConn(c)
		if !c.dead || w.errs[ErrMismatched] != 1 {
			t.Fatalf("%v: corrupted echo not detected (dead %v, errors %v)", codec, c.dead, w.errs)
		}
	}
}

func TestLoopServerCloseIsRejected(t *testing.T) {
	w, c, peer := pairWorker(t, CodecLength, 1, 64)
	w.flush(c)
	_ = unix.Shutdown(peer, unix.SHUT_WR)
	w.readConn(c)
	if !c.dead || w.errs[ErrRejected] != 1 || w.dropped != 1 {
		t.Fatalf("dead %v errors %v dropped %d", c.dead, w.errs, w.dropped)
	}
}

// TestLoopGoAway: a final refusal after two echoes answers the two other
// requests in flight and the ones queued on the echoes: all counted as
// refused "goaway", none lost, the connection closed without an error.
func TestLoopGoAway(t *testing.T) {
	w, c, peer := pairWorker(t, CodecLength, 4, 64)
	w.flush(c)
	buf := make([]byte, 1<<16)
	n, err := unix.Read(peer, buf)
	wire := CodecLength.WireBytes(64)
	if err != nil || n != 4*wire {
		t.Fatalf("peer read %d bytes, %v; want %d", n, err, 4*wire)
	}
	reply := append([]byte(nil), buf[:2*wire]...)
	final := "-REJECT goaway 1000"
	reply = append(reply, 0, 0, 0, byte(len(final)))
	reply = append(reply, final...)
	if _, err := unix.Write(peer, reply); err != nil {
		t.Fatal(err)
	}
	w.readConn(c)
	if !c.dead || w.goAways != 1 || w.errs.total() != 0 || w.lost != 0 || w.dropped != 0 {
		t.Fatalf("dead %v, goaways %d, errors %v, lost %d, dropped %d", c.dead, w.goAways, w.errs, w.lost, w.dropped)
	}
	if w.msgs != 2 || w.rejects[goAwayKind] != 4 {
		t.Fatalf("%d served, %d refused goaway; want 2, 4 (2 in flight, 2 queued on the echoes)", w.msgs, w.rejects[goAwayKind])
	}
}

func TestLoopResponseTimeout(t *testing.T) {
	w, c, _ := pairWorker(t, CodecLength, 1, 64)
	w.respTimeout = int64(time.Second)
	w.flush(c)
	sent := c.q.at(0).intendedNanos
	w.housekeeping(sent + int64(time.Second)) // exactly at the limit: kept
	if c.dead {
		t.Fatal("closed at the limit")
	}
	w.housekeeping(sent + int64(time.Second) + 1)
	if !c.dead || w.errs[ErrTimeout] != 1 || !errors.Is(w.firstErr, ErrResponseTimeout) {
		t.Fatalf("dead %v errors %v first %v", c.dead, w.errs, w.firstErr)
	}
}

func BenchmarkLoopRoundTrip16(b *testing.B) {
	w, c, peer := pairWorker(b, CodecLength, 16, 64)
	buf := make([]byte, 1<<16)
	w.flush(c)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		echoPeer(b, peer, buf, false)
		w.readConn(c)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(16*b.N), "ns/msg")
}

// echoServer is a minimal goroutine-per-connection echo on loopback for the
// load tests; corrupt makes it flip a byte of every 10th read.
func echoServer(t *testing.T, corrupt bool) string {
	t.Helper()
	addr, _ := echoServerPeers(t, corrupt)
	return addr
}

// echoServerPeers is echoServer that also reports the peer address of every
// connection it accepted.
func echoServerPeers(t *testing.T, corrupt bool) (addr string, peers func() []net.Addr) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := make([]byte, 64<<10)
				for i := 0; ; i++ {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					if corrupt && i%10 == 9 {
						buf[n/2] ^= 0x20
					}
					if _, err := c.Write(buf[:n]); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String(), func() []net.Addr {
		mu.Lock()
		defer mu.Unlock()
		var out []net.Addr
		for _, c := range conns {
			out = append(out, c.RemoteAddr())
		}
		return out
	}
}

// loadUntil runs Load and, while the run ended without error and enough
// says its window was too short to show what the test looks for, runs it
// again with a window twice as long, up to 4 s. The window is a length of
// wall time, not of work: a loaded machine may answer nothing within a
// short one (GOMAXPROCS=1 beside four CPU hogs, under -race: no message in
// 250 ms). It returns the last run's result, how many runs were made and
// the last run's error.
func loadUntil(t *testing.T, cfg LoadConfig, enough func(*LoadResult) bool) (*LoadResult, int, error) {
	t.Helper()
	for runs := 1; ; runs++ {
		res, err := Load(context.Background(), cfg)
		if err != nil || enough(res) || cfg.Duration >= 4*time.Second {
			return res, runs, err
		}
		t.Logf("%v: a %v window was not enough (msgs %d, errors %v): again with %v", cfg.Codec, cfg.Duration, res.Msgs, res.Errors, 2*cfg.Duration)
		cfg.Duration *= 2
	}
}

// flowing: at least one message was answered, or something failed (which
// the test then reports).
func flowing(r *LoadResult) bool { return r.Msgs > 0 || len(r.Errors) > 0 }

func TestLoadLocalAddr(t *testing.T) {
	addr, peers := echoServerPeers(t, false)
	res, runs, err := loadUntil(t, LoadConfig{
		Addr: addr, LocalAddr: "127.0.0.7", Codec: CodecLength, Conns: 3, InFlight: 1, Size: FixedSize(16),
		Duration: 100 * time.Millisecond,
	}, flowing)
	if err != nil {
		t.Fatal(err)
	}
	if res.Msgs == 0 || res.ConnsOpen != 3 {
		t.Fatalf("msgs %d, conns %d", res.Msgs, res.ConnsOpen)
	}
	got := peers()
	if len(got) != 3*runs {
		t.Fatalf("server accepted %d connections in %d runs, want 3 each", len(got), runs)
	}
	for _, p := range got {
		if ip := p.(*net.TCPAddr).IP; !ip.Equal(net.IPv4(127, 0, 0, 7)) {
			t.Errorf("peer %v, want source 127.0.0.7", p)
		}
	}
}

func TestLoadClosedLoop(t *testing.T) {
	addr := echoServer(t, false)
	for _, codec := range []Codec{CodecRaw, CodecLength, CodecLine, CodecLength2LE} {
		res, _, err := loadUntil(t, LoadConfig{
			Addr: addr, Codec: codec, Conns: 8, InFlight: 4, Size: SizeSpec{Min: 16, Max: 300},
			Warmup: 50 * time.Millisecond, Duration: 250 * time.Millisecond, Workers: 2, ServerPID: 0,
		}, flowing)
		if err != nil {
			t.Fatalf("%v: %v", codec, err)
		}
		if res.Msgs == 0 || res.Latency.Count != res.Msgs || len(res.Errors) != 0 || res.ConnsOpen != 8 {
			t.Fatalf("%v: msgs %d latencies %d errors %v conns %d (%s)", codec, res.Msgs, res.Latency.Count, res.Errors, res.ConnsOpen, res.FirstError)
		}
		if res.PayloadBytes < 16*res.Msgs || res.PayloadBytes > 300*res.Msgs {
			t.Fatalf("%v: %d bytes for %d msgs of 16-300 bytes", codec, res.PayloadBytes, res.Msgs)
		}
		if res.Client == nil || res.Client.CPUSec < 0 || res.HistogramV2 == "" {
			t.Fatalf("%v: usage %+v, histogram %q", codec, res.Client, res.HistogramV2)
		}
	}
}

func TestLoadOpenLoop(t *testing.T) {
	addr := echoServer(t, false)
	res, _, err := loadUntil(t, LoadConfig{
		Addr: addr, Codec: CodecLength, Conns: 4, Size: FixedSize(64), RatePerSec: 2000,
		Warmup: 50 * time.Millisecond, Duration: 500 * time.Millisecond,
	}, flowing)
	if err != nil {
		t.Fatal(err)
	}
	// 2000/s for 0.5 s (or the longer window a second run took): 1000
	// sends intended in the window, however the responses went.
	if want := int64(2000 * res.Config.Duration.Seconds()); res.Intended < want-10 || res.Intended > want+10 {
		t.Fatalf("intended %d, want about %d", res.Intended, want)
	}
	if res.Mode != "open" || res.SendLag == nil || res.Msgs == 0 || len(res.Errors) != 0 {
		t.Fatalf("mode %s lag %v msgs %d errors %v", res.Mode, res.SendLag, res.Msgs, res.Errors)
	}
	if res.Msgs+res.Unfinished+res.Missed < res.Intended-20 {
		t.Fatalf("msgs %d + unfinished %d + missed %d fall short of %d intended", res.Msgs, res.Unfinished, res.Missed, res.Intended)
	}
}

func TestLoadDetectsCorruption(t *testing.T) {
	addr := echoServer(t, true)
	res, _, err := loadUntil(t, LoadConfig{
		Addr: addr, Codec: CodecLine, Conns: 4, InFlight: 1, Size: FixedSize(32),
		Warmup: 0, Duration: 300 * time.Millisecond,
	}, func(r *LoadResult) bool { return r.Errors["mismatch"] > 0 || r.ConnsLost > 0 })
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors["mismatch"] == 0 || res.ConnsLost == 0 {
		t.Fatalf("corruption not detected: errors %v lost %d", res.Errors, res.ConnsLost)
	}
}

func TestLoadRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = Load(context.Background(), LoadConfig{Addr: addr, Codec: CodecRaw, Conns: 3, InFlight: 1, Size: FixedSize(8), Duration: time.Second})
	if !errors.Is(err, ErrNoConnections) {
		t.Fatalf("err %v, want ErrNoConnections", err)
	}
}

func TestLoadValidates(t *testing.T) {
	for i, cfg := range []LoadConfig{
		{Codec: CodecRaw, Conns: 1, InFlight: 1, Size: FixedSize(8), Duration: time.Second},
		{Addr: "x:1", Codec: CodecRaw, Conns: 0, InFlight: 1, Size: FixedSize(8), Duration: time.Second},
		{Addr: "x:1", Codec: CodecRaw, Conns: 1, InFlight: -1, Size: FixedSize(8), Duration: time.Second},
		{Addr: "x:1", Codec: CodecRaw, Conns: 1, InFlight: 1, Size: FixedSize(0), Duration: time.Second},
		{Addr: "x:1", Codec: CodecRaw, Conns: 1, InFlight: 1, Size: FixedSize(8)},
		{Addr: "x:1", Codec: Codec(9), Conns: 1, InFlight: 1, Size: FixedSize(8), Duration: time.Second},
		{Addr: "x:1", LocalAddr: "not-an-ip", Codec: CodecRaw, Conns: 1, InFlight: 1, Size: FixedSize(8), Duration: time.Second},
		{Addr: "127.0.0.1:1", LocalAddr: "::1", Codec: CodecRaw, Conns: 1, InFlight: 1, Size: FixedSize(8), Duration: time.Second},
	} {
		if _, err := Load(context.Background(), cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%d: %v", i, err)
		}
	}
}

func TestLoadRESPAndHTTP(t *testing.T) {
	for _, codec := range []Codec{CodecRESP, CodecHTTP} {
		addr := respHTTPEchoServer(t, codec)
		res, _, err := loadUntil(t, LoadConfig{
			Addr: addr, Codec: codec, Conns: 4, InFlight: 4, Size: SizeSpec{Min: 1, Max: 300},
			Warmup: 50 * time.Millisecond, Duration: 250 * time.Millisecond, Workers: 2,
		}, flowing)
		if err != nil {
			t.Fatalf("%v: %v", codec, err)
		}
		if res.Msgs == 0 || res.Latency.Count != res.Msgs || len(res.Errors) != 0 || res.ConnsOpen != 4 {
			t.Fatalf("%v: msgs %d latencies %d errors %v conns %d (%s)", codec, res.Msgs, res.Latency.Count, res.Errors, res.ConnsOpen, res.FirstError)
		}
	}
}

// TestLoadReconnectsAfterGoAway: with Reconnect, a connection the server
// closes with a final refusal is dialled again after its retry-after; a
// refusal at accept (the second connection gets one before any request)
// closes it again, and the third is served. Without Reconnect it stays
// closed. Every request is answered: none lost, none an error.
func TestLoadReconnectsAfterGoAway(t *testing.T) {
	final := "-REJECT goaway 20"
	frame := append([]byte{0, 0, 0, byte(len(final))}, final...)
	for _, reconnect := range []bool{true, false} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer c.Close()
					buf := make([]byte, 64<<10)
					if n == 1 { // refused at accept: the refusal, then the close
						c.Write(frame)
						return
					}
					for {
						k, err := c.Read(buf)
						if err != nil {
							return
						}
						if n == 0 { // the final refusal after one read, unanswered, in the window
							time.Sleep(10 * time.Millisecond)
							c.Write(frame)
							return
						}
						if _, err := c.Write(buf[:k]); err != nil {
							return
						}
					}
				}()
			}
		}()
		res, err := Load(context.Background(), LoadConfig{
			Addr: ln.Addr().String(), Codec: CodecLength, Conns: 1, InFlight: 2, Size: FixedSize(16),
			Warmup: time.Millisecond, Duration: 400 * time.Millisecond, Reconnect: reconnect,
		})
		ln.Close()
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Errors) != 0 || res.ConnsLost != 0 || res.Dropped != 0 {
			t.Fatalf("reconnect %v: errors %v (%s), %d lost, %d dropped", reconnect, res.Errors, res.FirstError, res.ConnsLost, res.Dropped)
		}
		switch {
		case reconnect && (res.GoAways != 2 || res.Reconnects != 2 || res.Msgs == 0 || res.Rejects["goaway"] != 4):
			t.Fatalf("reconnect: %d final refusals, %d reconnects, %d served, %d refused goaway; want 2, 2, some, 4", res.GoAways, res.Reconnects, res.Msgs, res.Rejects["goaway"])
		case !reconnect && (res.GoAways != 1 || res.Reconnects != 0 || res.Msgs != 0 || res.Rejects["goaway"] != 2):
			t.Fatalf("no reconnect: %d final refusals, %d reconnects, %d served, %d refused goaway; want 1, 0, 0, 2", res.GoAways, res.Reconnects, res.Msgs, res.Rejects["goaway"])
		}
	}
}
