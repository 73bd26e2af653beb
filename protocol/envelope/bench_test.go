package envelope

import (
	"bytes"
	"strconv"
	"testing"
	"time"
)

func benchRequest(payloadBytes int) Message {
	m := Message{Type: TypeRequest, Flags: FlagIdempotent, RequestID: 42, Priority: PriorityNormal,
		Method: []byte("PUT"), Tenant: []byte("tenant-17"), IdempotencyKey: []byte("0190f5a4-7c1e-7b3a-9a51-4f2f3b1c9d20"),
		Payload: bytes.Repeat([]byte("v"), payloadBytes)}
	m.SetTimeout(250 * time.Millisecond)
	return m
}

func BenchmarkDecode(b *testing.B) {
	m := benchRequest(128)
	wire := AppendMessage(nil, &m)
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		if _, n, err := (Codec{}).Decode(wire); err != nil || n != len(wire) {
			b.Fatal(n, err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	for _, size := range []int{16, 1024} {
		m := benchRequest(size)
		wire := AppendMessage(nil, &m)
		b.Run(sizeName(size), func(b *testing.B) {
			var got Message
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				if err := Parse(wire, &got); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAppendMessage(b *testing.B) {
	for _, size := range []int{16, 1024} {
		m := benchRequest(size)
		dst := make([]byte, 0, m.Size())
		b.Run(sizeName(size), func(b *testing.B) {
			b.SetBytes(int64(m.Size()))
			b.ReportAllocs()
			for b.Loop() {
				dst = AppendMessage(dst[:0], &m)
			}
		})
	}
}

func BenchmarkAppendReject(b *testing.B) {
	dst := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendReject(dst[:0], 42, StatusTooManyRequests, 300*time.Millisecond, "tenant quota spent")
	}
}

func BenchmarkAppendResponse(b *testing.B) {
	payload := bytes.Repeat([]byte("r"), 128)
	dst := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendResponse(dst[:0], 42, StatusOK, payload)
	}
}

func sizeName(n int) string {
	return strconv.Itoa(n) + "B"
}
