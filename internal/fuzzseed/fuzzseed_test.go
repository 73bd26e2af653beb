package fuzzseed_test

import (
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicenet/sluice/internal/fuzzseed"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz seed files from seedCorpus")

// named is a named type: Encode refuses it, as go test would not read it back.
type named uint8

func TestEncode(t *testing.T) {
	for _, tc := range []struct {
		arg  any
		line string
	}{
		// The forms the sluice tables commit today.
		{[]byte{}, `[]byte("")`},
		{[]byte("\x00\x00\x01\x2cabc\n\xff"), `[]byte("\x00\x00\x01,abc\n\xff")`},
		{"", `string("")`},
		{"tenant é\n", `string("tenant é\n")`},
		{"\xff", `string("\xff")`},
		{uint8(0xff), `uint8(255)`},
		{byte('?'), `uint8(63)`},
		{uint16(65535), `uint16(65535)`},
		{uint32(300), `uint32(300)`},
		{uint64(1 << 63), `uint64(9223372036854775808)`},
		{int64(-5), `int64(-5)`},
		{int64(math.MinInt64), `int64(-9223372036854775808)`},
		// The other parameter types go test accepts.
		{true, `bool(true)`},
		{false, `bool(false)`},
		{int(-1), `int(-1)`},
		{int8(-128), `int8(-128)`},
		{int16(32767), `int16(32767)`},
		{int32(-7), `int32(-7)`},
		{'é', `int32(233)`},
		{uint(7), `uint(7)`},
		{float32(0.1), `float32(0.1)`},
		{float64(0.1), `float64(0.1)`},
		{1e300, `float64(1e+300)`},
		{math.Copysign(0, -1), `float64(-0)`},
		{math.Inf(-1), `float64(-Inf)`},
		{float32(math.Inf(1)), `float32(+Inf)`},
		{math.NaN(), `float64(NaN)`},
		{math.Float64frombits(0x7ff8000000000002), `math.Float64frombits(0x7ff8000000000002)`},
		{math.Float32frombits(0x7fc00002), `math.Float32frombits(0x7fc00002)`},
	} {
		got, err := fuzzseed.Encode(tc.arg)
		if want := "go test fuzz v1\n" + tc.line + "\n"; err != nil || string(got) != want {
			t.Errorf("Encode(%T %v) = %q, %v; want %q", tc.arg, tc.arg, got, err, want)
		}
	}
	got, err := fuzzseed.Encode([]byte("a"), uint8(3), uint16(5))
	if want := "go test fuzz v1\n[]byte(\"a\")\nuint8(3)\nuint16(5)\n"; err != nil || string(got) != want {
		t.Errorf("Encode of three = %q, %v; want %q", got, err, want)
	}
}

func TestEncodeErrors(t *testing.T) {
	if _, err := fuzzseed.Encode(); !errors.Is(err, fuzzseed.ErrNoArgs) {
		t.Errorf("Encode() = %v, want ErrNoArgs", err)
	}
	x := 1
	for _, arg := range []any{nil, named(1), &x, []string{"a"}, struct{}{}, complex(1, 2), []uint16{1}} {
		_, err := fuzzseed.Encode([]byte("ok"), arg)
		if !errors.Is(err, fuzzseed.ErrUnsupportedType) || !strings.HasPrefix(err.Error(), "sluice: ") ||
			!strings.Contains(err.Error(), "argument 1") {
			t.Errorf("Encode(%T) = %v, want ErrUnsupportedType naming argument 1", arg, err)
		}
	}
}

