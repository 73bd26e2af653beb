package resp_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/protocol/resp"
)

var _ protocol.Codec = resp.Codec{}

// strs turns parsed arguments into strings for comparison.
func strs(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Valid single commands: the examples of the RESP spec
// (redis.io/docs/reference/protocol-spec) and redis-server's inline rules.
var validCases = []struct {
	name string
	in   string
	args []string
}{
	{"spec ping", "*1\r\n$4\r\nPING\r\n", []string{"PING"}},
	{"spec echo", "*2\r\n$4\r\nECHO\r\n$3\r\nhey\r\n", []string{"ECHO", "hey"}},
	{"spec llen", "*2\r\n$4\r\nLLEN\r\n$6\r\nmylist\r\n", []string{"LLEN", "mylist"}},
	{"set", "*3\r\n$3\r\nSET\r\n$5\r\nmykey\r\n$7\r\nmyvalue\r\n", []string{"SET", "mykey", "myvalue"}},
	{"empty bulk", "*2\r\n$3\r\nGET\r\n$0\r\n\r\n", []string{"GET", ""}},
	{"binary bulk", "*2\r\n$4\r\nECHO\r\n$6\r\na\r\n\x00\xffb\r\n", []string{"ECHO", "a\r\n\x00\xffb"}},
	{"empty array", "*0\r\n", []string{}},
	{"null array", "*-1\r\n", []string{}},
	{"negative array is empty, as in redis", "*-7\r\n", []string{}},
	{"inline crlf", "PING\r\n", []string{"PING"}},
	{"inline lf", "PING\n", []string{"PING"}},
	{"inline spaces", "  SET\tk   v \r\n", []string{"SET", "k", "v"}},
	{"inline blank", "\r\n", []string{}},
	{"inline only spaces", "   \n", []string{}},
	{"inline cr inside separates", "a\rb\r\n", []string{"a", "b"}},
	{"inline nul is a byte", "a\x00b\n", []string{"a\x00b"}},
	{"inline double quotes", "SET k \"hello world\"\r\n", []string{"SET", "k", "hello world"}},
	{"inline escapes", `SET k "a\x41\n\r\t\b\a\"\\\q"` + "\r\n", []string{"SET", "k", "aA\n\r\t\b\a\"\\q"}},
	{"inline bad hex is literal x", `ECHO "\x4g"` + "\n", []string{"ECHO", "x4g"}},
	{"inline single quotes", `SET k 'it\'s "raw" \n'` + "\n", []string{"SET", "k", `it's "raw" \n`}},
	{"inline quote mid-argument", `ab"c d"` + "\n", []string{"abc d"}},
	{"inline empty quoted", `SET k ""` + "\n", []string{"SET", "k", ""}},
	{"inline quote before tab", "\"a\"\tb\n", []string{"a", "b"}},
}

func TestDecodeParseValid(t *testing.T) {
	var c resp.Codec
	for i, tc := range validCases {
		buf := []byte(tc.in + "PING\r\n") // a second, pipelined command
		frame, n, err := c.Decode(buf)
		if err != nil || n != len(tc.in) || string(frame) != tc.in {
			t.Fatalf("%d %s: Decode = %q, %d, %v; want the whole command, %d, nil", i, tc.name, frame, n, err, len(tc.in))
		}
		if cap(frame) != len(frame) {
			t.Errorf("%d %s: frame capacity %d not clipped to %d", i, tc.name, cap(frame), len(frame))
		}
		args, err := resp.Parse(frame, nil)
		if err != nil || !equal(strs(args), tc.args) {
			t.Fatalf("%d %s: Parse = %q, %v; want %q", i, tc.name, args, err, tc.args)
		}
		for j, a := range args {
			if len(a) > 0 && !within(a, frame) {
				t.Errorf("%d %s: arg %d does not alias the frame", i, tc.name, j)
			}
			if cap(a) != len(a) {
				t.Errorf("%d %s: arg %d capacity not clipped", i, tc.name, j)
			}
		}
		// DecodeCommand gives the same in one pass.
		buf2 := []byte(tc.in + "PING\r\n")
		args2, n2, err := c.DecodeCommand(buf2, nil)
		if err != nil || n2 != len(tc.in) || !equal(strs(args2), tc.args) {
			t.Fatalf("%d %s: DecodeCommand = %q, %d, %v", i, tc.name, args2, n2, err)
		}
		// Every strict prefix needs more input.
		for k := 0; k < len(tc.in); k++ {
			if f, n, err := c.Decode([]byte(tc.in[:k])); n != 0 || err != nil || f != nil {
				t.Fatalf("%d %s: Decode(prefix %d) = %q, %d, %v; want more input", i, tc.name, k, f, n, err)
			}
		}
	}
}

// within reports whether a lies inside b's backing memory.
func within(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	for i := range b {
		if &b[i] == &a[0] {
			return i+len(a) <= len(b)
		}
	}
	return false
}

var errorCases = []struct {
	name  string
	codec resp.Codec
	in    string
	want  error
	kind  error
}{
	{"count not a number", resp.Codec{}, "*a\r\n", resp.ErrInvalidMultibulkLength, protocol.ErrMalformed},
	{"count leading zero", resp.Codec{}, "*01\r\n", resp.ErrInvalidMultibulkLength, protocol.ErrMalformed},
	{"count minus zero", resp.Codec{}, "*-0\r\n", resp.ErrInvalidMultibulkLength, protocol.ErrMalformed},
	{"count plus sign", resp.Codec{}, "*+1\r\n", resp.ErrInvalidMultibulkLength, protocol.ErrMalformed},
	{"count empty", resp.Codec{}, "*\r\n", resp.ErrInvalidMultibulkLength, protocol.ErrMalformed},
	{"count lf only", resp.Codec{}, "*1\n$1\r\na\r\n", resp.ErrInvalidMultibulkLength, protocol.ErrMalformed},
	{"count cr then x", resp.Codec{}, "*1\rx", resp.ErrInvalidMultibulkLength, protocol.ErrMalformed},
	{"count overflow", resp.Codec{}, "*-99999999999999999999\r\n", resp.ErrInvalidMultibulkLength, protocol.ErrMalformed},
	{"element not bulk", resp.Codec{}, "*1\r\n:1\r\n", resp.ErrExpectedDollar, protocol.ErrMalformed},
	{"element inline", resp.Codec{}, "*1\r\nPING\r\n", resp.ErrExpectedDollar, protocol.ErrMalformed},
	{"null bulk in request", resp.Codec{}, "*1\r\n$-1\r\n", resp.ErrInvalidBulkLength, protocol.ErrMalformed},
	{"bulk length junk", resp.Codec{}, "*1\r\n$x\r\n", resp.ErrInvalidBulkLength, protocol.ErrMalformed},
	{"bulk length leading zero", resp.Codec{}, "*1\r\n$03\r\nabc\r\n", resp.ErrInvalidBulkLength, protocol.ErrMalformed},
	{"bulk missing cr", resp.Codec{}, "*1\r\n$3\r\nabcX", resp.ErrExpectedCRLF, protocol.ErrMalformed},
	{"bulk missing lf", resp.Codec{}, "*1\r\n$3\r\nabc\rX", resp.ErrExpectedCRLF, protocol.ErrMalformed},
	{"unterminated double quote", resp.Codec{}, "SET k \"abc\r\n", resp.ErrUnbalancedQuotes, protocol.ErrMalformed},
	{"unterminated single quote", resp.Codec{}, "SET k 'abc\n", resp.ErrUnbalancedQuotes, protocol.ErrMalformed},
	{"closing quote then letter", resp.Codec{}, "SET k \"a\"b\n", resp.ErrUnbalancedQuotes, protocol.ErrMalformed},
	{"trailing backslash in quotes", resp.Codec{}, "ECHO \"a\\\n", resp.ErrUnbalancedQuotes, protocol.ErrMalformed},

	{"too many args, before elements arrive", resp.Codec{MaxArgs: 3}, "*4\r\n", resp.ErrTooManyArgs, protocol.ErrFrameTooLarge},
	{"too many args, early digits", resp.Codec{MaxArgs: 3}, "*40", resp.ErrTooManyArgs, protocol.ErrFrameTooLarge},
	{"count above default", resp.Codec{}, fmt.Sprintf("*%d\r\n", resp.DefaultMaxArgs+1), resp.ErrTooManyArgs, protocol.ErrFrameTooLarge},
	{"too many inline args", resp.Codec{MaxArgs: 2}, "a b c\n", resp.ErrTooManyArgs, protocol.ErrFrameTooLarge},
	{"bulk too large, before data", resp.Codec{MaxBulkBytes: 4}, "*1\r\n$5\r\n", resp.ErrBulkTooLarge, protocol.ErrFrameTooLarge},
	{"bulk too large, early digits", resp.Codec{MaxBulkBytes: 4}, "*1\r\n$12", resp.ErrBulkTooLarge, protocol.ErrFrameTooLarge},
	{"bulk above default", resp.Codec{}, fmt.Sprintf("*1\r\n$%d\r\n", resp.DefaultMaxBulkBytes+1), resp.ErrBulkTooLarge, protocol.ErrFrameTooLarge},
	{"inline too long, no newline", resp.Codec{MaxInlineBytes: 4}, "PINGPONG", resp.ErrInlineTooLarge, protocol.ErrFrameTooLarge},
	{"inline too long, lf", resp.Codec{MaxInlineBytes: 4}, "PINGX\n", resp.ErrInlineTooLarge, protocol.ErrFrameTooLarge},
	{"inline default limit", resp.Codec{}, strings.Repeat("a", resp.DefaultMaxInlineBytes+2), resp.ErrInlineTooLarge, protocol.ErrFrameTooLarge},
	{"command too large, declared", resp.Codec{MaxCommandBytes: 20}, "*2\r\n$3\r\nGET\r\n$5\r\n", resp.ErrCommandTooLarge, protocol.ErrFrameTooLarge},
	{"command too large, inline", resp.Codec{MaxCommandBytes: 5}, "PING\r\n", resp.ErrCommandTooLarge, protocol.ErrFrameTooLarge},
	{"command too large, inline without newline", resp.Codec{MaxCommandBytes: 5}, "PINGPONG", resp.ErrCommandTooLarge, protocol.ErrFrameTooLarge},
	{"negative limit", resp.Codec{MaxArgs: -1}, "PING\r\n", nil, protocol.ErrInvalidConfig},
}

func TestDecodeErrors(t *testing.T) {
	for i, tc := range errorCases {
		frame, n, err := tc.codec.Decode([]byte(tc.in))
		if err == nil || n != 0 || frame != nil {
			t.Fatalf("%d %s: Decode(%q) = %q, %d, %v; want an error", i, tc.name, tc.in, frame, n, err)
		}
		if tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%d %s: err = %v; want %v", i, tc.name, err, tc.want)
		}
		if !errors.Is(err, tc.kind) {
			t.Errorf("%d %s: err = %v; want errors.Is %v", i, tc.name, err, tc.kind)
		}
		if !strings.HasPrefix(err.Error(), "sluice: ") {
			t.Errorf("%d %s: message %q lacks the sluice: prefix", i, tc.name, err)
		}
		args, n, err2 := tc.codec.DecodeCommand([]byte(tc.in), nil)
		if err2 != err || n != 0 || args != nil {
			t.Errorf("%d %s: DecodeCommand = %q, %d, %v; want %v", i, tc.name, args, n, err2, err)
		}
	}
}

