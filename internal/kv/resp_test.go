package kv

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol/resp"
	"github.com/sluicenet/sluice/server"
)

// t0 is the tables' wall clock origin.
var t0 = time.Unix(1_700_000_000, 0)

func newTestRESP(t testing.TB, cfg Config) *RESPHandler {
	t.Helper()
	return NewRESPHandler(newTestStore(t, cfg), resp.Codec{}, func() time.Time { return t0 })
}

// execWire runs every command in in (RESP wire bytes, pipelined) at now
// and returns the concatenated replies and the last action.
func execWire(t testing.TB, h *RESPHandler, in string, now int64) (string, server.Action) {
	t.Helper()
	buf := []byte(in)
	var out []byte
	act := server.None
	for len(buf) > 0 {
		frame, n, err := h.codec.Decode(buf)
		if err != nil || n == 0 {
			t.Fatalf("decode %q: n=%d err=%v", buf, n, err)
		}
		buf = buf[n:]
		args, err := resp.Parse(frame, nil)
		if err != nil {
			t.Fatalf("parse %q: %v", frame, err)
		}
		if len(args) == 0 {
			continue
		}
		out, act = h.Exec(out, args, now)
	}
	return string(out), act
}

// cmd encodes a command as a client would.
func cmd(args ...string) string {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	return string(resp.AppendCommand(nil, bs...))
}

