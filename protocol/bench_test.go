package protocol

import (
	"bytes"
	"strconv"
	"testing"
)

func benchDecode(b *testing.B, c Codec, size int) {
	payload := bytes.Repeat([]byte("x"), size)
	wire := c.AppendEncode(nil, payload)
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		frame, n, err := c.Decode(wire)
		if err != nil || n != len(wire) || len(frame) != size {
			b.Fatalf("Decode = %d, %d, %v", len(frame), n, err)
		}
	}
}

func benchEncode(b *testing.B, c Codec, size int) {
	payload := bytes.Repeat([]byte("x"), size)
	dst := make([]byte, 0, size+16)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		dst = c.AppendEncode(dst[:0], payload)
	}
}

var benchCodecs = []struct {
	name string
	c    Codec
}{
	{"raw", Raw{}},
	{"fixed32", LengthPrefixed{Header: Fixed32}},
	{"uvarint", LengthPrefixed{Header: Uvarint}},
	{"line", Delimited{}},
}

func BenchmarkDecode(b *testing.B) {
	for _, bc := range benchCodecs {
		for _, size := range []int{16, 512, 16 << 10} {
			b.Run(bc.name+"/"+sizeName(size), func(b *testing.B) { benchDecode(b, bc.c, size) })
		}
	}
}

func BenchmarkAppendEncode(b *testing.B) {
	for _, bc := range benchCodecs {
		for _, size := range []int{16, 512, 16 << 10} {
			b.Run(bc.name+"/"+sizeName(size), func(b *testing.B) { benchEncode(b, bc.c, size) })
		}
	}
}

func sizeName(n int) string {
	if n >= 1<<10 {
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n) + "B"
}
