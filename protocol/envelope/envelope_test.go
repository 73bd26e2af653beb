package envelope

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol"
)

// equalMessages compares every field; nil and empty slices are equal.
func equalMessages(a, b *Message) bool {
	return a.Type == b.Type && a.Flags == b.Flags && a.RequestID == b.RequestID &&
		a.Status == b.Status && a.Priority == b.Priority &&
		a.DeadlineMillis == b.DeadlineMillis && a.RetryAfterMillis == b.RetryAfterMillis &&
		bytes.Equal(a.Method, b.Method) && bytes.Equal(a.Tenant, b.Tenant) &&
		bytes.Equal(a.IdempotencyKey, b.IdempotencyKey) && bytes.Equal(a.Payload, b.Payload)
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// goldens are the examples in docs/ENVELOPE.md, byte for byte.
var goldens = []struct {
	name string
	m    Message
	hex  string
}{
	{
		name: "request",
		m: Message{Type: TypeRequest, Flags: FlagDeadlineRelative | FlagIdempotent, RequestID: 7,
			Priority: PriorityCritical, DeadlineMillis: 250,
			Method: []byte("PUT"), Tenant: []byte("acme"), IdempotencyKey: []byte("k1"), Payload: []byte("a=1")},
		hex: "00000021 01 01 0006 0000000000000007 00 01 03 04 02 000000fa 505554 61636d65 6b31 613d31",
	},
	{
		name: "absolute-deadline",
		m: Message{Type: TypeRequest, Flags: FlagDeadlineAbsolute, RequestID: 1,
			DeadlineMillis: 1767225600000, Method: []byte("GET"), Payload: []byte("k")},
		hex: "0000001d 01 01 0001 0000000000000001 00 00 03 00 00 0000019b76daa800 474554 6b",
	},
	{
		name: "response",
		m:    Message{Type: TypeResponse, RequestID: 7, Payload: []byte("ok")},
		hex:  "00000013 01 02 0000 0000000000000007 00 00 00 00 00 6f6b",
	},
	{
		name: "replayed-conflict",
		m:    Message{Type: TypeResponse, Flags: FlagReplayed, RequestID: 9, Status: StatusConflict},
		hex:  "00000011 01 02 0020 0000000000000009 02 00 00 00 00",
	},
	{
		name: "reject",
		m: Message{Type: TypeReject, Flags: FlagRetryAfter, RequestID: 7, Status: StatusTooManyRequests,
			RetryAfterMillis: 300, Payload: []byte("tenant")},
		hex: "0000001b 01 03 0008 0000000000000007 03 00 00 00 00 0000012c 74656e616e74",
	},
}

func TestGolden(t *testing.T) {
	for i, g := range goldens {
		want := mustHex(t, g.hex)
		got, err := g.m.Append(nil)
		if err != nil {
			t.Fatalf("%d %s: Append: %v", i, g.name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%d %s: Append =\n%x\nwant\n%x", i, g.name, got, want)
		}
		if g.m.Size() != len(want) {
			t.Errorf("%d %s: Size = %d; want %d", i, g.name, g.m.Size(), len(want))
		}
		var m Message
		if err := Parse(want, &m); err != nil {
			t.Fatalf("%d %s: Parse: %v", i, g.name, err)
		}
		if !equalMessages(&m, &g.m) {
			t.Errorf("%d %s: Parse = %+v; want %+v", i, g.name, m, g.m)
		}
		frame, n, err := Codec{}.Decode(append(want, 0, 0))
		if err != nil || n != len(want) || !bytes.Equal(frame, want) {
			t.Errorf("%d %s: Decode = %x, %d, %v", i, g.name, frame, n, err)
		}
	}
}

func TestAppendRejectGolden(t *testing.T) {
	got := AppendReject(nil, 7, StatusTooManyRequests, 299500*time.Microsecond, "tenant")
	if want := mustHex(t, goldens[4].hex); !bytes.Equal(got, want) {
		t.Errorf("AppendReject =\n%x\nwant\n%x", got, want)
	}
	got = AppendResponse([]byte{0xaa}, 7, StatusOK, []byte("ok"))
	if want := append([]byte{0xaa}, mustHex(t, goldens[2].hex)...); !bytes.Equal(got, want) {
		t.Errorf("AppendResponse =\n%x\nwant\n%x", got, want)
	}
}

func TestAppendReject(t *testing.T) {
	long := strings.Repeat("é", 200) // 400 bytes, 2 per rune
	tests := []struct {
		status     Status
		retryAfter time.Duration
		reason     string
		wantStatus Status
		wantFlags  Flags
		wantRetry  uint32
		wantReason string
	}{
		{StatusUnavailable, 0, "", StatusUnavailable, 0, 0, ""},
		{StatusUnavailable, -time.Second, "x", StatusUnavailable, 0, 0, "x"},
		{StatusUnavailable, time.Nanosecond, "x", StatusUnavailable, FlagRetryAfter, 1, "x"},
		{StatusUnavailable, time.Millisecond, "x", StatusUnavailable, FlagRetryAfter, 1, "x"},
		{StatusUnavailable, 2*time.Millisecond + 1, "x", StatusUnavailable, FlagRetryAfter, 3, "x"},
		{StatusTimeout, 48 * time.Hour, "x", StatusTimeout, FlagRetryAfter, MaxRetryAfterMillis, "x"},
		{StatusOK, 0, "x", StatusInternal, 0, 0, "x"},
		{Status(99), 0, "x", StatusInternal, 0, 0, "x"},
		{StatusBadRequest, 0, long, StatusBadRequest, 0, 0, long[:MaxReasonBytes]},
		{StatusBadRequest, 0, "a" + long, StatusBadRequest, 0, 0, "a" + long[:MaxReasonBytes-2]},
		{StatusBadRequest, 0, strings.Repeat("\xff", 300), StatusBadRequest, 0, 0, strings.Repeat("\xff", MaxReasonBytes)},
	}
	for i, tt := range tests {
		frame := AppendReject(nil, 42, tt.status, tt.retryAfter, tt.reason)
		var m Message
		if err := Parse(frame, &m); err != nil {
			t.Fatalf("%d: Parse: %v", i, err)
		}
		if m.Type != TypeReject || m.RequestID != 42 || m.Status != tt.wantStatus || m.Flags != tt.wantFlags ||
			m.RetryAfterMillis != tt.wantRetry || string(m.Payload) != tt.wantReason {
			t.Errorf("%d: got %v %d %v flags=%v retry=%d reason %d bytes; want %v flags=%v retry=%d reason %d bytes",
				i, m.Type, m.RequestID, m.Status, m.Flags, m.RetryAfterMillis, len(m.Payload),
				tt.wantStatus, tt.wantFlags, tt.wantRetry, len(tt.wantReason))
		}
	}
}

func TestParseErrors(t *testing.T) {
	valid := mustHex(t, goldens[0].hex) // request, relative deadline, all fields
	mutate := func(f func(b []byte) []byte) []byte {
		return f(append([]byte(nil), valid...))
	}
	tests := []struct {
		name  string
		frame []byte
		want  error
	}{
		{"empty", nil, ErrTruncated},
		{"short", valid[:FixedHeaderBytes-1], ErrTruncated},
		{"length-mismatch", valid[:len(valid)-1], ErrTruncated},
		{"length-extra", append(append([]byte(nil), valid...), 0), ErrTruncated},
		{"version-0", mutate(func(b []byte) []byte { b[4] = 0; return b }), ErrUnknownVersion},
		{"version-2", mutate(func(b []byte) []byte { b[4] = 2; return b }), ErrUnknownVersion},
		{"type-0", mutate(func(b []byte) []byte { b[5] = 0; return b }), ErrUnknownType},
		{"type-4", mutate(func(b []byte) []byte { b[5] = 4; return b }), ErrUnknownType},
		{"flag-0x40", mutate(func(b []byte) []byte { b[7] |= 0x40; return b }), ErrUnknownFlags},
		{"flag-0x8000", mutate(func(b []byte) []byte { b[6] |= 0x80; return b }), ErrUnknownFlags},
		{"two-deadlines", mutate(func(b []byte) []byte { b[7] |= 0x01; return b }), ErrFieldNotAllowed},
		{"retry-on-request", mutate(func(b []byte) []byte { b[7] |= 0x08; return b }), ErrFieldNotAllowed},
		{"status-on-request", mutate(func(b []byte) []byte { b[16] = 1; return b }), ErrFieldNotAllowed},
		{"status-7", mutate(func(b []byte) []byte { b[16] = 7; return b }), ErrUnknownStatus},
		{"priority-4", mutate(func(b []byte) []byte { b[17] = 4; return b }), ErrUnknownPriority},
		{"fields-overrun", mutate(func(b []byte) []byte { b[18] = 200; return b }), ErrTruncated},
		{"optional-overrun", mustHex(t, "00000011 01 01 0001 0000000000000001 00 00 00 00 00"), ErrTruncated},
		{"response-with-tenant", mustHex(t, "00000012 01 02 0000 0000000000000007 00 00 00 01 00 61"), ErrFieldNotAllowed},
		{"response-with-priority", mustHex(t, "00000011 01 02 0000 0000000000000007 00 01 00 00 00"), ErrFieldNotAllowed},
		{"reject-ok", mustHex(t, "00000011 01 03 0000 0000000000000007 00 00 00 00 00"), ErrFieldNotAllowed},
		{"reject-replayed", mustHex(t, "00000011 01 03 0020 0000000000000007 04 00 00 00 00"), ErrFieldNotAllowed},
		{"retry-and-noretry", mustHex(t, "00000015 01 03 0018 0000000000000007 04 00 00 00 00 00000001"), ErrFieldNotAllowed},
		{"retry-too-long", mustHex(t, "00000015 01 03 0008 0000000000000007 04 00 00 00 00 0036ee81"), ErrInvalidField},
		{"deadline-zero", mustHex(t, "00000019 01 01 0001 0000000000000007 00 00 00 00 00 0000000000000000"), ErrInvalidField},
		{"deadline-negative", mustHex(t, "00000019 01 01 0001 0000000000000007 00 00 00 00 00 ffffffffffffffff"), ErrInvalidField},
		{"method-too-long", append(mustHex(t, "00000052 01 01 0000 0000000000000007 00 00 41 00 00"), bytes.Repeat([]byte("m"), 65)...), ErrFieldTooLarge},
		{"tenant-too-long", append(mustHex(t, "00000052 01 01 0000 0000000000000007 00 00 00 41 00"), bytes.Repeat([]byte("t"), 65)...), ErrFieldTooLarge},
		{"key-too-long", append(mustHex(t, "00000092 01 01 0000 0000000000000007 00 00 00 00 81"), bytes.Repeat([]byte("k"), 129)...), ErrFieldTooLarge},
		{"reason-too-long", append(mustHex(t, "00000112 01 03 0000 0000000000000007 04 00 00 00 00"), bytes.Repeat([]byte("r"), 257)...), ErrFieldTooLarge},
	}
	for i, tt := range tests {
		var m Message
		err := Parse(tt.frame, &m)
		if !errors.Is(err, tt.want) {
			t.Errorf("%d %s: Parse err = %v; want %v", i, tt.name, err, tt.want)
		}
		if !errors.Is(err, protocol.ErrMalformed) {
			t.Errorf("%d %s: %v does not wrap protocol.ErrMalformed", i, tt.name, err)
		}
	}
}

func TestValidate(t *testing.T) {
	req := func(f func(m *Message)) *Message {
		m := &Message{Type: TypeRequest, RequestID: 1}
		f(m)
		return m
	}
	tests := []struct {
		name string
		m    *Message
		want error
	}{
		{"zero", &Message{}, ErrUnknownType},
		{"ok-request", req(func(m *Message) {}), nil},
		{"ok-max-fields", req(func(m *Message) {
			m.Method = make([]byte, MaxMethodBytes)
			m.Tenant = make([]byte, MaxTenantBytes)
			m.IdempotencyKey = make([]byte, MaxIdempotencyKeyBytes)
		}), nil},
		{"ok-relative-max", req(func(m *Message) {
			m.Flags = FlagDeadlineRelative
			m.DeadlineMillis = MaxRelativeDeadlineMillis
		}), nil},
		{"ok-relative-zero", req(func(m *Message) { m.Flags = FlagDeadlineRelative }), nil},
		{"relative-over", req(func(m *Message) {
			m.Flags = FlagDeadlineRelative
			m.DeadlineMillis = MaxRelativeDeadlineMillis + 1
		}), ErrInvalidField},
		{"relative-negative", req(func(m *Message) {
			m.Flags = FlagDeadlineRelative
			m.DeadlineMillis = -1
		}), ErrInvalidField},
		{"deadline-without-flag", req(func(m *Message) { m.DeadlineMillis = 5 }), ErrFieldNotAllowed},
		{"retry-without-flag", &Message{Type: TypeReject, Status: StatusUnavailable, RetryAfterMillis: 5}, ErrFieldNotAllowed},
		{"ok-retry-max", &Message{Type: TypeReject, Status: StatusUnavailable, Flags: FlagRetryAfter, RetryAfterMillis: MaxRetryAfterMillis}, nil},
		{"ok-noretry", &Message{Type: TypeResponse, Status: StatusUnavailable, Flags: FlagNoRetry}, nil},
		{"method-65", req(func(m *Message) { m.Method = make([]byte, MaxMethodBytes+1) }), ErrFieldTooLarge},
		{"tenant-65", req(func(m *Message) { m.Tenant = make([]byte, MaxTenantBytes+1) }), ErrFieldTooLarge},
		{"key-129", req(func(m *Message) { m.IdempotencyKey = make([]byte, MaxIdempotencyKeyBytes+1) }), ErrFieldTooLarge},
		{"response-method", &Message{Type: TypeResponse, Method: []byte("GET")}, ErrFieldNotAllowed},
		{"reject-key", &Message{Type: TypeReject, Status: StatusConflict, IdempotencyKey: []byte("k")}, ErrFieldNotAllowed},
		{"ok-reject-reason-max", &Message{Type: TypeReject, Status: StatusConflict, Payload: make([]byte, MaxReasonBytes)}, nil},
		{"ok-response-big-payload", &Message{Type: TypeResponse, Payload: make([]byte, 1<<16)}, nil},
		{"request-replayed", req(func(m *Message) { m.Flags = FlagReplayed }), ErrFieldNotAllowed},
		{"response-idempotent", &Message{Type: TypeResponse, Flags: FlagIdempotent}, ErrFieldNotAllowed},
		{"unknown-flag", req(func(m *Message) { m.Flags = 0x100 }), ErrUnknownFlags},
		{"priority-9", req(func(m *Message) { m.Priority = 9 }), ErrUnknownPriority},
	}
	for i, tt := range tests {
		err := tt.m.Validate()
		if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
			t.Errorf("%d %s: Validate = %v; want %v", i, tt.name, err, tt.want)
		}
		out, aerr := tt.m.Append([]byte("x"))
		if aerr != err {
			t.Errorf("%d %s: Append err %v != Validate err %v", i, tt.name, aerr, err)
		}
		if err != nil {
			if string(out) != "x" {
				t.Errorf("%d %s: Append changed dst on error", i, tt.name)
			}
			if got := AppendMessage([]byte("x"), tt.m); string(got) != "x" {
				t.Errorf("%d %s: AppendMessage wrote an invalid message", i, tt.name)
			}
			continue
		}
		var m Message
		if perr := Parse(out[1:], &m); perr != nil || !equalMessages(&m, tt.m) {
			t.Errorf("%d %s: round trip: %v", i, tt.name, perr)
		}
	}
}

func TestCodecDecode(t *testing.T) {
	valid := mustHex(t, goldens[2].hex) // 23 bytes
	tests := []struct {
		name  string
		c     Codec
		in    []byte
		n     int
		want  error
		frame bool
	}{
		{"empty", Codec{}, nil, 0, nil, false},
		{"partial-length", Codec{}, valid[:3], 0, nil, false},
		{"length-only", Codec{}, valid[:4], 0, nil, false},
		{"partial-body", Codec{}, valid[:22], 0, nil, false},
		{"whole", Codec{}, valid, 23, nil, true},
		{"whole-plus", Codec{}, append(append([]byte(nil), valid...), valid[:5]...), 23, nil, true},
		{"at-limit", Codec{MaxFrameBytes: 23}, valid, 23, nil, true},
		{"over-limit", Codec{MaxFrameBytes: 22}, valid[:4], 0, ErrFrameTooLarge, false},
		{"over-limit-early", Codec{MaxFrameBytes: 1 << 16}, []byte{0, 1}, 0, ErrFrameTooLarge, false},
		{"default-limit", Codec{}, []byte{0, 0x10, 0, 0}, 0, ErrFrameTooLarge, false},
		{"length-too-small", Codec{}, []byte{0, 0, 0, 16}, 0, ErrTruncated, false},
		{"bad-version-early", Codec{}, []byte{0, 0, 0, 17, 2}, 0, ErrUnknownVersion, false},
		{"http-garbage", Codec{}, []byte("GET / HTTP/1.1\r\n"), 0, ErrFrameTooLarge, false},
		{"config-negative", Codec{MaxFrameBytes: -1}, valid, 0, ErrInvalidConfig, false},
		{"config-small", Codec{MaxFrameBytes: 20}, valid, 0, ErrInvalidConfig, false},
	}
	for i, tt := range tests {
		frame, n, err := tt.c.Decode(tt.in)
		if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
			t.Errorf("%d %s: Decode err = %v; want %v", i, tt.name, err, tt.want)
			continue
		}
		if n != tt.n || (tt.frame && !bytes.Equal(frame, valid)) || (!tt.frame && frame != nil) {
			t.Errorf("%d %s: Decode = %x, %d", i, tt.name, frame, n)
		}
		if tt.frame && cap(frame) != len(frame) {
			t.Errorf("%d %s: frame capacity not clipped", i, tt.name)
		}
	}
	if got := (Codec{}).AppendEncode([]byte("a"), valid); !bytes.Equal(got, append([]byte("a"), valid...)) {
		t.Errorf("AppendEncode = %x", got)
	}
	if !errors.Is(ErrFrameTooLarge, protocol.ErrFrameTooLarge) || !errors.Is(ErrInvalidConfig, protocol.ErrInvalidConfig) {
		t.Errorf("sentinels do not wrap the protocol errors")
	}
}

