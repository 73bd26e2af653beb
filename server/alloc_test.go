package server

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol"
)

// pipelined returns n length-prefixed frames of size bytes each, as one
// buffer.
func pipelined(n, size int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		b = binary.BigEndian.AppendUint32(b, uint32(size))
		for j := 0; j < size; j++ {
			b = append(b, byte(i+j))
		}
	}
	return b
}

// echoHandlerAlloc is the echo handler of cmd/echo.
var echoHandlerAlloc = HandlerFuncs{Frame: func(c *Conn, frame []byte) Action {
	if err := c.WriteFrame(frame); err != nil {
		c.CloseWithError(err)
	}
	return None
}}

// TestEchoZeroAllocs drives a real loop over loopback: 16 pipelined 64-byte
// frames per round trip, length codec (decode, handler, WriteFrame into the
// out-queue, one writev). The steady state allocates nothing, in the
// engine or the client.
func TestEchoZeroAllocs(t *testing.T) { echoZeroAllocs(t, BackendEpoll) }

// TestEchoZeroAllocsIOURing is TestEchoZeroAllocs on the io_uring backend
// (epoll where the kernel refuses it).
func TestEchoZeroAllocsIOURing(t *testing.T) { echoZeroAllocs(t, BackendIOURing) }

func echoZeroAllocs(t *testing.T, b Backend) {
	if raceEnabled {
		t.Skip("the race detector's bookkeeping allocates")
	}
	e := start(t, Config{Loops: 1, Codec: codecByName(t, "length", 0), Backend: b}, echoHandlerAlloc)
	t.Logf("backend %v", e.Backend())
	round, _, _ := echoRounds(t, e)
	if a := testing.AllocsPerRun(500, round); a != 0 {
		t.Errorf("%.2f allocations per round trip of 16 messages, want 0", a)
	}
}

// echoRounds dials e and returns a round trip of 16 pipelined 64-byte
// length-prefixed frames (what was sent and what came back) after 200 of
// them have warmed the pools. A round reads 16 reply frames by their
// headers, not len(out) bytes: a frame refused (a shorter reject frame in
// its place) fails the caller's checks instead of hanging the read.
func echoRounds(t *testing.T, e *Engine) (round func(), out, in []byte) {
	t.Helper()
	const frames = 16
	c := dial(t, e)
	out = pipelined(frames, 64)
	buf := make([]byte, 64<<10)
	round = func() {
		c.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := c.Write(out); err != nil {
			t.Fatal(err)
		}
		n, off, got := 0, 0, 0
		for got < frames {
			if n-off >= 4 {
				if end := off + 4 + int(binary.BigEndian.Uint32(buf[off:])); end <= n {
					off, got = end, got+1
					continue
				}
			}
			m, err := c.Read(buf[n:])
			if err != nil {
				t.Fatalf("reply %d of %d: %v (engine: %d rejects)", got+1, frames, err, e.Stats().Rejects)
			}
			n += m
		}
		in = buf[:n]
	}
	for i := 0; i < 200; i++ { // warm the pools
		round()
	}
	return round, out, in
}

// BenchmarkEcho: conns connections, each with 16 pipelined 64-byte frames
// in flight (length codec), through one loop; ns/op and allocs/op are per
// echoed message, client included.
func BenchmarkEcho(b *testing.B) {
	for _, conns := range []int{1, 16} {
		b.Run(map[int]string{1: "conns=1", 16: "conns=16"}[conns], func(b *testing.B) {
			e := start(b, Config{Loops: 1, Codec: protocolLength()}, echoHandlerAlloc)
			echoBench(b, e, conns)
			s := e.Stats()
			msgs := float64(s.Frames)
			b.ReportMetric(float64(s.Reads)/msgs, "reads/msg")
			b.ReportMetric(float64(s.Flushes)/msgs, "writevs/msg")
			b.ReportMetric(float64(s.Turns)/msgs, "turns/msg")
		})
	}
}

// echoBench echoes b.N 64-byte length-prefixed frames through e over conns
// connections, 16 pipelined on each, and stops the timer: ns/op and
// allocs/op are per echoed frame, client included.
func echoBench(b *testing.B, e *Engine, conns int) {
	const depth, size = 16, 64
	out := pipelined(depth, size)
	clients := make([]net.Conn, conns)
	for i := range clients {
		clients[i] = dial(b, e)
	}
	rounds := (b.N + conns*depth - 1) / (conns * depth)
	b.ReportAllocs()
	b.SetBytes(size)
	b.ResetTimer()
	roundTrips(b, clients, out, rounds)
	b.StopTimer()
}

func protocolLength() protocol.Codec { return protocol.LengthPrefixed{Header: protocol.Fixed32} }

// roundTrips has every client write out and read as many bytes back,
// rounds times, all clients at once (echoed pipelined frames).
func roundTrips(tb testing.TB, clients []net.Conn, out []byte, rounds int) {
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func(c net.Conn) {
			defer wg.Done()
			in := make([]byte, len(out))
			for r := 0; r < rounds; r++ {
				if _, err := c.Write(out); err != nil {
					tb.Error(err)
					return
				}
				if _, err := io.ReadFull(c, in); err != nil {
					tb.Error(err)
					return
				}
			}
		}(c)
	}
	wg.Wait()
}

// echoHandlerAvailable encodes each echo into Conn.AvailableBuffer and
// writes it, the append-style reply path (no scratch copy).
var echoHandlerAvailable = HandlerFuncs{Frame: func(c *Conn, frame []byte) Action {
	b := binary.BigEndian.AppendUint32(c.AvailableBuffer(), uint32(len(frame)))
	if err := c.Write(append(b, frame...)); err != nil {
		c.CloseWithError(err)
	}
	return None
}}

// TestEchoAvailableBufferZeroAllocs is TestEchoZeroAllocs with replies
// appended to Conn.AvailableBuffer and passed to Write, and checks the
// bytes echoed.
func TestEchoAvailableBufferZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's bookkeeping allocates")
	}
	e := start(t, Config{Loops: 1, Codec: codecByName(t, "length", 0)}, echoHandlerAvailable)
	round, out, in := echoRounds(t, e)
	if !bytes.Equal(in, out) {
		t.Fatal("echoed bytes differ")
	}
	if a := testing.AllocsPerRun(500, round); a != 0 {
		t.Errorf("%.2f allocations per round trip of 16 messages, want 0", a)
	}
}
