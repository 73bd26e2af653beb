package resp_test

import (
	"bytes"
	"testing"

	"github.com/sluicenet/sluice/protocol/resp"
)

// redis-benchmark's SET and GET commands (key and value sizes as its
// defaults: 3-byte values).
var (
	benchSet  = []byte("*3\r\n$3\r\nSET\r\n$16\r\nkey:__rand_int__\r\n$3\r\nxxx\r\n")
	benchGet  = []byte("*2\r\n$3\r\nGET\r\n$16\r\nkey:__rand_int__\r\n")
	benchPing = []byte("PING\r\n")
)

// benchServe decodes every command in in and appends a reply, as an event
// loop would; it returns the reply buffer.
func benchServe(b *testing.B, c resp.Codec, in []byte, args [][]byte, out []byte) ([][]byte, []byte) {
	for len(in) > 0 {
		frame, n, err := c.Decode(in)
		if err != nil || n == 0 {
			b.Fatalf("Decode: %d, %v", n, err)
		}
		args, err = resp.Parse(frame, args[:0])
		if err != nil {
			b.Fatal(err)
		}
		switch {
		case resp.EqualFold(args[0], "SET"):
			out = resp.AppendSimpleString(out, "OK")
		case resp.EqualFold(args[0], "GET"):
			out = resp.AppendBulk(out, args[1])
		default:
			out = resp.AppendSimpleString(out, "PONG")
		}
		in = in[n:]
	}
	return args, out
}

func benchCommands(b *testing.B, in []byte, cmds int) {
	var c resp.Codec
	args := make([][]byte, 0, 8)
	out := make([]byte, 0, 4096)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		args, out = benchServe(b, c, in, args, out[:0])
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*cmds), "ns/cmd")
}

// BenchmarkSET is Decode + Parse + reply for one SET.
func BenchmarkSET(b *testing.B) { benchCommands(b, benchSet, 1) }

// BenchmarkGET is Decode + Parse + reply for one GET.
func BenchmarkGET(b *testing.B) { benchCommands(b, benchGet, 1) }

// BenchmarkPingInline is Decode + Parse + reply for an inline PING.
func BenchmarkPingInline(b *testing.B) { benchCommands(b, benchPing, 1) }

// BenchmarkPipelined16 serves 16 pipelined SET/GET commands per op, like
// redis-benchmark -P 16.
func BenchmarkPipelined16(b *testing.B) {
	in := bytes.Repeat(append(append([]byte(nil), benchSet...), benchGet...), 8)
	benchCommands(b, in, 16)
}

// BenchmarkDecodeCommand is the one-pass alternative to Decode + Parse.
func BenchmarkDecodeCommand(b *testing.B) {
	var c resp.Codec
	args := make([][]byte, 0, 8)
	b.ReportAllocs()
	b.SetBytes(int64(len(benchSet)))
	for i := 0; i < b.N; i++ {
		var n int
		var err error
		args, n, err = c.DecodeCommand(benchSet, args[:0])
		if err != nil || n != len(benchSet) {
			b.Fatal(n, err)
		}
	}
}