func TestRESPExecTable(t *testing.T) {
	const now = int64(1_700_000_000) * sec
	tests := []struct {
		name, in, want string
	}{
		{"ping", cmd("PING"), "+PONG\r\n"},
		{"ping inline", "PING\r\n", "+PONG\r\n"},
		{"ping message", cmd("ping", "hi"), "$2\r\nhi\r\n"},
		{"ping too many", cmd("PING", "a", "b"), "-ERR wrong number of arguments for 'ping' command\r\n"},
		{"echo", cmd("ECHO", "hello world"), "$11\r\nhello world\r\n"},
		{"echo arity", cmd("ECHO"), "-ERR wrong number of arguments for 'echo' command\r\n"},
		{"get missing", cmd("GET", "nope"), "$-1\r\n"},
		{"set get", cmd("SET", "k", "v") + cmd("get", "k"), "+OK\r\n$1\r\nv\r\n"},
		{"set binary", cmd("SET", "k", "a\r\nb\x00") + cmd("GET", "k"), "+OK\r\n$5\r\na\r\nb\x00\r\n"},
		{"set empty", cmd("SET", "k", "") + cmd("GET", "k"), "+OK\r\n$0\r\n\r\n"},
		{"set inline quoted", "SET k \"a b\"\r\nGET k\r\n", "+OK\r\n$3\r\na b\r\n"},
		{"set arity", cmd("SET", "k"), "-ERR wrong number of arguments for 'set' command\r\n"},
		{"set nx", cmd("SET", "k", "1", "NX") + cmd("SET", "k", "2", "nx") + cmd("GET", "k"), "+OK\r\n$-1\r\n$1\r\n1\r\n"},
		{"set xx", cmd("SET", "k", "1", "XX") + cmd("GET", "k") + cmd("SET", "k", "2") + cmd("SET", "k", "3", "XX") + cmd("GET", "k"),
			"$-1\r\n$-1\r\n+OK\r\n+OK\r\n$1\r\n3\r\n"},
		{"set nx xx", cmd("SET", "k", "1", "NX", "XX"), "-ERR syntax error\r\n"},
		{"set px", cmd("SET", "k", "v", "PX", "100") + cmd("GET", "k"), "+OK\r\n$1\r\nv\r\n"},
		{"set ex px", cmd("SET", "k", "v", "EX", "1", "PX", "100"), "-ERR syntax error\r\n"},
		{"set px missing", cmd("SET", "k", "v", "PX"), "-ERR syntax error\r\n"},
		{"set px zero", cmd("SET", "k", "v", "PX", "0"), "-ERR invalid expire time in 'set' command\r\n"},
		{"set px negative", cmd("SET", "k", "v", "px", "-5"), "-ERR invalid expire time in 'set' command\r\n"},
		{"set px junk", cmd("SET", "k", "v", "PX", "1x"), "-ERR invalid expire time in 'set' command\r\n"},
		{"set ex overflow", cmd("SET", "k", "v", "EX", "9223372036854775807"), "-ERR invalid expire time in 'set' command\r\n"},
		{"set exat past", cmd("SET", "k", "v", "EXAT", "1") + cmd("GET", "k"), "+OK\r\n$-1\r\n"},
		{"set keepttl ex", cmd("SET", "k", "v", "KEEPTTL", "EX", "5"), "-ERR syntax error\r\n"},
		{"set unknown option", cmd("SET", "k", "v", "GETX"), "-ERR syntax error\r\n"},
		{"del", cmd("SET", "a", "1") + cmd("SET", "b", "2") + cmd("DEL", "a", "b", "c", "a"), "+OK\r\n+OK\r\n:2\r\n"},
		{"del arity", cmd("DEL"), "-ERR wrong number of arguments for 'del' command\r\n"},
		{"exists", cmd("SET", "a", "1") + cmd("EXISTS", "a", "a", "b"), "+OK\r\n:2\r\n"},
		{"incr", cmd("INCR", "n") + cmd("INCR", "n") + cmd("GET", "n"), ":1\r\n:2\r\n$1\r\n2\r\n"},
		{"incr not integer", cmd("SET", "n", "x") + cmd("INCR", "n"), "+OK\r\n-ERR value is not an integer or out of range\r\n"},
		{"incr overflow", cmd("SET", "n", "9223372036854775807") + cmd("INCR", "n"), "+OK\r\n-ERR increment or decrement would overflow\r\n"},
		{"mset mget", cmd("MSET", "a", "1", "b", "") + cmd("MGET", "a", "b", "c"), "+OK\r\n*3\r\n$1\r\n1\r\n$0\r\n\r\n$-1\r\n"},
		{"mset odd", cmd("MSET", "a", "1", "b"), "-ERR wrong number of arguments for 'mset' command\r\n"},
		{"mget arity", cmd("MGET"), "-ERR wrong number of arguments for 'mget' command\r\n"},
		{"unknown", cmd("FLUSHALL", "now", "x\r\ny"), "-ERR unknown command 'FLUSHALL', with args beginning with: 'now' 'x  y' \r\n"},
		{"unknown no args", cmd("nope"), "-ERR unknown command 'nope', with args beginning with: \r\n"},
		{"unknown long name", cmd(strings.Repeat("A", 20)), "-ERR unknown command '" + strings.Repeat("A", 20) + "', with args beginning with: \r\n"},
		{"empty command", "*0\r\n\r\n" + cmd("PING"), "+PONG\r\n"},
		{"command count", cmd("COMMAND", "COUNT"), ":14\r\n"},
		{"command info", cmd("COMMAND", "INFO", "get", "nope"),
			"*2\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n*0\r\n*0\r\n*0\r\n*0\r\n$-1\r\n"},
		{"command docs", cmd("COMMAND", "DOCS", "ECHO"),
			"*2\r\n$4\r\necho\r\n*6\r\n$7\r\nsummary\r\n$25\r\nReturns the given string.\r\n$5\r\nsince\r\n$5\r\n1.0.0\r\n$5\r\ngroup\r\n$10\r\nconnection\r\n"},
		{"command docs unknown", cmd("COMMAND", "DOCS", "nope"), "*0\r\n"},
		{"command bad sub", cmd("COMMAND", "FOO"), "-ERR unknown subcommand 'FOO'. Try COMMAND HELP.\r\n"},
		{"config get save", cmd("CONFIG", "GET", "save"), "*2\r\n$4\r\nsave\r\n$0\r\n\r\n"},
		{"config get appendonly", cmd("config", "get", "APPENDONLY"), "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n"},
		{"config get two", cmd("CONFIG", "GET", "save", "appendonly"), "*4\r\n$4\r\nsave\r\n$0\r\n\r\n$10\r\nappendonly\r\n$2\r\nno\r\n"},
		{"config get glob", cmd("CONFIG", "GET", "data*"), "*2\r\n$9\r\ndatabases\r\n$1\r\n1\r\n"},
		{"config get unknown", cmd("CONFIG", "GET", "nope"), "*0\r\n"},
		{"config set", cmd("CONFIG", "SET", "save", ""), "-ERR unknown subcommand 'SET'. Try CONFIG HELP.\r\n"},
		{"config get arity", cmd("CONFIG", "GET"), "-ERR wrong number of arguments for 'config|get' command\r\n"},
		{"select", cmd("SELECT", "0") + cmd("SELECT", "1"), "+OK\r\n-ERR DB index is out of range\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, act := execWire(t, newTestRESP(t, Config{}), tt.in, now)
			if got != tt.want {
				t.Fatalf("in %q\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if act != server.None {
				t.Fatalf("action %v, want none", act)
			}
		})
	}
}