func TestStatusHTTP(t *testing.T) {
	tests := []struct {
		s    Status
		code int
	}{
		{StatusOK, 200}, {StatusBadRequest, 400}, {StatusConflict, 409}, {StatusTooManyRequests, 429},
		{StatusUnavailable, 503}, {StatusTimeout, 504}, {StatusInternal, 500},
	}
	for i, tt := range tests {
		if got := tt.s.HTTPStatus(); got != tt.code {
			t.Errorf("%d: %v.HTTPStatus() = %d; want %d", i, tt.s, got, tt.code)
		}
		if got := StatusFromHTTP(tt.code); got != tt.s {
			t.Errorf("%d: StatusFromHTTP(%d) = %v; want %v", i, tt.code, got, tt.s)
		}
	}
	from := []struct {
		code int
		want Status
	}{
		{201, StatusOK}, {204, StatusOK}, {299, StatusOK}, {408, StatusTimeout}, {404, StatusBadRequest},
		{422, StatusBadRequest}, {499, StatusBadRequest}, {502, StatusUnavailable}, {501, StatusInternal},
		{599, StatusInternal}, {100, StatusInternal}, {301, StatusInternal}, {0, StatusInternal}, {-1, StatusInternal},
		{600, StatusInternal},
	}
	for i, tt := range from {
		if got := StatusFromHTTP(tt.code); got != tt.want {
			t.Errorf("%d: StatusFromHTTP(%d) = %v; want %v", i, tt.code, got, tt.want)
		}
	}
	if got := Status(7).HTTPStatus(); got != 500 {
		t.Errorf("Status(7).HTTPStatus() = %d", got)
	}
}

