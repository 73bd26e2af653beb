//go:build linux

package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
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
		pc, err := ReadProcCounters(p.Pid)
		if err != nil {
			return -1
		}
		return pc.RSSKiB
	}
	sleepCtx(ctx, c.cfg.IdleSettle)
	res.BaseRSSKiB = rss()
	baseFds := countFds(p.Pid)

	sa, family, err := resolveSockaddr(p.Addr)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	fds, fail, err := dialAll(ctx, sa, family, c.cfg.IdleConns, DefaultConnectTimeout)
	defer closeAll(fds)
	res.Conns = len(fds)
	if err != nil || len(fds) == 0 {
		res.Error = fmt.Sprintf("connected %d of %d: %v %v", len(fds), c.cfg.IdleConns, err, fail.firstErr)
		return res
	}
	// Wait until the server holds every connection (its fd count), then
	// settle.
	deadline := time.Now().Add(10 * time.Second)
	for countFds(p.Pid)-baseFds < len(fds) && time.Now().Before(deadline) && ctx.Err() == nil {
		sleepCtx(ctx, 50*time.Millisecond)
	}
	sleepCtx(ctx, c.cfg.IdleSettle)
	res.IdleRSSKiB = rss()
	if err := echoOnce(fds, c.cfg.Codec, 10*time.Second); err != nil {
		res.Error = "one echo per connection: " + err.Error()
	}
	sleepCtx(ctx, c.cfg.IdleSettle)
	res.EchoedRSSKiB = rss()
	res.IdleKiBPerConn = float64(res.IdleRSSKiB-res.BaseRSSKiB) / float64(len(fds))
	res.EchoedKiBPerConn = float64(res.EchoedRSSKiB-res.BaseRSSKiB) / float64(len(fds))
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

// echoOnce sends one 64-byte request on every fd and waits until each has
// received as many bytes back.
func echoOnce(fds []int, codec Codec, timeout time.Duration) error {
	const size = 64
	req := appendRequest(nil, codec, 0, size, newFiller(size))
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return os.NewSyscallError("epoll_create1", err)
	}
	defer unix.Close(ep)
	left := make(map[int]int, len(fds))
	for _, fd := range fds {
		if _, err := unix.Write(fd, req); err != nil {
			return os.NewSyscallError("write", err)
		}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			return os.NewSyscallError("epoll_ctl", err)
		}
		left[fd] = len(req)
	}
	buf := make([]byte, 4096)
	events := make([]unix.EpollEvent, 256)
	deadline := time.Now().Add(timeout)
	for len(left) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %d connections without their echo", ErrResponseTimeout, len(left))
		}
		n, err := unix.EpollWait(ep, events, 100)
		if err != nil && err != unix.EINTR {
			return os.NewSyscallError("epoll_wait", err)
		}
		for _, ev := range events[:max(n, 0)] {
			fd := int(ev.Fd)
			k, err := unix.Read(fd, buf)
			if err == unix.EAGAIN {
				continue
			}
			if err != nil || k == 0 {
				_ = unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, fd, nil)
				delete(left, fd)
				if err == nil {
					err = errPeerClosed
				}
				return fmt.Errorf("read: %w", err)
			}
			if left[fd] -= k; left[fd] <= 0 {
				_ = unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, fd, nil)
				delete(left, fd)
			}
		}
	}
	return nil
}
