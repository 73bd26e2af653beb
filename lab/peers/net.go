package peers

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/sluicenet/sluice/internal/spin"
	"github.com/sluicenet/sluice/protocol"
)

// netReadBufferBytes is the net server's initial read buffer per connection,
// the size bufio would use; it grows to hold one maximal frame if needed.
const netReadBufferBytes = 4096

// serveNet is the standard library's way: one goroutine per connection, a
// read/write loop, no bufio.
func serveNet(ctx context.Context, cfg Config, codec protocol.Codec, isRaw bool, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	ready(ln.Addr())
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := make(map[net.Conn]struct{})
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-stopped:
		}
		_ = ln.Close()
		mu.Lock()
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
	}()
	defer func() {
		close(stopped)
		wg.Wait()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		mu.Lock()
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			netEcho(c, codec, isRaw, cfg.Work)
			_ = c.Close()
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
	}
}

// netEcho echoes one connection until it fails or closes.
func netEcho(c net.Conn, codec protocol.Codec, isRaw bool, work time.Duration) {
	buf := make([]byte, netReadBufferBytes)
	if isRaw {
		for {
			n, err := c.Read(buf)
			if n > 0 {
				spin.For(work)
				if _, werr := c.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	var out []byte
	filled := 0
	for {
		if filled == len(buf) {
			if len(buf) >= 2*protocol.DefaultMaxFrameBytes {
				return // cannot happen: the codec rejects larger frames
			}
			nb := make([]byte, 2*len(buf))
			copy(nb, buf[:filled])
			buf = nb
		}
		n, err := c.Read(buf[filled:])
		filled += n
		var used int
		var derr error
		out, used, derr = echoFrames(codec, buf[:filled], out[:0], work)
		if len(out) > 0 {
			if _, werr := c.Write(out); werr != nil {
				return
			}
		}
		if derr != nil || err != nil {
			return
		}
		filled = copy(buf, buf[used:filled])
	}
}