func TestLimitsAtTheBoundary(t *testing.T) {
	c := resp.Codec{MaxArgs: 2, MaxBulkBytes: 3, MaxInlineBytes: 6}
	ok := []string{
		"*2\r\n$3\r\nabc\r\n$0\r\n\r\n",
		"abc de\r\n", // 6 bytes of line
		"abc de\n",
	}
	for i, in := range ok {
		if _, n, err := c.Decode([]byte(in)); n != len(in) || err != nil {
			t.Errorf("%d: Decode(%q) = %d, %v; want %d, nil", i, in, n, err, len(in))
		}
	}
	frame := "*1\r\n$3\r\nabc\r\n" // 13 bytes
	if _, n, err := (resp.Codec{MaxCommandBytes: 13}).Decode([]byte(frame)); n != 13 || err != nil {
		t.Errorf("MaxCommandBytes 13: %d, %v", n, err)
	}
	if _, _, err := (resp.Codec{MaxCommandBytes: 12}).Decode([]byte(frame)); !errors.Is(err, resp.ErrCommandTooLarge) {
		t.Errorf("MaxCommandBytes 12: %v", err)
	}
	if _, n, err := (resp.Codec{MaxCommandBytes: 6}).Decode([]byte("PING\r\n")); n != 6 || err != nil {
		t.Errorf("inline at MaxCommandBytes: %d, %v", n, err)
	}
	// An inline line of exactly MaxInlineBytes waits for its newline.
	if _, n, err := c.Decode([]byte("abcdef\r")); n != 0 || err != nil {
		t.Errorf("incomplete maximal inline: %d, %v", n, err)
	}
}

