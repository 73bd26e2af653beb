//go:build !linux

package server

import "net/netip"

const platformSupported = false

// evFail, evData and evSent: placeholders like the bits below.
const (
	evFail = 1 << 27
	evData = 1 << 26
	evSent = 1 << 25
)

// Event bits: placeholders so the loop compiles; New refuses to run here.
const (
	evIn        = 1 << iota
	evOut       = 1 << iota
	evRdHup     = 1 << iota
	evHup       = 1 << iota
	evErr       = 1 << iota
	evEdge      = 1 << iota
	evExclusive = 1 << iota
)

// poller has no backend outside Linux; every method fails with
// ErrUnsupported.
type poller struct{}

func (p *poller) open(maxEvents int) error             { return ErrUnsupported }
func (p *poller) add(fd int, ev, tag uint32) error     { return ErrUnsupported }
func (p *poller) mod(fd int, ev, tag uint32) error     { return ErrUnsupported }
func (p *poller) del(fd int) error                     { return ErrUnsupported }
func (p *poller) wait(block bool) (int, error)         { return 0, ErrUnsupported }
func (p *poller) park() (int, error)                   { return 0, ErrUnsupported }
func (p *poller) event(i int) (fd int, tag, ev uint32) { return -1, 0, 0 }
func (p *poller) wake() error                          { return ErrUnsupported }
func (p *poller) armTimer(afterNanos int64) error      { return ErrUnsupported }
func (p *poller) close()                               {}
func (p *poller) recvMode() bool                       { return false }
func (p *poller) received(i int) ([]byte, int32)       { return nil, 0 }
func (p *poller) recvOn(fd int)                        {}
func (p *poller) recvOff(fd int)                       {}
func (p *poller) submitNow() error                     { return nil }
func (p *poller) use(b Backend)                        {}
func (p *poller) forget(fd int)                        {}
func (p *poller) attach() error                        { return ErrUnsupported }
func uringUsable() (struct{}, error)                   { return struct{}{}, ErrUnsupported }
func sysRead(fd int, b []byte) (int, errno)            { return 0, errnoUnsupported }
func sysClose(fd int)                                  {}
func sysAccept(lfd int) (int, netip.AddrPort, errno)   { return -1, netip.AddrPort{}, errnoUnsupported }
func setNoDelay(fd int) errno                          { return errnoUnsupported }
func sockError(fd int) error                           { return ErrUnsupported }
func listenAt(fd int) netip.AddrPort                   { return netip.AddrPort{} }
func listenTCP(addr string, o listenOpts) (int, netip.AddrPort, error) {
	return -1, netip.AddrPort{}, ErrUnsupported
}

func (p *poller) acceptQueued() int { return 0 }

func (p *poller) accept(lfd int) (int, netip.AddrPort, errno) {
	return -1, netip.AddrPort{}, errnoUnsupported
}
