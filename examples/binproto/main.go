// Command binproto is a custom binary protocol on sluice: frames with a
// 2-byte big-endian length prefix (protocol.LengthField), a tiny shared
// get/set store, and per-connection state (the namespace a connection
// selects).
//
// A request is one opcode byte and its argument; a reply is '+' or '-'
// and a payload:
//
//	'N' name        select the namespace for this connection  +OK
//	'S' key=value   set key in the namespace                  +OK
//	'G' key         get key                                   +value, or -missing
//
// For example, "G" "k" on the wire: 00 02 47 6b.
//
//	go run ./examples/binproto -addr 127.0.0.1:7101
package main

import (
	"bytes"
	"flag"
	"sync"

	"github.com/sluicenet/sluice/examples/demo"
	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/server"
)

// store is the key-value map all connections share; loops run in parallel.
type store struct {
	mu sync.Mutex
	m  map[string][]byte
}

// session is one connection's state, kept with Conn.SetContext.
type session struct {
	ns  string // the selected namespace, prefixed to every key
	out []byte // the reply buffer, reused
}

func (s *store) serve(c *server.Conn, frame []byte) server.Action {
	ss := c.Context().(*session)
	if len(frame) == 0 {
		return reply(c, ss, "-", []byte("empty request"))
	}
	switch op, arg := frame[0], frame[1:]; op {
	case 'N':
		ss.ns = string(arg) + ":"
		return reply(c, ss, "+", []byte("OK"))
	case 'S':
		k, v, ok := bytes.Cut(arg, []byte("="))
		if !ok {
			return reply(c, ss, "-", []byte("want key=value"))
		}
		s.mu.Lock()
		s.m[ss.ns+string(k)] = bytes.Clone(v) // frame aliases the read buffer
		s.mu.Unlock()
		return reply(c, ss, "+", []byte("OK"))
	case 'G':
		s.mu.Lock()
		v, ok := s.m[ss.ns+string(arg)]
		s.mu.Unlock()
		if !ok {
			return reply(c, ss, "-", []byte("missing"))
		}
		return reply(c, ss, "+", v)
	}
	return reply(c, ss, "-", []byte("unknown opcode"))
}

// reply sends status and payload as one frame (WriteFrame adds the length).
func reply(c *server.Conn, ss *session, status string, payload []byte) server.Action {
	ss.out = append(append(ss.out[:0], status...), payload...)
	if err := c.WriteFrame(ss.out); err != nil {
		return server.Close
	}
	return server.None
}

func main() {
	addr := flag.String("addr", "127.0.0.1:7101", "listen address (port 0: any free port)")
	flag.Parse()
	s := &store{m: map[string][]byte{}}
	demo.Serve(server.New(server.Config{
		Addr:  *addr,
		Codec: protocol.LengthField{Size: 2, MaxFrameBytes: 4096}, // larger frames are refused from the header
	}, server.HandlerFuncs{
		Open:  func(c *server.Conn) server.Action { c.SetContext(&session{}); return server.None },
		Frame: s.serve,
	}))
}