func TestDeadline(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var m Message
	if _, ok := m.Deadline(t0); ok {
		t.Fatal("zero message has a deadline")
	}
	m.SetTimeout(1500 * time.Microsecond)
	if m.Flags != FlagDeadlineRelative || m.DeadlineMillis != 1 {
		t.Errorf("SetTimeout(1.5ms): flags %v, %d ms", m.Flags, m.DeadlineMillis)
	}
	if d, ok := m.Deadline(t0); !ok || !d.Equal(t0.Add(time.Millisecond)) {
		t.Errorf("relative Deadline = %v, %v", d, ok)
	}
	m.SetTimeout(-time.Second)
	if m.DeadlineMillis != 0 {
		t.Errorf("SetTimeout(-1s) = %d ms", m.DeadlineMillis)
	}
	m.SetTimeout(100 * 24 * time.Hour)
	if m.DeadlineMillis != MaxRelativeDeadlineMillis {
		t.Errorf("SetTimeout(100d) = %d ms", m.DeadlineMillis)
	}
	m.SetDeadline(t0.Add(1500 * time.Microsecond))
	if m.Flags != FlagDeadlineAbsolute || m.DeadlineMillis != t0.UnixMilli()+1 {
		t.Errorf("SetDeadline: flags %v, %d", m.Flags, m.DeadlineMillis)
	}
	if d, ok := m.Deadline(t0.Add(time.Hour)); !ok || !d.Equal(t0.Add(time.Millisecond)) {
		t.Errorf("absolute Deadline = %v, %v", d, ok)
	}
	m.SetDeadline(time.Time{})
	if m.Flags != 0 || m.DeadlineMillis != 0 {
		t.Errorf("SetDeadline(zero) left flags %v, %d", m.Flags, m.DeadlineMillis)
	}
	m.Type = TypeResponse
	m.SetRetryAfter(300 * time.Millisecond)
	if d, ok := m.RetryAfter(); !ok || d != 300*time.Millisecond {
		t.Errorf("RetryAfter = %v, %v", d, ok)
	}
	m.SetRetryAfter(0)
	if _, ok := m.RetryAfter(); ok || m.Flags != 0 || m.RetryAfterMillis != 0 {
		t.Errorf("SetRetryAfter(0) left flags %v, %d", m.Flags, m.RetryAfterMillis)
	}
}

