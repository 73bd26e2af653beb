package envelope

import (
	"bytes"
	"flag"
	"testing"
	"time"

	"github.com/sluicenet/sluice/internal/fuzzseed"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz seed files from seedCorpus")

// seedCorpus lists the committed seeds under testdata/fuzz, per target.
// TestSeedCorpus keeps the files and this table in step; after changing it
// run: go test -run TestSeedCorpus ./protocol/envelope -args -update-corpus
func seedCorpus(t testing.TB) fuzzseed.Corpus {
	req := goldens[0].m
	reqWire := mustHex(t, goldens[0].hex)
	absWire := mustHex(t, goldens[1].hex)
	respWire := mustHex(t, goldens[2].hex)
	replayWire := mustHex(t, goldens[3].hex)
	rejectWire := mustHex(t, goldens[4].hex)
	badVersion := append([]byte(nil), reqWire...)
	badVersion[offVersion] = 2
	badFlags := append([]byte(nil), reqWire...)
	badFlags[offFlags] = 0x80
	overrun := append([]byte(nil), respWire...)
	overrun[offTenantLen] = 9
	return fuzzseed.Corpus{
		"FuzzDecode": {
			{"empty", []any{[]byte{}, uint16(0)}},
			{"request", []any{reqWire, uint16(0)}},
			{"two-frames", []any{append(append([]byte(nil), respWire...), rejectWire...), uint16(0)}},
			{"partial-length", []any{reqWire[:2], uint16(0)}},
			{"partial-body", []any{reqWire[:30], uint16(0)}},
			{"at-limit", []any{respWire, uint16(len(respWire))}},
			{"over-limit", []any{respWire, uint16(len(respWire) - 1)}},
			{"early-over", []any{[]byte{0, 1}, uint16(1000)}},
			{"length-too-small", []any{[]byte{0, 0, 0, 16}, uint16(0)}},
			{"bad-version", []any{[]byte{0, 0, 0, 17, 2}, uint16(0)}},
			{"http", []any{[]byte("GET / HTTP/1.1\r\n\r\n"), uint16(0)}},
			{"config-small", []any{respWire, uint16(5)}},
		},
		"FuzzParse": {
			{"request", []any{reqWire}},
			{"absolute-deadline", []any{absWire}},
			{"response", []any{respWire}},
			{"replayed", []any{replayWire}},
			{"reject", []any{rejectWire}},
			{"bad-version", []any{badVersion}},
			{"bad-flags", []any{badFlags}},
			{"overrun", []any{overrun}},
			{"short", []any{reqWire[:FixedHeaderBytes-1]}},
			{"no-retry", []any{AppendMessage(nil, &Message{Type: TypeReject, Flags: FlagNoRetry, RequestID: 3, Status: StatusUnavailable})}},
		},
		"FuzzRoundTrip": {
			{"request", []any{uint8(req.Type), uint16(req.Flags), req.RequestID, uint8(req.Status), uint8(req.Priority),
				req.DeadlineMillis, req.RetryAfterMillis, req.Method, req.Tenant, req.IdempotencyKey, req.Payload}},
			{"reject", []any{uint8(3), uint16(FlagRetryAfter), uint64(7), uint8(3), uint8(0), int64(0), uint32(300),
				[]byte{}, []byte{}, []byte{}, []byte("tenant")}},
			{"replayed", []any{uint8(2), uint16(FlagReplayed), uint64(1 << 63), uint8(2), uint8(0), int64(0), uint32(0),
				[]byte{}, []byte{}, []byte{}, []byte("stored")}},
			{"bad-deadline", []any{uint8(1), uint16(FlagDeadlineAbsolute), uint64(0), uint8(0), uint8(3), int64(-5), uint32(0),
				[]byte("GET"), []byte{}, []byte{}, []byte{}}},
			{"tenant-on-response", []any{uint8(2), uint16(0), uint64(1), uint8(0), uint8(0), int64(0), uint32(0),
				[]byte{}, []byte("acme"), []byte{}, []byte{}}},
			{"long-key", []any{uint8(1), uint16(0), uint64(1), uint8(0), uint8(0), int64(0), uint32(0),
				[]byte("PUT"), []byte{}, bytes.Repeat([]byte("k"), MaxIdempotencyKeyBytes+1), []byte{}}},
		},
		"FuzzAppendReject": {
			{"tenant", []any{uint64(7), uint8(StatusTooManyRequests), int64(300 * time.Millisecond), "tenant"}},
			{"ok-status", []any{uint64(0), uint8(StatusOK), int64(-1), ""}},
			{"sub-millisecond", []any{uint64(1), uint8(StatusUnavailable), int64(1), "busy"}},
			{"long-utf8", []any{uint64(1), uint8(StatusUnavailable), int64(time.Hour * 5), string(bytes.Repeat([]byte("é"), 200))}},
		},
	}
}

// TestSeedCorpus checks that every seed in seedCorpus is committed, byte for
// byte, under testdata/fuzz (or rewrites them with -update-corpus).
func TestSeedCorpus(t *testing.T) {
	if err := fuzzseed.Sync(fuzzseed.Dir, seedCorpus(t), *updateCorpus); err != nil {
		t.Error(err)
	}
}
