package resp_test

import (
	"bytes"

	"github.com/sluicenet/sluice/internal/fuzzseed"
)

// seedCorpus lists the committed seeds under testdata/fuzz, per target;
// TestSeedCorpus keeps files and table in step.
var seedCorpus = fuzzseed.Corpus{
	"FuzzRESPDecode": {
		{"spec-ping", []any{[]byte("*1\r\n$4\r\nPING\r\n"), uint16(0)}},
		{"spec-echo", []any{[]byte("*2\r\n$4\r\nECHO\r\n$3\r\nhey\r\n"), uint16(0)}},
		{"pipeline-mixed", []any{[]byte("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nva\r\nl\r\nPING\r\n*0\r\nGET key\n*-1\r\n\r\n"), uint16(0)}},
		{"pipeline-small-limits", []any{[]byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n*1\r\n$4\r\nPING\r\n"), uint16(0xffff)}},
		{"redis-benchmark-set", []any{bytes.Repeat([]byte("*3\r\n$3\r\nSET\r\n$16\r\nkey:__rand_int__\r\n$3\r\nxxx\r\n"), 4), uint16(0)}},
		{"empty-bulk", []any{[]byte("*2\r\n$3\r\nGET\r\n$0\r\n\r\n"), uint16(0)}},
		{"binary-bulk", []any{[]byte("*2\r\n$4\r\nECHO\r\n$6\r\na\r\n\x00\xffb\r\n"), uint16(0)}},
		{"inline-quotes", []any{[]byte("SET k \"a\\x41\\n b\" 'it\\'s'\r\n"), uint16(0)}},
		{"inline-unbalanced", []any{[]byte("SET k \"abc\r\n"), uint16(0)}},
		{"inline-quote-midarg", []any{[]byte("ab\"c d\"\n"), uint16(0)}},
		{"inline-too-long", []any{[]byte("PINGPONGPINGPONG"), uint16(0x0101)}},
		{"count-leading-zero", []any{[]byte("*01\r\n"), uint16(0)}},
		{"count-negative", []any{[]byte("*-7\r\n"), uint16(0)}},
		{"count-overflow", []any{[]byte("*99999999999999999999\r\n"), uint16(0)}},
		{"count-too-many", []any{[]byte("*9\r\n$1\r\na\r\n"), uint16(0x0102)}},
		{"bulk-too-large", []any{[]byte("*1\r\n$67108865\r\n"), uint16(0)}},
		{"bulk-small-limit", []any{[]byte("*1\r\n$40\r\n"), uint16(0x0011)}},
		{"bulk-null", []any{[]byte("*1\r\n$-1\r\n"), uint16(0)}},
		{"bulk-bad-crlf", []any{[]byte("*1\r\n$3\r\nabcXY"), uint16(0)}},
		{"expected-dollar", []any{[]byte("*1\r\n:1\r\n"), uint16(0)}},
		{"count-lf-only", []any{[]byte("*1\n$1\r\na\r\n"), uint16(0)}},
		{"command-too-large", []any{[]byte("*3\r\n$3\r\nSET\r\n$10\r\n0123456789\r\n$10\r\n0123456789\r\n"), uint16(0x00f8)}},
	},
	"FuzzRESPRoundTrip": {
		{"set", []any{[]byte("SET key value"), byte(' ')}},
		{"binary", []any{[]byte("ECHO\x00a\r\nb\"'\\\xff"), byte(0)}},
		{"empty", []any{[]byte(""), byte(',')}},
		{"many", []any{[]byte("MSET,a,1,b,2,c,3,,d,\x7f"), byte(',')}},
	},
}
