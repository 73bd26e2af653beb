// Command envclient shows the envelope client (package client) against a
// small in-process envelope server: calls with one deadline across their
// attempts, retries of refused requests after the server's retry-after,
// and idempotency keys, with which the server answers a repeated call from
// its record instead of running it twice.
//
// The server keeps a counter. INCR adds one and answers the new value;
// the first attempt of every INCR is refused as if the server were
// overloaded (503 with a retry-after of -retry-after), so each call needs
// a retry, which the client makes by itself. Each INCR's outcome is kept
// by idempotency key: the same key again is answered from the record,
// marked replayed.
//
//	go run ./examples/envclient            # its own server on a free port
//	go run ./examples/envclient -addr 127.0.0.1:7200 -serve=false  # another envelope server
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"strconv"
	"sync"
	"time"

	"github.com/sluicenet/sluice/client"
	"github.com/sluicenet/sluice/examples/demo"
	"github.com/sluicenet/sluice/protocol/envelope"
	"github.com/sluicenet/sluice/server"
)

// counter is the example server: a value, the outcomes of INCRs by
// idempotency key, and the keys whose first attempt it has refused.
type counter struct {
	retryAfter time.Duration
	mu         sync.Mutex
	n          int
	done       map[string][]byte // idempotency key -> the answer it got
	refused    map[string]bool
}

func (s *counter) serve(c *server.Conn, frame []byte) server.Action {
	var m envelope.Message
	if err := envelope.Parse(frame, &m); err != nil || m.Type != envelope.TypeRequest {
		id, _ := envelope.PeekRequestID(frame)
		_ = c.Write(envelope.AppendReject(nil, id, envelope.StatusBadRequest, 0, "not a request"))
		return server.None
	}
	if string(m.Method) != "INCR" {
		_ = c.Write(envelope.AppendResponse(nil, m.RequestID, envelope.StatusBadRequest, []byte("unknown method")))
		return server.None
	}
	key := string(m.IdempotencyKey)
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.done[key]; ok && key != "" { // a call that already ran: its answer again
		reply := envelope.Message{Type: envelope.TypeResponse, Flags: envelope.FlagReplayed, RequestID: m.RequestID, Payload: v}
		out, _ := reply.Append(nil)
		_ = c.Write(out)
		return server.None
	}
	if !s.refused[key] { // the first attempt: refused before anything ran
		s.refused[key] = true
		_ = c.Write(envelope.AppendReject(nil, m.RequestID, envelope.StatusUnavailable, s.retryAfter, "overloaded"))
		return server.None
	}
	s.n++
	v := strconv.AppendInt(nil, int64(s.n), 10)
	s.done[key] = v
	_ = c.Write(envelope.AppendResponse(nil, m.RequestID, envelope.StatusOK, v))
	return server.None
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "the server's address; with -serve, where to listen (port 0: any free port)")
	serve := flag.Bool("serve", true, "run the example server in-process")
	retryAfter := flag.Duration("retry-after", 20*time.Millisecond, "the in-process server's retry-after on refusals")
	flag.Parse()
	target := *addr
	if *serve {
		s := &counter{retryAfter: *retryAfter, done: map[string][]byte{}, refused: map[string]bool{}}
		e, err := server.New(server.Config{Addr: *addr, Codec: envelope.Codec{}}, server.HandlerFuncs{Frame: s.serve})
		if err == nil {
			err = e.Start()
		}
		if err != nil {
			log.Fatal(err)
		}
		defer e.Shutdown(context.Background())
		target = e.Addr().String()
	}
	if err := run(target); err != nil {
		log.Fatal(err)
	}
}

// run makes three calls: two with fresh keys, then the first one's key
// again.
func run(addr string) error {
	c, err := client.New(client.Config{Addr: addr, Tenant: "example", Timeout: 2 * time.Second})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, stop := demo.Context()
	defer stop()
	for _, key := range []string{"call-1", "call-2", "call-1"} {
		resp, err := c.Do(ctx, &client.Request{Method: "INCR", IdempotencyKey: key})
		var se *client.StatusError
		if errors.As(err, &se) {
			return fmt.Errorf("INCR %s: status %v, reason %q", key, se.Status, se.Payload)
		}
		if err != nil {
			return fmt.Errorf("INCR %s: %w", key, err)
		}
		fmt.Printf("INCR key=%s -> %s (attempts %d, replayed %v)\n", key, resp.Payload, resp.Attempts, resp.Replayed)
	}
	return nil
}
