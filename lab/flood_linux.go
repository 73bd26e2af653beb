//go:build linux

package lab

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluicenet/sluice/bench"
)

// ConnFlood opens cfg.Conns connections at cfg.RatePerSec, sends one request
// on each and records how it ended: echoed, rejected, closed, timed out or
// refused. Served connections stay open for cfg.Hold (until the end of the
// flood when zero), so that the server counts them against its connection
// budget. It uses package net (one goroutine per connection): the flood's
// cost is in connects, not in messages.
func ConnFlood(ctx context.Context, cfg ConnFloodConfig) (*ConnFloodResult, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	res := &ConnFloodResult{Config: cfg, Records: make([]ConnRecord, cfg.Conns)}
	interval := time.Duration(float64(time.Second) / cfg.RatePerSec)
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var held []net.Conn
	for i := 0; i < cfg.Conns && ctx.Err() == nil; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, rec := floodOne(ctx, &cfg)
			res.Records[i] = rec
			if c == nil {
				return
			}
			if cfg.Hold > 0 {
				select {
				case <-time.After(cfg.Hold):
				case <-ctx.Done():
				}
				_ = c.Close()
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, c := range held {
		_ = c.Close()
	}
	return res, ctx.Err()
}

// floodOne runs one flood connection; it returns the connection when it was
// served and is to be held.
func floodOne(ctx context.Context, cfg *ConnFloodConfig) (net.Conn, ConnRecord) {
	t0 := time.Now()
	rec := ConnRecord{StartUnixNano: t0.UnixNano()}
	d := net.Dialer{Timeout: cfg.Timeout}
	c, err := d.DialContext(ctx, "tcp", cfg.Addr)
	rec.ConnectNanos = int64(time.Since(t0))
	if err != nil {
		rec.AnswerNanos, rec.Outcome = rec.ConnectNanos, failOutcome(err)
		return nil, rec
	}
	_ = c.SetDeadline(t0.Add(cfg.Timeout))
	req := cfg.Codec.AppendRequest(nil, 0, cfg.Size)
	if _, err := c.Write(req); err != nil {
		rec.AnswerNanos, rec.Outcome = int64(time.Since(t0)), failOutcome(err)
		_ = c.Close()
		return nil, rec
	}
	buf := make([]byte, 0, cfg.Codec.WireBytes(cfg.Size)+256)
	for {
		payload, n, err := cfg.Codec.NextResponse(buf)
		if err == nil && n > 0 {
			rec.AnswerNanos = int64(time.Since(t0))
			switch {
			case isReject(cfg.Codec, payload):
				rec.Outcome = OutcomeReject
			case cfg.Codec.CheckResponse(payload, 0, cfg.Size) == nil:
				rec.Outcome = OutcomeServed
				_ = c.SetDeadline(time.Time{})
				return c, rec
			default:
				rec.Outcome = OutcomeClosed
			}
			_ = c.Close()
			return nil, rec
		}
		if len(buf) == cap(buf) {
			rec.AnswerNanos, rec.Outcome = int64(time.Since(t0)), OutcomeClosed
			_ = c.Close()
			return nil, rec
		}
		k, rerr := c.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if rerr != nil && k == 0 {
			rec.AnswerNanos, rec.Outcome = int64(time.Since(t0)), failOutcome(rerr)
			_ = c.Close()
			return nil, rec
		}
	}
}

// failOutcome classifies a connect, write or read failure.
func failOutcome(err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, os.ErrDeadlineExceeded):
		return OutcomeTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return OutcomeRefused
	}
	return OutcomeClosed
}

// PeerFlood runs cfg.Conns peers that write requests as fast as the server
// takes them and never read, for cfg.Duration, and reports what they sent.
// Each peer's receive buffer is set before connecting, so the kernel holds
// little of the server's replies and the server's own queues (or its
// backpressure) decide the rest.
func PeerFlood(ctx context.Context, cfg PeerFloodConfig) (*PeerFloodResult, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, cfg.RcvBufBytes)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for i := 0; i < cfg.Conns; i++ {
		c, err := d.DialContext(ctx, "tcp", cfg.Addr)
		if err != nil {
			return nil, err
		}
		conns = append(conns, c)
	}
	var chunk []byte
	for seq := uint64(0); len(chunk) < 64<<10; seq++ {
		chunk = cfg.Codec.AppendRequest(chunk, seq, cfg.Size)
	}
	res := &PeerFloodResult{Config: cfg, Conns: len(conns)}
	var sent atomic.Int64
	var closed atomic.Int32
	end := time.Now().Add(cfg.Duration)
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off := 0
			for time.Now().Before(end) && ctx.Err() == nil {
				wd := time.Now().Add(100 * time.Millisecond)
				if wd.After(end) {
					wd = end
				}
				_ = c.SetWriteDeadline(wd)
				n, err := c.Write(chunk[off:])
				sent.Add(int64(n))
				off = (off + n) % len(chunk)
				if err != nil {
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() {
						continue
					}
					closed.Add(1)
					return
				}
			}
		}()
	}
	wg.Wait()
	res.SentBytes, res.Closed = sent.Load(), int(closed.Load())
	return res, ctx.Err()
}

// isReject reports whether payload is a sluice reject frame.
func isReject(c bench.Codec, payload []byte) bool {
	_, ok := c.RejectReason(payload)
	return ok
}
