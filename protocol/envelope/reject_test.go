package envelope

import (
	"testing"
	"time"
)

func TestCodecAppendReject(t *testing.T) {
	req := Message{Type: TypeRequest, RequestID: 77, Method: []byte("GET"), Payload: []byte("k")}
	frame, err := req.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		frame  []byte
		reason string
		after  time.Duration
		id     uint64
		status Status
	}{
		{frame, "tenant", 250 * time.Millisecond, 77, StatusTooManyRequests},
		{frame, "codel", 10 * time.Millisecond, 77, StatusUnavailable},
		{frame, "draining", 0, 77, StatusUnavailable},
		{[]byte("junk"), "global", time.Second, 0, StatusUnavailable},
	}
	for i, tt := range tests {
		out := Codec{}.AppendReject(nil, tt.frame, tt.reason, tt.after)
		var m Message
		if err := Parse(out, &m); err != nil {
			t.Fatalf("%d: reject does not parse: %v", i, err)
		}
		ra, has := m.RetryAfter()
		if m.Type != TypeReject || m.RequestID != tt.id || m.Status != tt.status ||
			string(m.Payload) != tt.reason || ra != tt.after || has != (tt.after > 0) {
			t.Errorf("%d: got %+v (retry-after %v %v)", i, m, ra, has)
		}
	}
}
