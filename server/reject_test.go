package server

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

// TestRejecterFor pins the reject each built-in codec sends.
func TestRejecterFor(t *testing.T) {
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
		rj := RejecterFor(c.codec)
		if rj == nil {
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
		b := RejecterFor(envelope.Codec{}).AppendReject(nil, req, c.reason, 250*time.Millisecond)
		var m envelope.Message
		if err := envelope.Parse(b, &m); err != nil {
			t.Fatalf("envelope reject does not parse: %v", err)
		}
		if m.Type != envelope.TypeReject || m.RequestID != 42 || m.Status != c.status || m.RetryAfterMillis != 250 || string(m.Payload) != c.reason {
			t.Errorf("envelope reject %+v for %q", m, c.reason)
		}
	}
	if RejecterFor(protocol.Raw{}) != nil {
		t.Error("raw has a rejecter")
	}
}

// FuzzParseRejectText: never panics; what AppendRejectText writes parses
// back to the same reason and the retry-after rounded up to a millisecond.
func FuzzParseRejectText(f *testing.F) {
	f.Add([]byte("-REJECT tenant 120"), "codel", int64(1500000))
	f.Add([]byte("-REJECT  1"), "", int64(0))
	f.Fuzz(func(t *testing.T, b []byte, reason string, retryNanos int64) {
		ParseRejectText(b)
		if reason == "" || strings.ContainsAny(reason, " ") || retryNanos < 0 || retryNanos > int64(time.Hour) {
			return
		}
		text := AppendRejectText(nil, reason, time.Duration(retryNanos))
		r, d, ok := ParseRejectText(text)
		want := time.Duration(retryAfterMillis(time.Duration(retryNanos))) * time.Millisecond
		if !ok || r != reason || d != want || !bytes.HasPrefix(text, []byte(RejectPrefix)) {
			t.Fatalf("%q parsed to %q %v %v; want %q %v", text, r, d, ok, reason, want)
		}
	})
}
