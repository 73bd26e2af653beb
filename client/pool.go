package client

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
)

// pool keeps up to n pipelined connections to one address. get picks the
// live connection with the fewest attempts in flight, and dials into an
// empty (or dead) slot when every live connection is busy.
type pool struct {
	addr    string
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	maxSize int // MaxFrameBytes for the codec
	slots   []slot
	next    atomic.Uint32

	mu     sync.Mutex
	closed bool
	all    sync.WaitGroup // readers of connections handed out
}

// slot holds one connection. lock is a one-token channel so that a caller
// waiting for another caller's dial can give up when its context ends.
type slot struct {
	lock chan struct{}
	c    atomic.Pointer[conn]
}

func newPool(addr string, n, maxFrameBytes int, dial func(context.Context, string, string) (net.Conn, error)) *pool {
	p := &pool{addr: addr, dial: dial, maxSize: maxFrameBytes, slots: make([]slot, n)}
	for i := range p.slots {
		p.slots[i].lock = make(chan struct{}, 1)
	}
	return p
}

// get returns a live connection, dialing one if needed.
func (p *pool) get(ctx context.Context) (*conn, error) {
	start := int(p.next.Add(1))
	var best *conn
	empty := -1
	for i := range p.slots {
		s := &p.slots[(start+i)%len(p.slots)]
		c := s.c.Load()
		if c == nil || !c.usable() {
			if empty < 0 {
				empty = (start + i) % len(p.slots)
			}
			continue
		}
		if best == nil || c.inflight.Load() < best.inflight.Load() {
			best = c
		}
	}
	if best != nil && (best.inflight.Load() == 0 || empty < 0) {
		return best, nil
	}
	if empty < 0 {
		return best, nil
	}
	c, err := p.fill(ctx, &p.slots[empty])
	if err != nil && best != nil {
		return best, nil // a live connection beats a failed dial
	}
	return c, err
}

// fill dials into s unless another caller already has.
func (p *pool) fill(ctx context.Context, s *slot) (*conn, error) {
	select {
	case s.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctxErr(ctx)
	}
	defer func() { <-s.lock }()
	if c := s.c.Load(); c != nil && c.usable() {
		return c, nil
	}
	if p.isClosed() {
		return nil, ErrClosed
	}
	nc, err := p.dial(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	c := newConn(nc, p.maxSize)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.close(ErrClosed)
		return nil, ErrClosed
	}
	// Swapped in under mu, so close either sees this connection or makes
	// the check above fail.
	p.all.Add(1)
	old := s.c.Swap(c)
	p.mu.Unlock()
	go func() { <-c.done; p.all.Done() }()
	if old != nil {
		old.fail(ErrClosed)
	}
	return c, nil
}

func (p *pool) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// close closes every connection, failing their pending calls with
// ErrClosed, and waits for their readers to exit.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	for i := range p.slots {
		if c := p.slots[i].c.Load(); c != nil {
			c.fail(ErrClosed)
		}
	}
	p.all.Wait()
}
