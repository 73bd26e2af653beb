package protocol

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz seed files from seedCorpus")

// seed is one named seed corpus entry: the arguments of a fuzz target.
type seed struct {
	name string
	args []any
}

// seedCorpus lists the committed seeds under testdata/fuzz, per target.
// TestSeedCorpus keeps the files and this table in step; after changing it
// run: go test -run TestSeedCorpus ./protocol -args -update-corpus
var seedCorpus = map[string][]seed{
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

// corpusFile renders args in Go's fuzz corpus format.
func corpusFile(args []any) []byte {
	var b bytes.Buffer
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		default:
			fmt.Fprintf(&b, "%T(%v)\n", v, v)
		}
	}
	return b.Bytes()
}

// TestSeedCorpus checks that every seed in seedCorpus is committed, byte for
// byte, under testdata/fuzz (or rewrites them with -update-corpus).
func TestSeedCorpus(t *testing.T) {
	for target, seeds := range seedCorpus {
		for i, s := range seeds {
			path := filepath.Join("testdata", "fuzz", target, s.name)
			want := corpusFile(s.args)
			if *updateCorpus {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s %d %s: committed seed missing or stale (%v); run with -update-corpus", target, i, s.name, err)
			}
		}
	}
}
