package client

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol/envelope"
)

// FuzzResponseStream feeds arbitrary bytes to a connection as the server's
// answer to one request (bytes 8..15 of the input are overwritten with the
// request's id, so well-formed frames reach the waiting call). Whatever
// arrives, the call must end with an answer or an error, never hang or
// panic, and an answer must be a response or a reject. The seed corpus is
// in testdata/fuzz/FuzzResponseStream.
func FuzzResponseStream(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		cli, srv := net.Pipe()
		c := newConn(cli, 4096)
		served := make(chan struct{})
		go func() {
			defer close(served)
			defer srv.Close()
			var hdr [4]byte
			if _, err := io.ReadFull(srv, hdr[:]); err != nil {
				return
			}
			body := make([]byte, binary.BigEndian.Uint32(hdr[:]))
			if _, err := io.ReadFull(srv, body); err != nil {
				return
			}
			out := append([]byte(nil), data...)
			if len(out) >= 16 {
				copy(out[8:16], body[4:12])
			}
			_ = srv.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = srv.Write(out)
		}()
		m := envelope.Message{Type: envelope.TypeRequest, RequestID: 42, Method: []byte("GET")}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, _, err := c.roundTrip(ctx, &m)
		if errors.Is(err, ErrTimeout) {
			t.Fatalf("call hung on input %x", data)
		}
		if err == nil && res.typ != envelope.TypeResponse && res.typ != envelope.TypeReject {
			t.Fatalf("answer of type %v", res.typ)
		}
		if err == nil && res.typ == envelope.TypeReject && res.status == envelope.StatusOK {
			t.Fatalf("reject with status ok")
		}
		c.close(ErrClosed)
		<-served
	})
}
