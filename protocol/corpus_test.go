package protocol

import (
	"bytes"
	"flag"
	"testing"

	"github.com/sluicenet/sluice/internal/fuzzseed"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz seed files from seedCorpus")

// seedCorpus lists the committed seeds under testdata/fuzz, per target.
// TestSeedCorpus keeps the files and this table in step; after changing it
// run: go test -run TestSeedCorpus ./protocol -args -update-corpus
var seedCorpus = fuzzseed.Corpus{
	"FuzzLengthFixed32": {
		{"empty", []any{[]byte{}, uint16(0)}},
		{"one-frame", []any{[]byte("\x00\x00\x00\x03abc"), uint16(16)}},
		{"two-frames", []any{[]byte("\x00\x00\x00\x01a\x00\x00\x00\x00"), uint16(16)}},
		{"zero-len", []any{[]byte("\x00\x00\x00\x00"), uint16(1)}},
		{"partial-header", []any{[]byte("\x00\x00"), uint16(300)}},
		{"at-max", []any{[]byte("\x00\x00\x01\x2c"), uint16(300)}},
		{"over-max", []any{[]byte("\x00\x00\x01\x2d"), uint16(300)}},
		{"early-over", []any{[]byte("\x01"), uint16(0)}},
		{"all-ones", []any{[]byte("\xff\xff\xff\xff"), uint16(65535)}},
		{"payload-short", []any{[]byte("\x00\x00\x00\x05abc"), uint16(0)}},
	},
	"FuzzLengthUvarint": {
		{"empty", []any{[]byte{}, uint16(0)}},
		{"one-frame", []any{[]byte("\x03abc"), uint16(16)}},
		{"two-byte-header", []any{[]byte("\xac\x02"), uint16(300)}},
		{"over-max", []any{[]byte("\xad\x02"), uint16(300)}},
		{"early-over", []any{[]byte("\x80\x80"), uint16(300)}},
		{"non-minimal", []any{[]byte("\x81\x00"), uint16(0)}},
		{"non-minimal-zero", []any{[]byte("\x80\x80\x00"), uint16(0)}},
		{"overflow", []any{bytes.Repeat([]byte{0xff}, 11), uint16(0)}},
		{"tenth-byte", []any{append(bytes.Repeat([]byte{0x80}, 9), 2), uint16(0)}},
		{"zero-frame", []any{[]byte("\x00\x00\x01x"), uint16(1)}},
	},
	"FuzzDelimited": {
		{"empty", []any{[]byte{}, byte(0), uint16(0)}},
		{"two-lines", []any{[]byte("hello\nworld\n"), byte(0), uint16(0)}},
		{"crlf", []any{[]byte("GET\r\n"), byte(0), uint16(8)}},
		{"at-max", []any{[]byte("abc\n"), byte(0), uint16(3)}},
		{"no-delim-over", []any{[]byte("abcd"), byte(0), uint16(3)}},
		{"late-delim", []any{[]byte("abcd\n"), byte(0), uint16(3)}},
		{"semicolon", []any{[]byte("a\nb;c"), byte(';'), uint16(10)}},
		{"high-delim", []any{[]byte("\x00\xff"), byte(0xff), uint16(2)}},
		{"empty-line", []any{[]byte("\n\n"), byte(0), uint16(1)}},
	},
	// FuzzLengthField: data, offset, size index (0 default 4, 1, 2, 4, 8),
	// little-endian, includes header, keep header, adjustment, max.
	"FuzzLengthField": {
		{"empty", []any{[]byte{}, uint8(0), uint8(0), false, false, false, int16(0), uint16(0)}},
		{"u16-frame", []any{[]byte("\x00\x02hi"), uint8(0), uint8(2), false, false, false, int16(0), uint16(0)}},
		{"u16-le", []any{[]byte("\x02\x00hi"), uint8(0), uint8(2), true, false, false, int16(0), uint16(0)}},
		{"u8-partial", []any{[]byte("\x05ab"), uint8(0), uint8(1), false, false, false, int16(0), uint16(0)}},
		{"u64-huge", []any{[]byte("\xff\xff\xff\xff\xff\xff\xff\xff"), uint8(0), uint8(4), false, false, false, int16(0), uint16(0)}},
		{"u64-le-one", []any{[]byte("\x01\x00\x00\x00\x00\x00\x00\x00z"), uint8(0), uint8(4), true, false, false, int16(0), uint16(0)}},
		{"type-byte-keep", []any{[]byte("\x07\x00\x01q"), uint8(1), uint8(2), false, false, true, int16(0), uint16(0)}},
		{"type-byte-strip", []any{[]byte("\x07\x00\x01q"), uint8(1), uint8(2), false, false, false, int16(0), uint16(0)}},
		{"includes-header", []any{[]byte("\x07\x05\x00abc"), uint8(1), uint8(2), true, true, true, int16(0), uint16(16)}},
		{"below-header", []any{[]byte("\x00\x01"), uint8(0), uint8(2), false, true, false, int16(0), uint16(0)}},
		{"adjust-trailer", []any{[]byte("\x01ack"), uint8(0), uint8(1), false, false, false, int16(2), uint16(3)}},
		{"adjust-negative", []any{[]byte("\x00"), uint8(0), uint8(1), false, false, false, int16(-1), uint16(0)}},
		{"at-max", []any{[]byte("\x00\x0a"), uint8(0), uint8(2), false, false, false, int16(0), uint16(10)}},
		{"over-max", []any{[]byte("\x00\x0b"), uint8(0), uint8(2), false, false, false, int16(0), uint16(10)}},
		{"keep-over-max", []any{[]byte("\x00\x09"), uint8(0), uint8(2), false, false, true, int16(0), uint16(10)}},
		{"two-frames", []any{[]byte("\x01a\x01b"), uint8(0), uint8(1), false, false, false, int16(0), uint16(0)}},
	},
	"FuzzRoundTrip": {
		{"raw", []any{[]byte("first"), []byte("second"), uint8(0), uint16(0)}},
		{"fixed32", []any{[]byte("first"), []byte{}, uint8(1), uint16(5)}},
		{"fixed32-over", []any{[]byte("sixsix"), []byte{}, uint8(1), uint16(5)}},
		{"uvarint", []any{bytes.Repeat([]byte("x"), 200), []byte("y"), uint8(2), uint16(0)}},
		{"uvarint-over", []any{[]byte("toolong"), []byte("x"), uint8(2), uint16(3)}},
		{"line", []any{[]byte("a"), []byte("bc"), uint8(3), uint16(0)}},
		{"line-with-delim", []any{[]byte("a\nb"), []byte("c"), uint8(3), uint16(0)}},
		{"line-over", []any{[]byte("abcdef"), []byte("c"), uint8(3), uint16(4)}},
		// Found by the fuzzer: an oversize frame containing the delimiter
		// arrives as lines that fit.
		{"line-over-with-delim", []any{[]byte("0\n"), []byte("0"), byte('?'), uint16(1)}},
	},
}

// TestSeedCorpus checks that every seed in seedCorpus is committed, byte for
// byte, under testdata/fuzz (or rewrites them with -update-corpus).
func TestSeedCorpus(t *testing.T) {
	if err := fuzzseed.Sync(fuzzseed.Dir, seedCorpus, *updateCorpus); err != nil {
		t.Error(err)
	}
}