func TestParseFrameBounds(t *testing.T) {
	cases := []struct {
		in   string
		want error
	}{
		{"", resp.ErrIncompleteCommand},
		{"*2\r\n$3\r\nGET\r\n", resp.ErrIncompleteCommand},
		{"PING", resp.ErrIncompleteCommand},
		{"*1\r\n$4\r\nPING\r\nX", resp.ErrTrailingBytes},
		{"PING\r\nPING\r\n", resp.ErrTrailingBytes},
		{"*1\r\n$4\r\nPINGxx", resp.ErrExpectedCRLF},
	}
	for i, tc := range cases {
		prev := [][]byte{[]byte("keep")}
		args, err := resp.Parse([]byte(tc.in), prev)
		if !errors.Is(err, tc.want) || !errors.Is(err, protocol.ErrMalformed) {
			t.Errorf("%d: Parse(%q) err = %v; want %v", i, tc.in, err, tc.want)
		}
		if len(args) != 1 || string(args[0]) != "keep" {
			t.Errorf("%d: Parse changed args on error: %q", i, args)
		}
	}
	// Parse has no size limits of its own: a frame beyond the default
	// inline limit parses.
	long := strings.Repeat("x", resp.DefaultMaxInlineBytes+10) + "\n"
	if args, err := resp.Parse([]byte(long), nil); err != nil || len(args) != 1 {
		t.Errorf("long inline: %d args, %v", len(args), err)
	}
}

