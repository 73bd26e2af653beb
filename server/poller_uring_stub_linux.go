//go:build linux && !(amd64 || arm64 || riscv64 || loong64 || ppc64le)

package server

// uringPoller does not exist where internal/uring does not: uringUsable
// refuses, so New keeps such engines on epoll and no method below runs.
type uringPoller struct{}

func (p *uringPoller) open(maxEvents int) error             { return ErrUnsupported }
func (p *uringPoller) attach() error                        { return ErrUnsupported }
func (p *uringPoller) add(fd int, ev, tag uint32) error     { return ErrUnsupported }
func (p *uringPoller) mod(fd int, ev, tag uint32) error     { return ErrUnsupported }
func (p *uringPoller) del(fd int) error                     { return ErrUnsupported }
func (p *uringPoller) wait(block bool) (int, error)         { return 0, ErrUnsupported }
func (p *uringPoller) event(i int) (fd int, tag, ev uint32) { return -1, 0, 0 }
func (p *uringPoller) wake() error                          { return ErrUnsupported }
func (p *uringPoller) armTimer(afterNanos int64) error      { return ErrUnsupported }
func (p *uringPoller) close()                               {}

func uringUsable() (struct{}, error) { return struct{}{}, ErrUnsupported }
