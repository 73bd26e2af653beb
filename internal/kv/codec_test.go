package kv

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/protocol/envelope"
	"github.com/sluicenet/sluice/protocol/resp"
)

func TestRESPCodecDecode(t *testing.T) {
	c := RESPCodec{resp.Codec{MaxBulkBytes: 8}}
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

func TestRESPCodecAppendReject(t *testing.T) {
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
		got := string(RESPCodec{}.AppendReject(nil, nil, tt.reason, tt.after))
		if got != tt.want {
			t.Errorf("%d: got %q, want %q", i, got, tt.want)
		}
	}
	if !raceEnabled {
		dst := make([]byte, 0, 128)
		if n := testing.AllocsPerRun(100, func() { dst = RESPCodec{}.AppendReject(dst[:0], nil, "tenant", time.Second) }); n != 0 {
			t.Errorf("AppendReject: %v allocs, want 0", n)
		}
	}
}

func TestEnvelopeCodecAppendReject(t *testing.T) {
	req := envelope.Message{Type: envelope.TypeRequest, RequestID: 77, Method: []byte("GET"), Payload: []byte("k")}
	frame, err := req.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		frame  []byte
		reason string
		after  time.Duration
		id     uint64
		status envelope.Status
	}{
		{frame, "tenant", 250 * time.Millisecond, 77, envelope.StatusTooManyRequests},
		{frame, "codel", 10 * time.Millisecond, 77, envelope.StatusUnavailable},
		{frame, "draining", 0, 77, envelope.StatusUnavailable},
		{[]byte("junk"), "global", time.Second, 0, envelope.StatusUnavailable},
	}
	for i, tt := range tests {
		out := envelope.Codec{}.AppendReject(nil, tt.frame, tt.reason, tt.after)
		var m envelope.Message
		if err := envelope.Parse(out, &m); err != nil {
			t.Fatalf("%d: reject does not parse: %v", i, err)
		}
		ra, has := m.RetryAfter()
		if m.Type != envelope.TypeReject || m.RequestID != tt.id || m.Status != tt.status ||
			string(m.Payload) != tt.reason || ra != tt.after || has != (tt.after > 0) {
			t.Errorf("%d: got %+v (retry-after %v %v)", i, m, ra, has)
		}
	}
}

func TestPutPayload(t *testing.T) {
	p := AppendPut(nil, []byte("key"), []byte("value"))
	k, v, err := DecodePut(p)
	if err != nil || string(k) != "key" || string(v) != "value" {
		t.Fatalf("round trip: %q %q %v", k, v, err)
	}
	for _, bad := range [][]byte{nil, {0}, {5, 'a'}, {0x80}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}} {
		if _, _, err := DecodePut(bad); !errors.Is(err, ErrBadPayload) {
			t.Errorf("DecodePut(%x): %v, want ErrBadPayload", bad, err)
		}
	}
	k, v, err = DecodePut(AppendPut(nil, []byte("k"), nil))
	if err != nil || string(k) != "k" || len(v) != 0 {
		t.Fatalf("empty value: %q %q %v", k, v, err)
	}
}
