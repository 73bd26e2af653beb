package resp_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/sluicenet/sluice/protocol/resp"
)

func TestAppendReplies(t *testing.T) {
	cases := []struct {
		name string
		got  []byte
		want string
	}{
		{"simple", resp.AppendSimpleString(nil, "OK"), "+OK\r\n"},
		{"simple newline", resp.AppendSimpleString(nil, "a\r\nb"), "+a  b\r\n"},
		{"simple empty", resp.AppendSimpleString(nil, ""), "+\r\n"},
		{"error", resp.AppendError(nil, "ERR unknown command 'FOO'"), "-ERR unknown command 'FOO'\r\n"},
		{"busy", resp.AppendError(nil, "BUSY server overloaded"), "-BUSY server overloaded\r\n"},
		{"error leading dash", resp.AppendError(nil, "-ERR x"), "-ERR x\r\n"},
		{"error empty", resp.AppendError(nil, ""), "-ERR\r\n"},
		{"error newline", resp.AppendError(nil, "ERR a\nb"), "-ERR a b\r\n"},
		{"int", resp.AppendInt(nil, 1000), ":1000\r\n"},
		{"int zero", resp.AppendInt(nil, 0), ":0\r\n"},
		{"int negative", resp.AppendInt(nil, -1), ":-1\r\n"},
		{"int min", resp.AppendInt(nil, math.MinInt64), ":-9223372036854775808\r\n"},
		{"bulk", resp.AppendBulk(nil, []byte("hello")), "$5\r\nhello\r\n"},
		{"bulk empty", resp.AppendBulk(nil, nil), "$0\r\n\r\n"},
		{"bulk binary", resp.AppendBulk(nil, []byte("a\r\nb")), "$4\r\na\r\nb\r\n"},
		{"bulk string", resp.AppendBulkString(nil, "hey"), "$3\r\nhey\r\n"},
		{"null bulk", resp.AppendNullBulk(nil), "$-1\r\n"},
		{"array header", resp.AppendArrayHeader(nil, 2), "*2\r\n"},
		{"empty array", resp.AppendArrayHeader(nil, 0), "*0\r\n"},
		{"negative array is null", resp.AppendArrayHeader(nil, -1), "*-1\r\n"},
		{"null array", resp.AppendNullArray(nil), "*-1\r\n"},
		{"command", resp.AppendCommand(nil, []byte("GET"), []byte("k")), "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"},
		{"appends", resp.AppendInt([]byte("+OK\r\n"), 1), "+OK\r\n:1\r\n"},
		// The spec's example of an array of mixed types.
		{"spec mixed array", resp.AppendBulkString(resp.AppendInt(resp.AppendInt(resp.AppendArrayHeader(nil, 3), 1), 2), "hello"),
			"*3\r\n:1\r\n:2\r\n$5\r\nhello\r\n"},
	}
	for i, tc := range cases {
		if string(tc.got) != tc.want {
			t.Errorf("%d %s: %q; want %q", i, tc.name, tc.got, tc.want)
		}
	}
}

func TestAppendProtocolError(t *testing.T) {
	_, _, err := resp.Codec{}.Decode([]byte("*1\r\n$x\r\n"))
	if got := string(resp.AppendProtocolError(nil, err)); got != "-ERR Protocol error: invalid bulk length\r\n" {
		t.Errorf("got %q", got)
	}
	wrapped := fmt.Errorf("conn 7: %w", resp.ErrUnbalancedQuotes)
	if got := string(resp.AppendProtocolError(nil, wrapped)); got != "-ERR Protocol error: unbalanced quotes in request\r\n" {
		t.Errorf("wrapped: got %q", got)
	}
	if got := string(resp.AppendProtocolError(nil, errors.New("other"))); got != "-ERR Protocol error\r\n" {
		t.Errorf("other: got %q", got)
	}
	var pe *resp.ProtocolError
	if !errors.As(resp.ErrTooManyArgs, &pe) || pe.Reason() != "too many arguments" {
		t.Errorf("Reason: %v", pe)
	}
}

func TestAppendZeroAllocs(t *testing.T) {
	dst := make([]byte, 0, 256)
	val := []byte("value")
	allocs := testing.AllocsPerRun(100, func() {
		d := resp.AppendSimpleString(dst[:0], "OK")
		d = resp.AppendError(d, "BUSY overloaded")
		d = resp.AppendInt(d, 42)
		d = resp.AppendBulk(d, val)
		d = resp.AppendNullBulk(d)
		d = resp.AppendArrayHeader(d, 2)
		_ = resp.AppendNullArray(d)
	})
	if allocs != 0 {
		t.Errorf("Append*: %v allocs; want 0", allocs)
	}
}