func TestRESPQuit(t *testing.T) {
	got, act := execWire(t, newTestRESP(t, Config{}), cmd("QUIT"), 0)
	if got != "+OK\r\n" || act != server.Close {
		t.Fatalf("QUIT: %q %v, want +OK and close", got, act)
	}
}

func TestRESPExpiryOverTime(t *testing.T) {
	h := newTestRESP(t, Config{})
	steps := []struct {
		at       int64
		in, want string
	}{
		{0, cmd("SET", "p", "v", "PX", "1500"), "+OK\r\n"},
		{0, cmd("SET", "e", "v", "EX", "2"), "+OK\r\n"},
		{0, cmd("SET", "a", "v", "PXAT", "3000"), "+OK\r\n"},
		{1499 * int64(time.Millisecond), cmd("MGET", "p", "e", "a"), "*3\r\n$1\r\nv\r\n$1\r\nv\r\n$1\r\nv\r\n"},
		{1500 * int64(time.Millisecond), cmd("MGET", "p", "e", "a"), "*3\r\n$-1\r\n$1\r\nv\r\n$1\r\nv\r\n"},
		{2 * sec, cmd("EXISTS", "p", "e", "a"), ":1\r\n"},
		{2 * sec, cmd("SET", "a", "w", "KEEPTTL"), "+OK\r\n"},
		{3 * sec, cmd("GET", "a"), "$-1\r\n"},
	}
	for i, s := range steps {
		if got, _ := execWire(t, h, s.in, s.at); got != s.want {
			t.Fatalf("step %d at %d: %q -> %q, want %q", i, s.at, s.in, got, s.want)
		}
	}
}

