package kv

import (
	"bytes"
	"flag"
	"testing"

	"github.com/sluicenet/sluice/internal/fuzzseed"
	"github.com/sluicenet/sluice/protocol/envelope"
	"github.com/sluicenet/sluice/protocol/resp"
	"github.com/sluicenet/sluice/server"
)

// FuzzRESPServe feeds a byte stream through what the engine and
// RESPHandler do with it (resp.ServerCodec framing and Parse, Exec, the protocol
// error path) with a small store, and checks that every reply is
// well-formed RESP and that each command got exactly one.
func FuzzRESPServe(f *testing.F) {
	for _, s := range seedCorpus["FuzzRESPServe"] {
		f.Add(s.Args[0].([]byte))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h := NewRESPHandler(newTestStore(t, Config{Shards: 1, MaxKeys: 16, MaxValueBytes: 64, MaxBytes: 4096}),
			resp.Codec{MaxBulkBytes: 256, MaxArgs: 64}, nil)
		codec := resp.ServerCodec{Codec: h.codec}
		buf := bytes.Clone(data)
		var out []byte
		want := 0
		for len(buf) > 0 {
			frame, n, err := codec.Decode(buf)
			if err != nil || n > len(buf) {
				t.Fatalf("ServerCodec.Decode: n=%d err=%v", n, err)
			}
			if n == 0 {
				break // incomplete: the engine waits for more
			}
			buf = buf[n:]
			args, err := codec.Parse(frame, nil)
			if err != nil {
				out = resp.AppendProtocolError(out, err)
				want++
				break // the connection closes
			}
			if len(args) == 0 {
				continue
			}
			var act server.Action
			out, act = h.Exec(out, args, 1_700_000_000*sec)
			want++
			if act == server.Close {
				break
			}
		}
		if got := validReplies(t, out); got != want {
			t.Fatalf("%d replies for %d commands: %q", got, want, out)
		}
	})
}

// FuzzEnvelopeHandle checks that any frame gets exactly one well-formed
// reply (a response or a reject) addressed to its request id, or goes to
// the worker pool only when it is a valid mutation.
func FuzzEnvelopeHandle(f *testing.F) {
	for _, s := range seedCorpus["FuzzEnvelopeHandle"] {
		f.Add(s.Args[0].([]byte))
	}
	h, _ := newTestEnvelope(f, EnvelopeConfig{Store: newTestStore(f, Config{MaxKeys: 64, MaxValueBytes: 128, MaxBytes: 1 << 16})})
	f.Fuzz(func(t *testing.T, frame []byte) {
		out, worker := h.Handle(nil, bytes.Clone(frame), t0)
		if worker {
			t.Fatalf("inline handler asked for a worker on %x", frame)
		}
		var m envelope.Message
		if err := envelope.Parse(out, &m); err != nil {
			t.Fatalf("reply %x does not parse: %v", out, err)
		}
		if m.Type != envelope.TypeResponse && m.Type != envelope.TypeReject {
			t.Fatalf("reply type %v", m.Type)
		}
		if id, ok := envelope.PeekRequestID(frame); ok && m.RequestID != id {
			t.Fatalf("reply to %d, want %d", m.RequestID, id)
		}
	})
}

// FuzzDecodePut checks DecodePut never panics, returns slices of its input,
// and reads back what AppendPut writes.
func FuzzDecodePut(f *testing.F) {
	for _, s := range seedCorpus["FuzzDecodePut"] {
		f.Add(s.Args[0].([]byte))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		k, v, err := DecodePut(p)
		if err != nil {
			return
		}
		if len(k) == 0 || len(k)+len(v) > len(p) || !bytes.HasSuffix(p, v) {
			t.Fatalf("DecodePut(%x) = %x, %x", p, k, v)
		}
		k2, v2, err := DecodePut(AppendPut(nil, k, v))
		if err != nil || !bytes.Equal(k, k2) || !bytes.Equal(v, v2) {
			t.Fatalf("round trip of %x, %x: %x, %x, %v", k, v, k2, v2, err)
		}
	})
}

// envFrame builds a seed request frame.
func envFrame(id uint64, method, key string, payload []byte, flags envelope.Flags) []byte {
	m := envelope.Message{Type: envelope.TypeRequest, RequestID: id, Method: []byte(method), Payload: payload, Flags: flags}
	if key != "" {
		m.IdempotencyKey = []byte(key)
	}
	if flags&envelope.FlagDeadlineRelative != 0 {
		m.DeadlineMillis = 1000
	}
	if flags&envelope.FlagDeadlineAbsolute != 0 {
		m.DeadlineMillis = t0.UnixMilli() - 1
	}
	b, err := m.Append(nil)
	if err != nil {
		panic(err)
	}
	return b
}