func TestParseAppends(t *testing.T) {
	args := [][]byte{[]byte("x")}
	args, err := resp.Parse([]byte("*2\r\n$1\r\na\r\n$1\r\nb\r\n"), args)
	if err != nil || !equal(strs(args), []string{"x", "a", "b"}) {
		t.Fatalf("Parse = %q, %v", args, err)
	}
}

func TestParseZeroAllocs(t *testing.T) {
	frames := [][]byte{
		[]byte("*3\r\n$3\r\nSET\r\n$5\r\nmykey\r\n$7\r\nmyvalue\r\n"),
		[]byte("SET mykey myvalue\r\n"),
	}
	var c resp.Codec
	args := make([][]byte, 0, 8)
	for _, f := range frames {
		allocs := testing.AllocsPerRun(100, func() {
			frame, _, err := c.Decode(f)
			if err != nil {
				t.Fatal(err)
			}
			args, err = resp.Parse(frame, args[:0])
			if err != nil || len(args) != 3 {
				t.Fatal(args, err)
			}
			args, _, _ = c.DecodeCommand(f, args[:0])
		})
		if allocs != 0 {
			t.Errorf("Decode+Parse of %q: %v allocs; want 0", f, allocs)
		}
	}
}

// pipeline is a stream of commands of every form, with the arguments each
// decodes to.
var pipeline = []struct {
	wire string
	args []string
}{
	{"*1\r\n$4\r\nPING\r\n", []string{"PING"}},
	{"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nva\r\nl\r\n", []string{"SET", "key", "va\r\nl"}},
	{"PING\r\n", []string{"PING"}},
	{"*0\r\n", []string{}},
	{"GET key\n", []string{"GET", "key"}},
	{"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n", []string{"GET", "key"}},
	{"ECHO \"a b\"\r\n", []string{"ECHO", "a b"}},
	{"\r\n", []string{}},
	{"*2\r\n$4\r\nINCR\r\n$10\r\n0123456789\r\n", []string{"INCR", "0123456789"}},
}

