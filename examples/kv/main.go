// Command kv is a small Redis-compatible key-value server: RESP2 framing
// (protocol/resp's server codec, which also answers admission refusals in
// RESP) and PING, GET, SET, DEL over a map, so redis-cli and
// redis-benchmark work against it. cmd/kv is the full version (limits,
// expiry, INFO, the envelope protocol, tenant quotas).
//
//	go run ./examples/kv -addr 127.0.0.1:6390
//	redis-cli -p 6390 SET greeting hello
//	redis-benchmark -p 6390 -t ping,set,get -P 16 -q
package main

import (
	"flag"
	"sync"

	"github.com/sluicenet/sluice/examples/demo"
	"github.com/sluicenet/sluice/protocol/resp"
	"github.com/sluicenet/sluice/server"
)

// kv is the store and the handler; the map is shared by the loops.
type kv struct {
	codec resp.ServerCodec
	mu    sync.Mutex
	m     map[string][]byte
}

// conn is a connection's scratch space: argument slices and the reply.
type conn struct {
	args [][]byte
	out  []byte
}

func (s *kv) serve(c *server.Conn, frame []byte) server.Action {
	st := c.Context().(*conn)
	args, err := s.codec.Parse(frame, st.args[:0])
	if err != nil { // not RESP: answer as redis does, then close
		_ = c.Write(resp.AppendProtocolError(st.out[:0], err))
		_ = c.CloseWithError(err)
		return server.None
	}
	if len(args) == 0 {
		return server.None
	}
	st.args, st.out = args[:0], s.exec(st.out[:0], args)
	clear(args) // drop references into the read buffer
	if err := c.Write(st.out); err != nil {
		return server.Close
	}
	return server.None
}

// exec runs one command and appends its reply to dst.
func (s *kv) exec(dst []byte, args [][]byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case resp.EqualFold(args[0], "PING") && len(args) == 1:
		return resp.AppendSimpleString(dst, "PONG")
	case resp.EqualFold(args[0], "GET") && len(args) == 2:
		v, ok := s.m[string(args[1])]
		if !ok {
			return resp.AppendNullBulk(dst)
		}
		return resp.AppendBulk(dst, v)
	case resp.EqualFold(args[0], "SET") && len(args) == 3:
		s.m[string(args[1])] = append([]byte(nil), args[2]...)
		return resp.AppendSimpleString(dst, "OK")
	case resp.EqualFold(args[0], "DEL"):
		n := 0
		for _, k := range args[1:] {
			if _, ok := s.m[string(k)]; ok {
				delete(s.m, string(k))
				n++
			}
		}
		return resp.AppendInt(dst, int64(n))
	}
	return resp.AppendError(dst, "ERR unknown command or wrong number of arguments")
}

func main() {
	addr := flag.String("addr", "127.0.0.1:6390", "listen address (port 0: any free port)")
	flag.Parse()
	s := &kv{m: map[string][]byte{}}
	demo.Serve(server.New(server.Config{Addr: *addr, Codec: s.codec}, server.HandlerFuncs{
		Open:  func(c *server.Conn) server.Action { c.SetContext(&conn{}); return server.None },
		Frame: s.serve,
	}))
}
