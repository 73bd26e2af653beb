package client

import (
	"context"
	"sync/atomic"
	"testing"
)

// BenchmarkCall measures one idempotent call round trip over loopback to the
// in-test server (which allocates too: it is a test server, not sluice).
func BenchmarkCall(b *testing.B) {
	s := newEnvServer(b, echo)
	c, err := New(Config{Addr: s.addr(), Conns: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := &Request{Method: "GET", Payload: []byte("0123456789abcdef"), Idempotent: true}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Do(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallParallel pipelines concurrent calls on two connections.
func BenchmarkCallParallel(b *testing.B) {
	s := newEnvServer(b, echo)
	c, err := New(Config{Addr: s.addr()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var failed atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		req := &Request{Method: "GET", Payload: []byte("0123456789abcdef"), Idempotent: true}
		for pb.Next() {
			if _, err := c.Do(context.Background(), req); err != nil {
				failed.Add(1)
			}
		}
	})
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d calls failed", n)
	}
}
