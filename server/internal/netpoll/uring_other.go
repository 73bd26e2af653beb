//go:build !linux || !(amd64 || arm64 || riscv64 || loong64 || ppc64le)

package netpoll

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/ringq"
)

// errNoURing is why the io_uring backend cannot run where
// internal/uring does not exist.
var errNoURing = fmt.Errorf("sluice: no io_uring backend on %s/%s: %w", runtime.GOOS, runtime.GOARCH, errors.ErrUnsupported)

// URing does not exist where internal/uring does not: CheckURing refuses,
// so the engine stays on epoll and no method below runs. readyOnly lets
// the readiness tests, which run on every Linux, configure it.
type URing struct{ readyOnly bool }

func (p *URing) Open(maxEvents int) error                    { return errNoURing }
func (p *URing) Attach() error                               { return errNoURing }
func (p *URing) Add(fd int, ev Events, tag uint32) error     { return errNoURing }
func (p *URing) Mod(fd int, ev Events, tag uint32) error     { return errNoURing }
func (p *URing) Del(fd int) error                            { return errNoURing }
func (p *URing) Forget(fd int)                               {}
func (p *URing) Wait(block bool) (int, error)                { return 0, errNoURing }
func (p *URing) Park() (int, error)                          { return 0, errNoURing }
func (p *URing) Event(i int) (fd int, tag uint32, ev Events) { return -1, 0, 0 }
func (p *URing) Wake() error                                 { return errNoURing }
func (p *URing) ArmTimer(afterNanos int64) error             { return errNoURing }
func (p *URing) SubmitNow() error                            { return errNoURing }
func (p *URing) AcceptQueued() int                           { return 0 }
func (p *URing) Close()                                      {}
func (p *URing) RecvMode() bool                              { return false }
func (p *URing) Received(i int) ([]byte, int32)              { return nil, 0 }
func (p *URing) RecvOn(fd int)                               {}
func (p *URing) RecvOff(fd int)                              {}
func (p *URing) SendIovecs(n int) ([]unix.Iovec, error)      { return nil, errNoURing }
func (p *URing) Send(fd int, iovs []unix.Iovec) error        { return errNoURing }

func (p *URing) Accept(lfd int) (int, netip.AddrPort, Errno) {
	return -1, netip.AddrPort{}, unix.EOPNOTSUPP
}

func (p *URing) OrphanSend(fd int, q *ringq.Ring[ioflush.Segment]) bool { return false }

// CheckURing reports why the io_uring backend cannot run here: always.
func CheckURing() error { return errNoURing }