func TestRESPStoreLimits(t *testing.T) {
	h := newTestRESP(t, Config{MaxKeys: 1, MaxValueBytes: 3})
	in := cmd("SET", "a", "1") + cmd("SET", "b", "1") + cmd("SET", "a", "1234") + cmd("MSET", "a", "1", "b", "2345") + cmd("GET", "a")
	want := "+OK\r\n-OOM command not allowed when used memory > 'maxmemory'.\r\n" +
		"-ERR string exceeds maximum allowed size\r\n-ERR string exceeds maximum allowed size\r\n$1\r\n1\r\n"
	if got, _ := execWire(t, h, in, 0); got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestRESPInfo(t *testing.T) {
	h := newTestRESP(t, Config{})
	out, _ := execWire(t, h, cmd("SET", "k", "v")+cmd("INFO"), 0)
	body := strings.TrimPrefix(out, "+OK\r\n")
	args, err := resp.Parse([]byte(cmd("x")), nil) // sanity of the helper
	if err != nil || len(args) != 1 {
		t.Fatal("cmd helper broken")
	}
	if !strings.HasPrefix(body, "$") {
		t.Fatalf("INFO reply %q is not a bulk string", body)
	}
	for _, want := range []string{"# Server\r\n", "# Keyspace\r\ndb0:keys=1\r\n", "# sluice\r\nengine:none"} {
		if !strings.Contains(body, want) {
			t.Errorf("INFO lacks %q:\n%s", want, body)
		}
	}
	if n := validReplies(t, []byte(body)); n != 1 {
		t.Fatalf("INFO: %d replies, want 1", n)
	}
	out, _ = execWire(t, h, cmd("INFO", "keyspace"), 0)
	if out != "$24\r\n# Keyspace\r\ndb0:keys=1\r\n\r\n" {
		t.Fatalf("INFO keyspace: %q", out)
	}
	out, _ = execWire(t, h, cmd("INFO", "nosuchsection"), 0)
	if out != "$0\r\n\r\n" {
		t.Fatalf("INFO nosuchsection: %q", out)
	}
}

// TestRESPCommandWellFormed checks that COMMAND, COMMAND LIST and COMMAND
// DOCS (what redis-cli reads at start) are single well-formed replies.
func TestRESPCommandWellFormed(t *testing.T) {
	h := newTestRESP(t, Config{})
	for _, in := range []string{cmd("COMMAND"), cmd("COMMAND", "LIST"), cmd("COMMAND", "DOCS"), cmd("COMMAND", "INFO")} {
		out, _ := execWire(t, h, in, 0)
		if n := validReplies(t, []byte(out)); n != 1 {
			t.Fatalf("%q: %d replies in %q", in, n, out)
		}
		if !strings.HasPrefix(out, "*") {
			t.Fatalf("%q: not an array: %q", in, out)
		}
	}
}

// validReplies counts the RESP2 replies in b, failing the test unless b is
// exactly a sequence of well-formed replies.
func validReplies(t testing.TB, b []byte) int {
	t.Helper()
	n := 0
	for len(b) > 0 {
		k, ok := replyLen(b)
		if !ok {
			t.Fatalf("malformed reply at %q", b)
		}
		b = b[k:]
		n++
	}
	return n
}

// replyLen returns the length of the RESP2 reply at the start of b.
func replyLen(b []byte) (int, bool) {
	i := bytes.Index(b, []byte("\r\n"))
	if i < 1 {
		return 0, false
	}
	line := b[1:i]
	switch b[0] {
	case '+', '-':
		if bytes.ContainsAny(line, "\r\n") {
			return 0, false
		}
		return i + 2, true
	case ':':
		_, ok := resp.ParseInt(line)
		return i + 2, ok
	case '$':
		v, ok := resp.ParseInt(line)
		switch {
		case !ok || v < -1:
			return 0, false
		case v == -1:
			return i + 2, true
		}
		end := i + 2 + int(v)
		if end+2 > len(b) || string(b[end:end+2]) != "\r\n" {
			return 0, false
		}
		return end + 2, true
	case '*':
		v, ok := resp.ParseInt(line)
		if !ok || v < -1 {
			return 0, false
		}
		off := i + 2
		for range max(v, 0) {
			k, ok := replyLen(b[off:])
			if !ok {
				return 0, false
			}
			off += k
		}
		return off, true
	}
	return 0, false
}

// TestRESPExecZeroAlloc pins the steady command paths at zero allocations.
func TestRESPExecZeroAlloc(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	h := newTestRESP(t, Config{})
	set := [][]byte{[]byte("SET"), []byte("key:000000000000"), []byte("xxx")}
	get := [][]byte{[]byte("GET"), []byte("key:000000000000")}
	incr := [][]byte{[]byte("incr"), []byte("counter")}
	ping := [][]byte{[]byte("PING")}
	setpx := [][]byte{[]byte("SET"), []byte("key:000000000000"), []byte("xxx"), []byte("PX"), []byte("100000")}
	out := make([]byte, 0, 256)
	for _, args := range [][][]byte{set, incr} {
		out, _ = h.Exec(out[:0], args, 0)
	}
	for _, args := range [][][]byte{set, get, incr, ping, setpx} {
		if n := testing.AllocsPerRun(200, func() { out, _ = h.Exec(out[:0], args, 0) }); n != 0 {
			t.Errorf("%s: %v allocs per run, want 0", args[0], n)
		}
	}
}

func BenchmarkRESPExecGet(b *testing.B) {
	h := newTestRESP(b, Config{})
	out := make([]byte, 0, 256)
	out, _ = h.Exec(out, [][]byte{[]byte("SET"), []byte("key:000000000000"), []byte("xxx")}, 0)
	args := [][]byte{[]byte("GET"), []byte("key:000000000000")}
	b.ReportAllocs()
	for b.Loop() {
		out, _ = h.Exec(out[:0], args, 0)
	}
}

func BenchmarkRESPExecSet(b *testing.B) {
	h := newTestRESP(b, Config{})
	out := make([]byte, 0, 256)
	args := [][]byte{[]byte("SET"), []byte("key:000000000000"), []byte("xxx")}
	b.ReportAllocs()
	for b.Loop() {
		out, _ = h.Exec(out[:0], args, 0)
	}
}

// BenchmarkRESPPipeline decodes, parses and executes 16 pipelined
// commands (8 SET, 8 GET), as redis-benchmark -P 16 sends them.
func BenchmarkRESPPipeline(b *testing.B) {
	h := newTestRESP(b, Config{})
	var in []byte
	for range 8 {
		in = append(in, cmd("SET", "key:000000000000", "xxx")...)
		in = append(in, cmd("GET", "key:000000000000")...)
	}
	codec := resp.ServerCodec{}
	args := make([][]byte, 0, 8)
	out := make([]byte, 0, 1024)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		out = out[:0]
		buf := in
		for len(buf) > 0 {
			frame, n, _ := codec.Decode(buf)
			buf = buf[n:]
			args, _ = resp.Parse(frame, args[:0])
			out, _ = h.Exec(out, args, 0)
		}
	}
}