// drain decodes every complete command in *in, appending their arguments
// (as strings) to got and removing them from *in.
func drain(t *testing.T, c resp.Codec, in *[]byte, got *[][]string) {
	t.Helper()
	for {
		frame, n, err := c.Decode(*in)
		if err != nil {
			t.Fatalf("Decode(%q): %v", *in, err)
		}
		if n == 0 {
			return
		}
		args, err := resp.Parse(frame, nil)
		if err != nil {
			t.Fatalf("Parse(%q): %v", frame, err)
		}
		*got = append(*got, strs(args))
		*in = (*in)[n:]
	}
}

func checkPipeline(t *testing.T, got [][]string, rest []byte, label string) {
	t.Helper()
	if len(rest) != 0 {
		t.Fatalf("%s: %q left over", label, rest)
	}
	if len(got) != len(pipeline) {
		t.Fatalf("%s: %d commands; want %d", label, len(got), len(pipeline))
	}
	for i := range got {
		if !equal(got[i], pipeline[i].args) {
			t.Fatalf("%s: command %d = %q; want %q", label, i, got[i], pipeline[i].args)
		}
	}
}

// TestPipelineSplitEverywhere feeds the pipelined stream in two reads split
// at every byte boundary, and then one byte per read.
func TestPipelineSplitEverywhere(t *testing.T) {
	var wire []byte
	for _, p := range pipeline {
		wire = append(wire, p.wire...)
	}
	var c resp.Codec
	for split := 0; split <= len(wire); split++ {
		var got [][]string
		in := append([]byte(nil), wire[:split]...)
		drain(t, c, &in, &got)
		in = append(in, wire[split:]...)
		drain(t, c, &in, &got)
		checkPipeline(t, got, in, fmt.Sprintf("split at %d", split))
	}
	var got [][]string
	var in []byte
	for i := range wire {
		in = append(in, wire[i])
		drain(t, c, &in, &got)
	}
	checkPipeline(t, got, in, "byte by byte")
}

func TestEqualFold(t *testing.T) {
	cases := []struct {
		arg, name string
		want      bool
	}{
		{"get", "GET", true},
		{"GeT", "gEt", true},
		{"GET", "GET", true},
		{"GETX", "GET", false},
		{"GE", "GET", false},
		{"", "", true},
		{"[", "{", false}, // 0x5b vs 0x7b: only letters fold
		{"@", "`", false},
		{"\xc4", "\xe4", false},
		{"px", "PX", true},
	}
	for i, tc := range cases {
		if got := resp.EqualFold([]byte(tc.arg), tc.name); got != tc.want {
			t.Errorf("%d: EqualFold(%q, %q) = %v", i, tc.arg, tc.name, got)
		}
	}
	if a := testing.AllocsPerRun(100, func() { resp.EqualFold([]byte("set"), "SET") }); a != 0 {
		t.Errorf("EqualFold allocs = %v", a)
	}
}

func TestParseInt(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"1", 1, true},
		{"-1", -1, true},
		{"1234567890", 1234567890, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"-9223372036854775808", -9223372036854775808, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"99999999999999999999", 0, false},
		{"", 0, false},
		{"-", 0, false},
		{"-0", 0, false},
		{"01", 0, false},
		{"+1", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"1a", 0, false},
	}
	for i, tc := range cases {
		got, ok := resp.ParseInt([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("%d: ParseInt(%q) = %d, %v; want %d, %v", i, tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestValidate(t *testing.T) {
	if err := (resp.Codec{}).Validate(); err != nil {
		t.Errorf("zero Codec: %v", err)
	}
	for i, c := range []resp.Codec{{MaxArgs: -1}, {MaxBulkBytes: -1}, {MaxInlineBytes: -1}, {MaxCommandBytes: -1}} {
		if err := c.Validate(); !errors.Is(err, protocol.ErrInvalidConfig) {
			t.Errorf("%d: Validate = %v", i, err)
		}
	}
}

func TestAppendEncodeVerbatim(t *testing.T) {
	frame := []byte("*1\r\n$4\r\nPING\r\n")
	if got := (resp.Codec{}).AppendEncode([]byte("x"), frame); !bytes.Equal(got, append([]byte("x"), frame...)) {
		t.Errorf("AppendEncode = %q", got)
	}
}
