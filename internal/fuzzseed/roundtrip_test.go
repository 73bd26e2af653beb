package fuzzseed_test

import (
	"flag"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sluicenet/sluice/internal/fuzzseed"
)

// seedCorpus covers every type Encode writes, with edge values, so that go
// test itself (which reads testdata/fuzz before running FuzzEncode) checks
// that it decodes each file Encode writes.
var seedCorpus = fuzzseed.Corpus{
	"FuzzEncode": {
		{"zero", []any{[]byte{}, "", false, int(0), int8(0), int16(0), int32(0), int64(0),
			uint(0), uint8(0), uint16(0), uint32(0), uint64(0), float32(0), float64(0)}},
		{"max", []any{[]byte("\xff\x00\r\n\"\\`"), "é\t\"\\\n\xfe", true, int(math.MaxInt), int8(math.MaxInt8), int16(math.MaxInt16), int32(math.MaxInt32), int64(math.MaxInt64),
			uint(math.MaxUint), uint8(math.MaxUint8), uint16(math.MaxUint16), uint32(math.MaxUint32), uint64(math.MaxUint64), float32(math.MaxFloat32), math.MaxFloat64}},
		{"min", []any{[]byte("go test fuzz v1\n"), "string(\"x\")\n", false, int(math.MinInt), int8(math.MinInt8), int16(math.MinInt16), int32(math.MinInt32), int64(math.MinInt64),
			uint(1), uint8(1), uint16(1), uint32(1), uint64(1), float32(math.SmallestNonzeroFloat32), -math.SmallestNonzeroFloat64}},
		{"special-floats", []any{[]byte("a"), "b", true, int(-1), int8(-1), int16(-1), int32('é'), int64(-1),
			uint(2), uint8('?'), uint16(0x2150), uint32(300), uint64(1 << 63), float32(math.Inf(-1)), math.Copysign(0, -1)}},
		{"nan", []any{[]byte("n"), "n", false, int(3), int8(3), int16(3), int32(3), int64(3),
			uint(3), uint8(3), uint16(3), uint32(3), uint64(3), float32(math.NaN()), math.NaN()}},
		{"nan-payload", []any{[]byte("p"), "p", false, int(4), int8(4), int16(4), int32(4), int64(4),
			uint(4), uint8(4), uint16(4), uint32(4), uint64(4), math.Float32frombits(0x7fc00002), math.Float64frombits(0x7ff8000000000002)}},
		{"fractions", []any{[]byte("f"), "f", true, int(5), int8(5), int16(5), int32(5), int64(5),
			uint(5), uint8(5), uint16(5), uint32(5), uint64(5), float32(0.1), 1.0 / 3}},
	},
}

func TestSeedCorpus(t *testing.T) {
	if err := fuzzseed.Sync(fuzzseed.Dir, seedCorpus, *updateCorpus); err != nil {
		t.Fatal(err)
	}
	if err := fuzzseed.CheckStrict(fuzzseed.Dir, seedCorpus); err != nil {
		t.Error(err)
	}
}

// linePrefixes are the ways Encode may start the line of each of
// FuzzEncode's parameters.
var linePrefixes = [][]string{{"[]byte("}, {"string("}, {"bool("}, {"int("}, {"int8("}, {"int16("}, {"int32("}, {"int64("},
	{"uint("}, {"uint8("}, {"uint16("}, {"uint32("}, {"uint64("},
	{"float32(", "math.Float32frombits(0x"}, {"float64(", "math.Float64frombits(0x"}}

// FuzzEncode checks that Encode writes one well-formed line per argument for
// any values. When go test runs the committed corpus (not fuzzing), it also
// checks that go test decoded each file into values that Encode writes back
// to the same bytes: the round trip through go test's own decoder.
func FuzzEncode(f *testing.F) {
	want := make(map[string]bool)
	for _, s := range seedCorpus["FuzzEncode"] {
		b, err := fuzzseed.Encode(s.Args...)
		if err != nil {
			f.Fatal(err)
		}
		want[string(b)] = true
	}
	fuzzing := flag.Lookup("test.fuzz").Value.String() != ""
	f.Fuzz(func(t *testing.T, b []byte, s string, bo bool, i int, i8 int8, i16 int16, i32 int32, i64 int64,
		u uint, u8 uint8, u16 uint16, u32 uint32, u64 uint64, f32 float32, f64 float64) {
		got, err := fuzzseed.Encode(b, s, bo, i, i8, i16, i32, i64, u, u8, u16, u32, u64, f32, f64)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(got), "\n")
		if len(lines) != len(linePrefixes)+2 || lines[0] != "go test fuzz v1" || lines[len(lines)-1] != "" {
			t.Fatalf("Encode wrote %d lines: %q", len(lines), got)
		}
		for k, l := range lines[1 : len(lines)-1] {
			if !slices.ContainsFunc(linePrefixes[k], func(p string) bool { return strings.HasPrefix(l, p) }) || !strings.HasSuffix(l, ")") {
				t.Fatalf("argument %d: line %q", k, l)
			}
		}
		if !fuzzing && !want[string(got)] {
			t.Fatalf("go test decoded a seed file into values that Encode writes as\n%s", got)
		}
	})
}