func TestPeekRequestID(t *testing.T) {
	frame := mustHex(t, goldens[0].hex)
	frame[4] = 9 // unparseable, but addressable
	if id, ok := PeekRequestID(frame); !ok || id != 7 {
		t.Errorf("PeekRequestID = %d, %v", id, ok)
	}
	if _, ok := PeekRequestID(frame[:20]); ok {
		t.Errorf("PeekRequestID on a short frame reported ok")
	}
}

func TestStrings(t *testing.T) {
	tests := []struct{ got, want string }{
		{TypeRequest.String(), "request"}, {TypeResponse.String(), "response"}, {TypeReject.String(), "reject"},
		{Type(0).String(), "type(0)"},
		{StatusTooManyRequests.String(), "too many requests"}, {Status(9).String(), "status(9)"},
		{PriorityBackground.String(), "background"}, {Priority(4).String(), "priority(4)"},
		{PriorityNormal.String(), "normal"}, {PriorityCritical.String(), "critical"}, {PriorityLow.String(), "low"},
		{Flags(0).String(), "0"}, {(FlagIdempotent | FlagDeadlineRelative).String(), "deadline-relative|idempotent"},
		{Flags(0x8001).String(), "deadline-absolute|0x8000"}, {Flags(0x40).String(), "0x40"},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%d: %q; want %q", i, tt.got, tt.want)
		}
	}
	imp := []Priority{PriorityBackground, PriorityLow, PriorityNormal, PriorityCritical}
	for i, p := range imp {
		if p.Importance() != i {
			t.Errorf("%v.Importance() = %d; want %d", p, p.Importance(), i)
		}
	}
	if Priority(4).Importance() != -1 {
		t.Errorf("Priority(4).Importance() = %d", Priority(4).Importance())
	}
}

