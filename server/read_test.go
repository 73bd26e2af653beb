package server

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol"
)

// TestFramesPerTurn: a pipelined burst far above MaxFramesPerTurn is
// served in order across turns, the rest waiting in the connection's input.
func TestFramesPerTurn(t *testing.T) {
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{}, MaxFramesPerTurn: 16}, newTestHandler())
	c := dial(t, e)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var req bytes.Buffer
	const n = 3000
	for i := 0; i < n; i++ {
		fmt.Fprintf(&req, "%d\n", i)
	}
	go c.Write(req.Bytes())
	r := bufio.NewReader(c)
	for i := 0; i < n; i++ {
		s, err := r.ReadString('\n')
		if err != nil || s != fmt.Sprintf("%d\n", i) {
			t.Fatalf("reply %d: %q, %v", i, s, err)
		}
	}
	// counters are published at the end of a turn, and the last replies
	// may leave (flushEarly) before the turn that decoded them ends
	s := waitStats(t, e, "frame budget spent and every frame counted", func(s Stats) bool { return s.FrameBudgetSpent > 0 && s.Frames >= n })
	if s.Frames != n {
		t.Errorf("frames %d, want %d", s.Frames, n)
	}
	t.Logf("%d frames, frame budget spent %d times, %d turns", s.Frames, s.FrameBudgetSpent, s.Turns)
}

// TestOversizedFrame: a frame over the codec's limit closes that connection
// with ErrFrameTooLarge; another connection is unaffected.
func TestOversizedFrame(t *testing.T) {
	h := newTestHandler()
	e := start(t, Config{Loops: 1, Codec: codecByName(t, "length", 1000)}, h)
	good := dial(t, e)
	h.nextOpen(t)
	bad := dial(t, e)
	badConn := h.nextOpen(t)
	echo := func() error {
		f := append(binary.BigEndian.AppendUint32(nil, 5), "hello"...)
		good.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := good.Write(f); err != nil {
			return err
		}
		got := make([]byte, len(f))
		if _, err := io.ReadFull(good, got); err != nil {
			return err
		}
		if !bytes.Equal(got, f) {
			t.Errorf("echo %q, want %q", got, f)
		}
		return nil
	}
	if err := echo(); err != nil {
		t.Fatal(err)
	}
	bad.Write(binary.BigEndian.AppendUint32(nil, 5000))
	if cause := h.closeOf(t, badConn, 5*time.Second); !errors.Is(cause, ErrFrameTooLarge) {
		t.Fatalf("cause %v, want ErrFrameTooLarge", cause)
	}
	if err := echo(); err != nil {
		t.Fatalf("other connection after the oversized frame: %v", err)
	}
	waitStats(t, e, "one frame-too-large close", func(s Stats) bool { return s.Closed[CauseFrameTooLarge] == 1 })
}

// TestInBufferBackstop: a codec without a frame limit (line codec with a
// huge maximum) cannot make the engine keep more than MaxInBufferBytes.
func TestInBufferBackstop(t *testing.T) {
	h := newTestHandler()
	e := start(t, Config{Loops: 1, Codec: codecByName(t, "line", 1<<30), MaxInBufferBytes: 100 << 10}, h)
	c := dial(t, e)
	sc := h.nextOpen(t)
	go func() {
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		c.Write(bytes.Repeat([]byte("z"), 400<<10)) // no newline
	}()
	if cause := h.closeOf(t, sc, 10*time.Second); !errors.Is(cause, ErrFrameTooLarge) {
		t.Fatalf("cause %v, want ErrFrameTooLarge", cause)
	}
}