// seedCorpus is the committed seed corpus, generated from this table
// (TestSeedCorpus keeps testdata/fuzz in step).
var seedCorpus = fuzzseed.Corpus{
	"FuzzRESPServe": {
		{"ping", []any{[]byte(cmd("PING"))}},
		{"inline-ping", []any{[]byte("PING\r\n")}},
		{"set-get", []any{[]byte(cmd("SET", "k", "v") + cmd("GET", "k"))}},
		{"set-options", []any{[]byte(cmd("SET", "k", "v", "NX", "PX", "100") + cmd("SET", "k", "w", "XX", "KEEPTTL") + cmd("SET", "k", "v", "EXAT", "99999999999"))}},
		{"set-bad-options", []any{[]byte(cmd("SET", "k", "v", "PX") + cmd("SET", "k", "v", "EX", "-1") + cmd("SET", "k", "v", "NX", "XX"))}},
		{"incr", []any{[]byte(cmd("INCR", "n") + cmd("SET", "s", "x") + cmd("INCR", "s") + cmd("SET", "m", "9223372036854775807") + cmd("INCR", "m"))}},
		{"multi", []any{[]byte(cmd("MSET", "a", "1", "b", "2") + cmd("MGET", "a", "b", "c") + cmd("DEL", "a", "z") + cmd("EXISTS", "a", "b"))}},
		{"admin", []any{[]byte(cmd("COMMAND", "DOCS") + cmd("COMMAND", "COUNT") + cmd("CONFIG", "GET", "*") + cmd("INFO") + cmd("SELECT", "1"))}},
		{"unknown", []any{[]byte(cmd("FOO", "bar\r\n") + "*0\r\n" + cmd("ECHO"))}},
		{"quit", []any{[]byte(cmd("QUIT") + cmd("PING"))}},
		{"protocol-error", []any{[]byte(cmd("PING") + "*1\r\n$x\r\n")}},
		{"too-large", []any{[]byte("*1\r\n$999\r\n")}},
		{"store-full", []any{[]byte(cmd("SET", "k", string(make([]byte, 65))) + cmd("MSET", "a", "1", "b", string(make([]byte, 70))))}},
		{"quoted-inline", []any{[]byte("SET k \"a\\x41 b\"\r\nGET k\r\n")}},
		{"incomplete", []any{[]byte("*2\r\n$3\r\nGET\r\n$1\r\n")}},
	},
	"FuzzEnvelopeHandle": {
		{"get", []any{envFrame(1, "GET", "", []byte("k"), 0)}},
		{"put", []any{envFrame(2, "PUT", "", AppendPut(nil, []byte("k"), []byte("v")), 0)}},
		{"put-bad", []any{envFrame(3, "PUT", "", []byte{7, 'k'}, 0)}},
		{"incr-keyed", []any{envFrame(4, "INCR", "key-1", []byte("n"), envelope.FlagDeadlineRelative)}},
		{"delete-keyed", []any{envFrame(5, "DELETE", "key-2", []byte("k"), 0)}},
		{"ping", []any{envFrame(6, "PING", "", nil, envelope.FlagIdempotent)}},
		{"expired", []any{envFrame(7, "INCR", "", []byte("n"), envelope.FlagDeadlineAbsolute)}},
		{"unknown-method", []any{envFrame(8, "POST", "", nil, 0)}},
		{"short", []any{[]byte("\x00\x00\x00\x01\x01")}},
		{"garbage", []any{[]byte("not an envelope at all, just bytes")}},
	},
	"FuzzDecodePut": {
		{"simple", []any{AppendPut(nil, []byte("key"), []byte("value"))}},
		{"empty-value", []any{AppendPut(nil, []byte("k"), nil)}},
		{"long-key", []any{AppendPut(nil, bytes.Repeat([]byte("k"), 200), []byte("v"))}},
		{"zero-length", []any{[]byte{0, 'v'}}},
		{"overrun", []any{[]byte{9, 'k'}}},
		{"overlong-varint", []any{[]byte{0x81, 0x00, 'k'}}},
	},
}

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz seed files from seedCorpus")

// TestSeedCorpus checks that every seed in seedCorpus is committed, byte for
// byte, under testdata/fuzz (or rewrites them with -update-corpus):
//
//	go test -run TestSeedCorpus ./internal/kv -args -update-corpus
func TestSeedCorpus(t *testing.T) {
	if err := fuzzseed.Sync(fuzzseed.Dir, seedCorpus, *updateCorpus); err != nil {
		t.Error(err)
	}
}
