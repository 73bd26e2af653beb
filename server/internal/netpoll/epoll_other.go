//go:build !linux

package netpoll

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
)

// Event bits: placeholders so the engine compiles; Supported is false here
// and the engine refuses to start.
const (
	In Events = 1 << iota
	Out
	RdHup
	Hup
	Err
	Edge
	Exclusive
)

// errUnsupported is every poller method's error outside Linux.
var errUnsupported = fmt.Errorf("sluice: no poller backend on %s: %w", runtime.GOOS, errors.ErrUnsupported)

// Epoll has no backend outside Linux; every method fails.
type Epoll struct{}

func (p *Epoll) Open(maxEvents int) error                    { return errUnsupported }
func (p *Epoll) Attach() error                               { return errUnsupported }
func (p *Epoll) Add(fd int, ev Events, tag uint32) error     { return errUnsupported }
func (p *Epoll) Mod(fd int, ev Events, tag uint32) error     { return errUnsupported }
func (p *Epoll) Del(fd int) error                            { return errUnsupported }
func (p *Epoll) Forget(fd int)                               {}
func (p *Epoll) Wait(block bool) (int, error)                { return 0, errUnsupported }
func (p *Epoll) Park() (int, error)                          { return 0, errUnsupported }
func (p *Epoll) Event(i int) (fd int, tag uint32, ev Events) { return -1, 0, 0 }
func (p *Epoll) Pending() bool                               { return false }
func (p *Epoll) Wake() error                                 { return errUnsupported }
func (p *Epoll) ArmTimer(afterNanos int64) error             { return errUnsupported }
func (p *Epoll) SubmitNow() error                            { return nil }
func (p *Epoll) Accept(lfd int) (int, netip.AddrPort, Errno) { return Accept(lfd) }
func (p *Epoll) AcceptQueued() int                           { return 0 }
func (p *Epoll) Close()                                      {}
