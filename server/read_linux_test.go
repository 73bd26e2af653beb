package server

import (
	"bytes"
	"errors"
	"testing"

	"github.com/sluicenet/sluice/protocol"
	"golang.org/x/sys/unix"
)

// FuzzFraming feeds a byte stream, cut into reads at fuzzed points, through
// the engine's read path (readConn: loop buffer, small-tail copy, in-place
// growth for large frames, read budget and ready list, end of file) with a
// scripted read(2), and checks that the handler sees exactly the frames the
// codec finds in the whole stream, in order, and that the engine's input
// accounting matches what it holds.
func FuzzFraming(f *testing.F) {
	f.Add(uint8(0), []byte("\x00\x00\x00\x03abc\x00\x00\x00\x00\x00\x00\x00\x05hello"), []byte{1, 2, 3})
	f.Add(uint8(1), []byte("hello\nworld\n\npartial"), []byte{5, 0, 7})
	f.Add(uint8(2), []byte("\x03abc\x80\x01"), []byte{2})
	f.Add(uint8(3), []byte("raw bytes are one frame per read"), []byte{9, 9})
	f.Add(uint8(0), append([]byte("\x00\x00\x01\x2c"), bytes.Repeat([]byte("x"), 300)...), []byte{200, 50, 3})
	f.Add(uint8(1), bytes.Repeat([]byte("y"), 400), []byte{100})
	f.Add(uint8(0), []byte("\x00\x01\x00\x00toolarge"), []byte{1})
	f.Fuzz(func(t *testing.T, sel uint8, stream, cuts []byte) {
		codecs := []protocol.Codec{
			protocol.LengthPrefixed{Header: protocol.Fixed32, MaxFrameBytes: 300},
			protocol.Delimited{MaxFrameBytes: 300},
			protocol.LengthPrefixed{Header: protocol.Uvarint, MaxFrameBytes: 300},
			protocol.Raw{},
		}
		codec := codecs[int(sel)%len(codecs)]
		_, raw := codec.(protocol.Raw)
		if len(stream) > 8<<10 {
			stream = stream[:8<<10]
		}

		// what the codec finds in the whole stream
		var want [][]byte
		var wantErr error
		for rest := stream; len(rest) > 0; {
			frame, n, err := codec.Decode(rest)
			if err != nil {
				wantErr = err
				break
			}
			if n == 0 {
				break
			}
			want = append(want, bytes.Clone(frame))
			rest = rest[n:]
		}

		var got [][]byte
		var cause error
		e, err := New(Config{Loops: 1, Codec: codec, ReadBufferBytes: 512, ReadBudgetBytes: 700,
			MaxInBufferBytes: 4096}, HandlerFuncs{
			Frame: func(c *Conn, frame []byte) Action {
				got = append(got, bytes.Clone(frame))
				return None
			},
			Close: func(c *Conn, err error) { cause = err },
		})
		if err != nil {
			t.Fatal(err)
		}
		l := e.loops[0]
		l.buf = make([]byte, 512)
		const fd = 7
		c := &Conn{loop: l, fd: fd, gen: 1}
		c.tm.idx, c.tm.c = -1, c
		l.setConn(fd, c)
		l.nconns = 1

		// the scripted socket: chunk i holds the next cuts[i]%97+1 bytes
		pending := 0 // bytes of the current chunk not yet read
		pos := 0
		eof := false
		defer func(r func(int, []byte) (int, errno), cl func(int)) { sysRead, sysClose = r, cl }(sysRead, sysClose)
		sysClose = func(int) {}
		sysRead = func(_ int, b []byte) (int, errno) {
			if pending == 0 {
				if eof {
					return 0, 0
				}
				return 0, unix.EAGAIN
			}
			n := copy(b, stream[pos:pos+min(pending, len(b))])
			pos += n
			pending -= n
			return n, 0
		}
		for ci := 0; c.flags&fClosed == 0 && c.closing == nil; ci++ {
			if pos == len(stream) {
				eof = true
			} else {
				size := len(stream) - pos
				if ci < len(cuts) {
					size = min(size, int(cuts[ci])%97+1)
				}
				pending = size
			}
			l.turn++
			l.now += 1000
			l.readConn(c, true) // an edge
			for l.readyq.head != nil && c.flags&fClosed == 0 {
				l.turn++
				l.readyPhase() // budget spent: served next turn without an edge
			}
			if l.bp.inBytes != len(c.in) || len(c.in) > l.cfg.MaxInBufferBytes {
				t.Fatalf("input accounting: loop holds %d, connection %d (max %d)", l.bp.inBytes, len(c.in), l.cfg.MaxInBufferBytes)
			}
			if pending != 0 && c.flags&fClosed == 0 && c.closing == nil {
				t.Fatalf("read stopped with %d bytes of an edge unread", pending)
			}
		}

		if raw {
			if joined := bytes.Join(got, nil); !bytes.Equal(joined, stream) {
				t.Fatalf("raw frames join to %q, want %q", joined, stream)
			}
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%d frames, want %d (cause %v, codec error %v)", len(got), len(want), cause, wantErr)
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("frame %d = %q, want %q", i, got[i], want[i])
			}
		}
		switch {
		case wantErr != nil:
			if !errors.Is(cause, ErrFrameTooLarge) && !errors.Is(cause, ErrMalformed) {
				t.Fatalf("closed with %v, want the codec's error %v", cause, wantErr)
			}
		case !errors.Is(c.closing, ErrPeerClosed):
			t.Fatalf("connection state %v after end of file, want closing with ErrPeerClosed", c.closing)
		}
	})
}
