package resp_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/protocol/resp"
)

func TestServerCodecDecode(t *testing.T) {
	c := resp.ServerCodec{Codec: resp.Codec{MaxBulkBytes: 8}}
	tests := []struct {
		in        string
		wantFrame string
		wantN     int
	}{
		{"*1\r\n$4\r\nPING\r\n*1\r\n", "*1\r\n$4\r\nPING\r\n", 14},
		{"*1\r\n$4\r\nPI", "", 0},                  // incomplete: more input needed
		{"PING\r\nGET", "PING\r\n", 6},             // inline
		{"*1\r\n$x\r\n", "*1\r\n$x\r\n", 8},        // malformed: whole buffer as a frame
		{"*1\r\n$99\r\nab", "*1\r\n$99\r\nab", 11}, // bulk over MaxBulkBytes, caught early
	}
	for i, tt := range tests {
		frame, n, err := c.Decode([]byte(tt.in))
		if err != nil || n != tt.wantN || string(frame) != tt.wantFrame {
			t.Errorf("%d: Decode(%q) = %q, %d, %v; want %q, %d, nil", i, tt.in, frame, n, err, tt.wantFrame, tt.wantN)
		}
	}
	// the handler recognises a passed-through error by decoding it again
	_, _, err := c.Codec.Decode([]byte("*1\r\n$99\r\nab"))
	if !errors.Is(err, protocol.ErrFrameTooLarge) {
		t.Fatalf("inner codec: %v, want ErrFrameTooLarge", err)
	}
}

func TestServerCodecAppendReject(t *testing.T) {
	tests := []struct {
		reason string
		after  time.Duration
		want   string
	}{
		{"tenant", 120 * time.Millisecond, "-ERR sluice: too many requests (tenant), retry in 120 ms\r\n"},
		{"codel", 100*time.Millisecond + 1, "-BUSY sluice: server overloaded (codel), retry in 101 ms\r\n"},
		{"global", 0, "-BUSY sluice: server overloaded (global)\r\n"},
		{"odd\r\nreason", time.Second, "-BUSY sluice: server overloaded (odd  reason), retry in 1000 ms\r\n"},
	}
	for i, tt := range tests {
		got := string(resp.ServerCodec{}.AppendReject(nil, nil, tt.reason, tt.after))
		if got != tt.want {
			t.Errorf("%d: got %q, want %q", i, got, tt.want)
		}
	}
	if !raceEnabled {
		dst := make([]byte, 0, 128)
		if n := testing.AllocsPerRun(100, func() { dst = resp.ServerCodec{}.AppendReject(dst[:0], nil, "tenant", time.Second) }); n != 0 {
			t.Errorf("AppendReject: %v allocs, want 0", n)
		}
	}
}

// TestServerCodecParse: Parse names the framing error of a frame Decode
// passed through, and is Parse otherwise.
func TestServerCodecParse(t *testing.T) {
	c := resp.ServerCodec{Codec: resp.Codec{MaxBulkBytes: 8}}
	args, err := c.Parse([]byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), nil)
	if err != nil || len(args) != 2 || string(args[1]) != "k" {
		t.Errorf("whole command: %q, %v", args, err)
	}
	if _, err := c.Parse([]byte("*1\r\n$99\r\nab"), nil); !errors.Is(err, protocol.ErrFrameTooLarge) {
		t.Errorf("oversize bulk: %v, want ErrFrameTooLarge", err)
	}
	if _, err := c.Parse([]byte("*1\r\n$x\r\n"), nil); !errors.Is(err, protocol.ErrMalformed) {
		t.Errorf("bad length: %v, want ErrMalformed", err)
	}
}