func TestErrorsArePrefixed(t *testing.T) {
	errs := []error{ErrUnknownVersion, ErrUnknownType, ErrUnknownFlags, ErrUnknownStatus, ErrUnknownPriority,
		ErrTruncated, ErrFieldTooLarge, ErrFieldNotAllowed, ErrInvalidField, ErrFrameTooLarge, ErrInvalidConfig,
		errVersion, errTenantSize, errDecodeTooLarge}
	for i, err := range errs {
		if !strings.HasPrefix(err.Error(), "sluice: envelope: ") {
			t.Errorf("%d: %q lacks the prefix", i, err)
		}
	}
}

// TestAllocs proves the hot path allocates nothing: Decode, Parse, and every
// Append into a buffer with room, on valid and invalid input.
func TestAllocs(t *testing.T) {
	wire := mustHex(t, goldens[0].hex)
	bad := mustHex(t, goldens[0].hex)
	bad[5] = 9
	req := goldens[0].m
	dst := make([]byte, 0, 1024)
	var m Message
	allocs := testing.AllocsPerRun(200, func() {
		frame, n, err := Codec{}.Decode(wire)
		if err != nil || n != len(wire) {
			t.Fatalf("Decode: %d, %v", n, err)
		}
		if err := Parse(frame, &m); err != nil {
			t.Fatalf("Parse: %v", err)
		}
		_ = Parse(bad, &m)
		_, _, _ = Codec{MaxFrameBytes: 8}.Decode(wire)
		dst = AppendMessage(dst[:0], &req)
		dst = AppendReject(dst, 7, StatusUnavailable, 300*time.Millisecond, "global budget")
		dst = AppendResponse(dst, 7, StatusOK, wire)
	})
	if allocs != 0 {
		t.Errorf("%v allocs per Decode+Parse+Append round; want 0", allocs)
	}
}
