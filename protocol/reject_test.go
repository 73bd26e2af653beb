package protocol_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/protocol/envelope"
	"github.com/sluicenet/sluice/protocol/http1"
	"github.com/sluicenet/sluice/protocol/resp"
)

// TestRejecters pins the reject each built-in codec sends.
func TestRejecters(t *testing.T) {
	req := envelope.AppendMessage(nil, &envelope.Message{Type: envelope.TypeRequest, RequestID: 42, Method: []byte("GET")})
	for i, c := range []struct {
		codec  protocol.Codec
		frame  []byte
		reason string
		retry  time.Duration
		want   string
	}{
		{protocol.LengthPrefixed{}, nil, "tenant", 120 * time.Millisecond, "\x00\x00\x00\x12-REJECT tenant 120"},
		{protocol.Delimited{}, nil, "codel", 100*time.Millisecond + 1, "-REJECT codel 101\n"},
		{protocol.Delimited{}, nil, "queue", 0, "-REJECT queue 0\n"},
		{resp.Codec{}, nil, "tenant", 5 * time.Millisecond, "-ERR sluice: too many requests (tenant), retry in 5 ms\r\n"},
		{resp.Codec{}, nil, "codel", 0, "-BUSY sluice: server overloaded (codel)\r\n"},
		{http1.Codec{}, nil, "tenant", 1500 * time.Millisecond, "HTTP/1.1 429 Too Many Requests\r\n"},
		{http1.Codec{}, nil, "global", 0, "HTTP/1.1 503 Service Unavailable\r\n"},
	} {
		rj, ok := c.codec.(protocol.Rejecter)
		if !ok {
			t.Fatalf("%d: no rejecter for %T", i, c.codec)
		}
		got := string(rj.AppendReject(nil, c.frame, c.reason, c.retry))
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%d: %T: %q, want prefix %q", i, c.codec, got, c.want)
		}
		if _, ok := c.codec.(http1.Codec); ok && !strings.Contains(got, "Retry-After: ") {
			t.Errorf("%d: no Retry-After in %q", i, got)
		}
	}
	// envelope: the request's id, 429 for tenant, 503 otherwise
	for _, c := range []struct {
		reason string
		status envelope.Status
	}{{"tenant", envelope.StatusTooManyRequests}, {"codel", envelope.StatusUnavailable}} {
		b := envelope.Codec{}.AppendReject(nil, req, c.reason, 250*time.Millisecond)
		var m envelope.Message
		if err := envelope.Parse(b, &m); err != nil {
			t.Fatalf("envelope reject does not parse: %v", err)
		}
		if m.Type != envelope.TypeReject || m.RequestID != 42 || m.Status != c.status || m.RetryAfterMillis != 250 || string(m.Payload) != c.reason {
			t.Errorf("envelope reject %+v for %q", m, c.reason)
		}
	}
	if _, ok := protocol.Codec(protocol.Raw{}).(protocol.Rejecter); ok {
		t.Error("raw has a rejecter")
	}
}

// TestRejectStatus pins the one reason-to-status mapping and its envelope
// form.
func TestRejectStatus(t *testing.T) {
	for i, c := range []struct {
		reason string
		http   int
		env    envelope.Status
	}{
		{protocol.ReasonTenant, 429, envelope.StatusTooManyRequests},
		{protocol.ReasonFair, 429, envelope.StatusTooManyRequests},
		{protocol.ReasonInProgress, 409, envelope.StatusConflict},
		{protocol.ReasonMismatch, 422, envelope.StatusConflict},
		{"codel", 503, envelope.StatusUnavailable},
		{"draining", 503, envelope.StatusUnavailable},
		{"", 503, envelope.StatusUnavailable},
	} {
		if got := protocol.RejectStatus(c.reason); got != c.http {
			t.Errorf("%d: RejectStatus(%q) = %d, want %d", i, c.reason, got, c.http)
		}
		if got := envelope.RejectStatus(c.reason); got != c.env {
			t.Errorf("%d: envelope.RejectStatus(%q) = %v, want %v", i, c.reason, got, c.env)
		}
	}
}

// TestRetryAfterMillis: rounded up, never early; nothing for no hint.
func TestRetryAfterMillis(t *testing.T) {
	for i, c := range []struct {
		d    time.Duration
		want int64
	}{{0, 0}, {-time.Second, 0}, {1, 1}, {time.Millisecond, 1}, {time.Millisecond + 1, 2}, {1500 * time.Millisecond, 1500}} {
		if got := protocol.RetryAfterMillis(c.d); got != c.want {
			t.Errorf("%d: RetryAfterMillis(%v) = %d, want %d", i, c.d, got, c.want)
		}
	}
}

// TestRejectZeroAllocs: the framed rejects allocate nothing when dst has
// room (through the interface, as the engine calls them).
func TestRejectZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's bookkeeping allocates")
	}
	dst := make([]byte, 0, 512)
	for _, rj := range []protocol.Rejecter{protocol.LengthPrefixed{}, protocol.LengthPrefixed{Header: protocol.Uvarint},
		protocol.Delimited{}, protocol.LengthField{Size: 2}, protocol.LengthField{Offset: 3, Size: 8, KeepHeader: true},
		resp.Codec{}, envelope.Codec{}, http1.Codec{}} {
		if a := testing.AllocsPerRun(200, func() { dst = rj.AppendReject(dst[:0], nil, "codel", time.Second) }); a != 0 {
			t.Errorf("%T: %.1f allocations per reject, want 0", rj, a)
		}
	}
}

// FuzzParseRejectText: never panics; what AppendRejectText writes parses
// back to the same reason and the retry-after rounded up to a millisecond.
func FuzzParseRejectText(f *testing.F) {
	f.Add([]byte("-REJECT tenant 120"), "codel", int64(1500000))
	f.Add([]byte("-REJECT  1"), "", int64(0))
	f.Fuzz(func(t *testing.T, b []byte, reason string, retryNanos int64) {
		protocol.ParseRejectText(b)
		if reason == "" || strings.ContainsAny(reason, " ") || retryNanos < 0 || retryNanos > int64(time.Hour) {
			return
		}
		text := protocol.AppendRejectText(nil, reason, time.Duration(retryNanos))
		r, d, ok := protocol.ParseRejectText(text)
		want := time.Duration(protocol.RetryAfterMillis(time.Duration(retryNanos))) * time.Millisecond
		if !ok || r != reason || d != want || !bytes.HasPrefix(text, []byte(protocol.RejectPrefix)) {
			t.Fatalf("%q parsed to %q %v %v; want %q %v", text, r, d, ok, reason, want)
		}
	})
}
