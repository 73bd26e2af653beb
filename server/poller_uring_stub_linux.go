//go:build linux && !(amd64 || arm64 || riscv64 || loong64 || ppc64le)

package server

import (
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/ringq"
)

// uringPoller does not exist where internal/uring does not: uringUsable
// refuses, so New keeps such engines on epoll and no method below runs.
type uringPoller struct{ readyOnly bool }

func (p *uringPoller) open(maxEvents int) error             { return ErrUnsupported }
func (p *uringPoller) attach() error                        { return ErrUnsupported }
func (p *uringPoller) add(fd int, ev, tag uint32) error     { return ErrUnsupported }
func (p *uringPoller) mod(fd int, ev, tag uint32) error     { return ErrUnsupported }
func (p *uringPoller) del(fd int) error                     { return ErrUnsupported }
func (p *uringPoller) wait(block bool) (int, error)         { return 0, ErrUnsupported }
func (p *uringPoller) park() (int, error)                   { return 0, ErrUnsupported }
func (p *uringPoller) event(i int) (fd int, tag, ev uint32) { return -1, 0, 0 }
func (p *uringPoller) wake() error                          { return ErrUnsupported }
func (p *uringPoller) armTimer(afterNanos int64) error      { return ErrUnsupported }
func (p *uringPoller) close()                               {}
func (p *uringPoller) recvMode() bool                       { return false }
func (p *uringPoller) received(i int) ([]byte, int32)       { return nil, 0 }
func (p *uringPoller) recvOn(fd int)                        {}
func (p *uringPoller) recvOff(fd int)                       {}
func (p *uringPoller) submitNow() error                     { return ErrUnsupported }
func (p *uringPoller) acceptQueued() int                    { return 0 }
func (p *uringPoller) accept(lfd int) (int, netip.AddrPort, errno) {
	return -1, netip.AddrPort{}, unix.EOPNOTSUPP
}

func (p *uringPoller) sendIovecs(n int) ([]unix.Iovec, error)                 { return nil, ErrUnsupported }
func (p *uringPoller) send(fd int, iovs []unix.Iovec) error                   { return ErrUnsupported }
func (p *uringPoller) orphanSend(fd int, q *ringq.Ring[ioflush.Segment]) bool { return false }

// evData and evSent: no recv or send completions without the io_uring backend.
const (
	evData = 1 << 26
	evSent = 1 << 25
)

func uringUsable() (struct{}, error) { return struct{}{}, ErrUnsupported }
