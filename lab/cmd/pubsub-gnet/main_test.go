package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// TestProtocol runs the broker on two loops and checks examples/pubsub's
// protocol against it: frames split byte by byte and frames coalesced in
// one write, delivery to every subscriber of a topic in order and to no
// other, unsubscribe, and the error replies. Every read has a deadline
// and the broker must stop when its context ends.
func TestProtocol(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	go func() { errc <- serve(ctx, "127.0.0.1:0", 2, func(a string) { ready <- a }) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-errc:
		t.Fatalf("serve: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no listening address")
	}

	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		return c, bufio.NewReader(c)
	}
	send := func(c net.Conn, b []byte) {
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(r *bufio.Reader, want string) {
		t.Helper()
		var h [2]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			t.Fatalf("want %q: %v", want, err)
		}
		f := make([]byte, binary.BigEndian.Uint16(h[:]))
		if _, err := io.ReadFull(r, f); err != nil {
			t.Fatalf("want %q: %v", want, err)
		}
		if string(f) != want {
			t.Fatalf("got %q, want %q", f, want)
		}
	}

	// a subscribe sent one byte at a time: partial frames wait in gnet's buffer
	s1, r1 := dial()
	for _, b := range encode(nil, []byte("Sa")) {
		send(s1, []byte{b})
		time.Sleep(time.Millisecond)
	}
	expect(r1, "+OK")
	s2, r2 := dial()
	send(s2, append(encode(nil, []byte("Sa")), encode(nil, []byte("Sb"))...))
	expect(r2, "+OK")
	expect(r2, "+OK")

	// publishes coalesced in one write, the last one split over two
	p, rp := dial()
	var burst []byte
	for _, m := range []string{"Pa 1", "Pb 2", "Pc 3", "Pa 4"} {
		burst = encode(burst, []byte(m))
	}
	last := encode(nil, []byte("Pa 5"))
	send(p, append(burst, last[:3]...))
	time.Sleep(10 * time.Millisecond)
	send(p, last[3:])
	for _, m := range []string{"Ma 1", "Ma 4", "Ma 5"} {
		expect(r1, m)
	}
	for _, m := range []string{"Ma 1", "Mb 2", "Ma 4", "Ma 5"} {
		expect(r2, m)
	}

	// after an unsubscribe only s2 gets a's messages
	send(s1, encode(nil, []byte("Ua")))
	expect(r1, "+OK")
	send(p, encode(nil, []byte("Pa 6")))
	expect(r2, "Ma 6")

	// the error replies of examples/pubsub
	send(p, encode(nil, []byte("P")))
	expect(rp, "-want an opcode and a topic")
	send(p, encode(nil, []byte("Pnobody")))
	expect(rp, "-want P topic body")
	send(p, encode(nil, []byte("Xa")))
	expect(rp, "-unknown opcode")

	// s1 got nothing after its unsubscribe: the next frame it reads is a
	// reply to a new subscribe
	send(s1, encode(nil, []byte("Sc")))
	expect(r1, "+OK")

	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return after its context ended")
	}
}
