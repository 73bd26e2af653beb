//go:build !linux

package ioflush_test

import (
	"errors"
	"testing"

	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/ringq"
)

func TestFlushUnsupported(t *testing.T) {
	var f ioflush.Flusher
	q := ringq.New[ioflush.Segment](2)
	q.Push(ioflush.Segment{Buf: []byte("x")})
	if _, _, err := f.Flush(0, q, 0); !errors.Is(err, ioflush.ErrUnsupported) {
		t.Fatalf("Flush error = %v, want ErrUnsupported", err)
	}
	if q.Len() != 1 {
		t.Fatalf("Flush changed the queue: Len %d", q.Len())
	}
}
