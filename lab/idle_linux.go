//go:build linux

package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/sluicenet/sluice/bench"
	"github.com/sluicenet/sluice/internal/procstat"
)

// measureIdle starts a fresh srv, opens cfg.IdleConns connections, and reads
// its resident memory before, with the connections idle, and after one echo
// on each.
func (c *comparison) measureIdle(ctx context.Context, srv string) IdleResult {
	res := IdleResult{Server: srv}
	p, err := c.startServer(srv)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer p.stop(serverStopTimeout)
	rss := func() int64 {
		pc, err := procstat.ReadProcCounters(p.Pid)
		if err != nil {
			return -1
		}
		return pc.RSSKiB
	}
	sleepCtx(ctx, c.cfg.IdleSettle)
	res.BaseRSSKiB = rss()
	baseFds := countFds(p.Pid)

	conns, err := dialConns(ctx, p.Addr, c.cfg.IdleConns, bench.DefaultConnectTimeout)
	defer closeConns(conns)
	res.Conns = len(conns)
	if err != nil || len(conns) == 0 {
		res.Error = fmt.Sprintf("connected %d of %d: %v", len(conns), c.cfg.IdleConns, err)
		return res
	}
	// Wait until the server holds every connection (its fd count), then
	// settle.
	deadline := time.Now().Add(10 * time.Second)
	for countFds(p.Pid)-baseFds < len(conns) && time.Now().Before(deadline) && ctx.Err() == nil {
		sleepCtx(ctx, 50*time.Millisecond)
	}
	sleepCtx(ctx, c.cfg.IdleSettle)
	res.IdleRSSKiB = rss()
	if err := echoOnce(conns, c.cfg.Codec, 10*time.Second); err != nil {
		res.Error = "one echo per connection: " + err.Error()
	}
	sleepCtx(ctx, c.cfg.IdleSettle)
	res.EchoedRSSKiB = rss()
	res.IdleKiBPerConn = float64(res.IdleRSSKiB-res.BaseRSSKiB) / float64(len(conns))
	res.EchoedKiBPerConn = float64(res.EchoedRSSKiB-res.BaseRSSKiB) / float64(len(conns))
	return res
}

// countFds returns how many file descriptors pid has open (-1 if unknown).
func countFds(pid int) int {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// idleDialWindow is how many connection attempts dialConns has in progress
// at once: enough to open thousands of loopback connections in about a
// second, few enough not to overflow a listen backlog (SOMAXCONN is 4096 by
// default).
const idleDialWindow = 256

// dialConns opens n TCP connections to addr, idleDialWindow at a time, each
// bounded by timeout. It returns those that connected and the first error;
// it stops early when ctx ends or a whole window fails with no success (no
// server).
func dialConns(ctx context.Context, addr string, n int, timeout time.Duration) ([]net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	conns := make([]net.Conn, 0, n)
	var firstErr error
	for len(conns) < n && ctx.Err() == nil {
		batch := min(idleDialWindow, n-len(conns))
		got := make([]net.Conn, batch)
		errs := make([]error, batch)
		var wg sync.WaitGroup
		for i := range batch {
			wg.Go(func() { got[i], errs[i] = d.DialContext(ctx, "tcp", addr) })
		}
		wg.Wait()
		ok := 0
		for i, c := range got {
			if errs[i] != nil {
				if firstErr == nil {
					firstErr = errs[i]
				}
				continue
			}
			conns = append(conns, c)
			ok++
		}
		if ok == 0 {
			break
		}
	}
	if len(conns) < n && firstErr == nil {
		firstErr = context.Cause(ctx)
	}
	return conns, firstErr
}

// closeConns closes every connection.
func closeConns(conns []net.Conn) {
	for _, c := range conns {
		_ = c.Close()
	}
}

// echoOnce sends one 64-byte request on every connection and waits until each
// has received as many bytes back, at most idleDialWindow connections at a
// time.
func echoOnce(conns []net.Conn, codec bench.Codec, timeout time.Duration) error {
	const size = 64
	req := codec.AppendRequest(nil, 0, size)
	deadline := time.Now().Add(timeout)
	sem := make(chan struct{}, idleDialWindow)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for _, c := range conns {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := echoOne(c, req, deadline)
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return firstErr
}

// echoOne writes req on c and reads as many bytes back before deadline.
func echoOne(c net.Conn, req []byte, deadline time.Time) error {
	_ = c.SetDeadline(deadline)
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	if _, err := c.Write(req); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if _, err := io.ReadFull(c, make([]byte, len(req))); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("%w: no echo before the deadline", bench.ErrResponseTimeout)
		}
		return fmt.Errorf("read: %w", err)
	}
	return nil
}
