//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package server

import (
	"bytes"
	"context"
	"io"
	"net"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestRecvModeEngineEcho: an engine on the io_uring backend in recv mode
// echoes a pipelined burst larger than one ring buffer, byte for byte.
func TestRecvModeEngineEcho(t *testing.T) {
	e := start(t, Config{Loops: 1, Codec: codecByName(t, "length", 0), Backend: BackendIOURing}, echoHandlerAlloc)
	if e.Backend() != BackendIOURing {
		t.Skip("io_uring backend unavailable")
	}
	c := dial(t, e)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	out := pipelined(200, 100) // 20.8 KB: several buffers
	go c.Write(out)
	in := make([]byte, len(out))
	if _, err := io.ReadFull(c, in); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in, out) {
		t.Fatal("echo differs")
	}
	if s := e.Stats(); s.Reads == 0 || s.Flushes == 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestRecvModeEarlySubmit: with handlers that take 300 µs per frame, a
// turn's replies are submitted before the turn ends (Stats.EarlySubmits),
// once the loop has seen a turn of such frames, and every reply arrives.
func TestRecvModeEarlySubmit(t *testing.T) {
	h := HandlerFuncs{Frame: func(c *Conn, frame []byte) Action {
		busyFor(300 * time.Microsecond)
		if err := c.WriteFrame(frame); err != nil {
			t.Error(err)
		}
		return None
	}}
	e := start(t, Config{Loops: 1, Codec: codecByName(t, "length", 0), Backend: BackendIOURing}, h)
	if e.Backend() != BackendIOURing {
		t.Skip("io_uring backend unavailable")
	}
	const conns, rounds = 16, 4
	cs := make([]*net.TCPConn, conns)
	for i := range cs {
		cs[i] = dial(t, e)
		cs[i].SetDeadline(time.Now().Add(10 * time.Second))
	}
	frame := pipelined(1, 32)
	for r := 0; r < rounds; r++ {
		for _, c := range cs {
			if _, err := c.Write(frame); err != nil {
				t.Fatal(err)
			}
		}
		for i, c := range cs {
			in := make([]byte, len(frame))
			if _, err := io.ReadFull(c, in); err != nil || !bytes.Equal(in, frame) {
				t.Fatalf("round %d conn %d: %q, %v", r, i, in, err)
			}
		}
	}
	if s := e.Stats(); s.EarlySubmits == 0 {
		t.Errorf("no early submission in %d rounds of %d frames at 300 µs each (turns %d)", rounds, conns, s.Turns)
	}
}

// spinPool is a PoolHandler that burns d of CPU per frame, echoes it, and
// burns after more (time for the woken loop to queue for the P, as a busy
// loop is under load).
type spinPool struct{ d, after time.Duration }

func (h spinPool) ServeFrame(_ context.Context, c *Conn, frame []byte) Action {
	busyFor(h.d)
	if err := c.WriteFrame(frame); err != nil {
		c.CloseWithError(err)
	}
	busyFor(h.after)
	return None
}

// TestRecvModeYieldSubmits: with one P shared by the loop and a pool
// worker, a reply the loop prepared leaves before the loop yields the P to
// the worker, not with the next wait after the worker's next frame. Two
// connections each send a frame that costs 8 ms (under the scheduler's
// 10 ms preemption): the first reply must reach the client's socket about
// one frame before the second, where a send held to the next wait came
// with it. The client runs on the same single P, so the arrivals are the
// kernel's receive timestamps (SO_TIMESTAMPNS), not when it read them. The
// kernel turns receive timestamping on lazily (a static key it flips from a
// work queue), so a reply may come without a stamp: that round is run
// again.
func TestRecvModeYieldSubmits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const work = 8 * time.Millisecond
	e := start(t, Config{Loops: 1, Codec: codecByName(t, "length", 0), Backend: BackendIOURing,
		Pool: PoolConfig{Handler: spinPool{work, time.Millisecond}, Workers: 1}}, HandlerFuncs{})
	if e.Backend() != BackendIOURing {
		t.Skip("io_uring backend unavailable")
	}
	cs := []*net.TCPConn{dial(t, e), dial(t, e)}
	for _, c := range cs {
		rc, err := c.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
		}); err != nil || serr != nil {
			t.Fatal(err, serr)
		}
	}
	frame := pipelined(1, 32)
	var gaps []time.Duration
	for r := 0; len(gaps) < 3; r++ {
		if r == 20 {
			t.Fatalf("%d rounds, %d with both replies stamped: no receive timestamps", r, len(gaps))
		}
		for _, c := range cs {
			if _, err := c.Write(frame); err != nil {
				t.Fatal(err)
			}
		}
		var at [2]time.Time
		stamped := true
		for i, c := range cs {
			var ok bool
			at[i], ok = recvStamped(t, c, frame)
			stamped = stamped && ok
		}
		if stamped {
			gaps = append(gaps, at[1].Sub(at[0]).Abs())
		}
	}
	slices.Sort(gaps)
	t.Logf("gaps between the two replies' arrivals: %v", gaps)
	if gaps[1] < work/2 {
		t.Errorf("median gap between the arrivals of the replies of two %v frames served one after the other: %v, want at least %v", work, gaps[1], work/2)
	}
}

// recvStamped reads want from c (one segment) and returns the kernel's
// receive timestamp of it (SO_TIMESTAMPNS on), false if it came unstamped.
func recvStamped(t *testing.T, c *net.TCPConn, want []byte) (time.Time, bool) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	buf, oob := make([]byte, 2*len(want)), make([]byte, 256)
	var n, oobn int
	var rerr error
	deadline := time.Now().Add(10 * time.Second)
	for n < len(want) && time.Now().Before(deadline) {
		rerr = nil
		if err := rc.Read(func(fd uintptr) bool {
			var k, ko int
			k, ko, _, _, rerr = unix.Recvmsg(int(fd), buf[n:], oob[oobn:], 0)
			if rerr == unix.EAGAIN {
				return false
			}
			n, oobn = n+max(k, 0), oobn+ko
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if rerr != nil {
			t.Fatal(rerr)
		}
	}
	if n != len(want) || !bytes.Equal(buf[:n], want) {
		t.Fatalf("reply %q, want %q", buf[:n], want)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := *(*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
			return time.Unix(ts.Unix()), true
		}
	}
	return time.Time{}, false
}