func TestWriteCheck(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fuzz")
	c := fuzzseed.Corpus{
		"FuzzA": {
			{"one", []any{[]byte("x"), uint16(1)}},
			{"two", []any{[]byte("y"), uint16(2)}},
		},
		"FuzzB": {{"only", []any{"s"}}},
	}
	path := func(target, name string) string { return filepath.Join(dir, target, name) }

	// Nothing written yet: every file is missing, listed with its content.
	err := fuzzseed.Check(dir, c)
	if !errors.Is(err, fuzzseed.ErrMissing) || errors.Is(err, fuzzseed.ErrStale) {
		t.Fatalf("Check before Write = %v, want only ErrMissing", err)
	}
	want := "sluice: fuzzseed: " + dir + " is out of step with the seed table (rewrite it with -update-corpus):\n" +
		path("FuzzA", "one") + ": seed file missing (+table):\n\t+ go test fuzz v1\n\t+ []byte(\"x\")\n\t+ uint16(1)\n" +
		path("FuzzA", "two") + ": seed file missing (+table):\n\t+ go test fuzz v1\n\t+ []byte(\"y\")\n\t+ uint16(2)\n" +
		path("FuzzB", "only") + ": seed file missing (+table):\n\t+ go test fuzz v1\n\t+ string(\"s\")"
	if err.Error() != want {
		t.Errorf("Check before Write:\n%s\nwant:\n%s", err, want)
	}

	if err := fuzzseed.Sync(dir, c, true); err != nil {
		t.Fatalf("Sync(update) = %v", err)
	}
	if got, err := os.ReadFile(path("FuzzA", "two")); err != nil || string(got) != "go test fuzz v1\n[]byte(\"y\")\nuint16(2)\n" {
		t.Fatalf("FuzzA/two = %q, %v", got, err)
	}
	for _, check := range []func(string, fuzzseed.Corpus) error{fuzzseed.Check, fuzzseed.CheckStrict} {
		if err := check(dir, c); err != nil {
			t.Fatalf("check after Write = %v", err)
		}
	}
	if err := fuzzseed.Sync(dir, c, false); err != nil {
		t.Fatalf("Sync(check) after Write = %v", err)
	}

	// A stale file shows a line diff; a stray carriage return is quoted.
	if err := os.WriteFile(path("FuzzA", "one"), []byte("go test fuzz v1\n[]byte(\"x\")\r\nuint16(7)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = fuzzseed.Sync(dir, c, false)
	want = "sluice: fuzzseed: " + dir + " is out of step with the seed table (rewrite it with -update-corpus):\n" +
		path("FuzzA", "one") + ": seed file stale (-file +table):\n" +
		"\t  go test fuzz v1\n\t- \"[]byte(\\\"x\\\")\\r\"\n\t+ []byte(\"x\")\n\t- uint16(7)\n\t+ uint16(1)"
	if !errors.Is(err, fuzzseed.ErrStale) || errors.Is(err, fuzzseed.ErrMissing) || err.Error() != want {
		t.Errorf("Check of a stale file:\n%v\nwant:\n%s", err, want)
	}
	// A file with an argument too many or too few.
	if err := os.WriteFile(path("FuzzA", "one"), []byte("go test fuzz v1\n[]byte(\"x\")\nuint16(1)\nbool(true)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fuzzseed.Check(dir, c); err == nil || !strings.HasSuffix(err.Error(), "\t  uint16(1)\n\t- bool(true)") {
		t.Errorf("Check of a file with an extra line = %v", err)
	}
	if err := os.WriteFile(path("FuzzA", "one"), []byte("go test fuzz v1\n[]byte(\"x\")\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fuzzseed.Check(dir, c); err == nil || !strings.HasSuffix(err.Error(), "\t  []byte(\"x\")\n\t+ uint16(1)") {
		t.Errorf("Check of a file with a missing line = %v", err)
	}
	if err := fuzzseed.Write(dir, c); err != nil {
		t.Fatal(err)
	}

	// Files the table does not name: Check ignores them, CheckStrict lists
	// them, Write leaves them.
	for _, p := range []string{path("FuzzA", "f0a1b2c3"), path("FuzzC", "old"), filepath.Join(dir, "README")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("go test fuzz v1\nbool(true)\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := fuzzseed.Check(dir, c); err != nil {
		t.Errorf("Check with extra files = %v, want nil", err)
	}
	err = fuzzseed.CheckStrict(dir, c)
	want = "sluice: fuzzseed: " + dir + " is out of step with the seed table (rewrite it with -update-corpus):\n" +
		path("FuzzA", "f0a1b2c3") + ": seed file not in the table\n" +
		path("FuzzC", "old") + ": seed file not in the table\n" +
		filepath.Join(dir, "README") + ": seed file not in the table"
	if !errors.Is(err, fuzzseed.ErrUnexpected) || err.Error() != want {
		t.Errorf("CheckStrict with extra files:\n%v\nwant:\n%s", err, want)
	}
	if err := fuzzseed.Write(dir, c); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path("FuzzC", "old")); err != nil {
		t.Errorf("Write removed a file it does not own: %v", err)
	}

	// No directory at all: CheckStrict reports the missing seeds only.
	empty := filepath.Join(t.TempDir(), "none")
	if err := fuzzseed.CheckStrict(empty, c); !errors.Is(err, fuzzseed.ErrMissing) || errors.Is(err, fuzzseed.ErrUnexpected) {
		t.Errorf("CheckStrict of no directory = %v, want only ErrMissing", err)
	}
}

func TestBadTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    fuzzseed.Corpus
		want error
	}{
		{"empty target", fuzzseed.Corpus{"": {{"a", []any{true}}}}, fuzzseed.ErrBadName},
		{"dotdot target", fuzzseed.Corpus{"..": {{"a", []any{true}}}}, fuzzseed.ErrBadName},
		{"empty seed", fuzzseed.Corpus{"FuzzA": {{"", []any{true}}}}, fuzzseed.ErrBadName},
		{"dot seed", fuzzseed.Corpus{"FuzzA": {{".", []any{true}}}}, fuzzseed.ErrBadName},
		{"path seed", fuzzseed.Corpus{"FuzzA": {{"../../x", []any{true}}}}, fuzzseed.ErrBadName},
		{"backslash seed", fuzzseed.Corpus{"FuzzA": {{`a\b`, []any{true}}}}, fuzzseed.ErrBadName},
		{"duplicate seed", fuzzseed.Corpus{"FuzzA": {{"a", []any{true}}, {"a", []any{false}}}}, fuzzseed.ErrBadName},
		{"no args", fuzzseed.Corpus{"FuzzA": {{"a", nil}}}, fuzzseed.ErrNoArgs},
		{"named type", fuzzseed.Corpus{"FuzzA": {{"ok", []any{true}}, {"a", []any{named(1)}}}}, fuzzseed.ErrUnsupportedType},
	} {
		dir := filepath.Join(t.TempDir(), "fuzz")
		for _, op := range []func(string, fuzzseed.Corpus) error{fuzzseed.Write, fuzzseed.Check, fuzzseed.CheckStrict} {
			if err := op(dir, tc.c); !errors.Is(err, tc.want) || !strings.HasPrefix(err.Error(), "sluice: fuzzseed: bad seed table:\n") {
				t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
			}
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: Write of a bad table created %s (%v)", tc.name, dir, err)
		}
	}
}
