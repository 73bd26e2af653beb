package server

// The poller contract. A backend file (poller_linux.go; poller_other.go
// elsewhere) defines exactly this, and the loop uses nothing else:
//
//	type poller struct{ ... }                         // one per loop, owned by it
//	func (p *poller) open(maxEvents int) error        // event set, timer fd, wake-up fd
//	func (p *poller) add(fd int, ev, tag uint32) error // register fd for ev
//	func (p *poller) mod(fd int, ev, tag uint32) error // change fd's interest
//	func (p *poller) del(fd int) error                 // unregister fd
//	func (p *poller) wait(block bool) (int, error)    // fill the event array; block=false never sleeps
//	func (p *poller) park() (int, error)              // wait(true), releasing the P while it sleeps
//	func (p *poller) event(i int) (fd int, tag, ev uint32) // the i-th event of the last wait
//	func (p *poller) wake() error                     // make a blocked wait return; any goroutine
//	func (p *poller) armTimer(afterNanos int64) error // the timer fd fires once after afterNanos
//	func (p *poller) close()                          // release everything open opened
//	func (p *poller) use(b Backend)                   // before open: which backend to run
//	func (p *poller) attach() error                   // on the loop's locked thread, before the first wait
//	func (p *poller) forget(fd int)                   // fd, still registered, is about to be closed
//	func (p *poller) accept(lfd int) (int, netip.AddrPort, errno) // the next connection of the listener lfd (EAGAIN: none)
//	func (p *poller) acceptQueued() int               // connections accept would hand over without the kernel (io_uring)
//
// and, for io_uring's recv mode (connections read and written by
// completion; no-ops or never called elsewhere):
//
//	func (p *poller) recvMode() bool                  // connections' bytes come with evData events
//	func (p *poller) received(i int) ([]byte, int32)  // event i's bytes and result (evData, evSent)
//	func (p *poller) recvOn(fd int)                   // arm fd's next recv
//	func (p *poller) recvOff(fd int)                  // cancel fd's armed recv
//	func (p *poller) sendIovecs(n int) ([]unix.Iovec, error)  // iovecs for one send (Linux)
//	func (p *poller) send(fd int, iovs []unix.Iovec) error    // a sendmsg; its completion is evSent (Linux)
//	func (p *poller) orphanSend(fd int, q *ringq.Ring[ioflush.Segment]) bool // keep q until fd's send completes (Linux)
//
// poller itself (backend_linux.go) hands each call to the backend use chose:
// epollPoller (poller_linux.go) or uringPoller (poller_uring_linux.go).
// and the event bits evIn, evOut, evRdHup, evHup, evErr, evEdge, evExclusive.
//
// tag is 32 bits the backend hands back with each event: the loop stores the
// low bits of the connection generation there, so an event for an fd that
// was closed and reused is recognised as stale and dropped. The timer and
// wake-up fds are registered with tag 0, which no connection uses.
//
// The socket side of the backend is a handful of functions, each one
// syscall, returning errno rather than error so the hot path allocates
// nothing (wrapping with os.NewSyscallError happens where an error leaves
// the engine):
//
//	func sysRead(fd int, b []byte) (int, errno)
//	func sysClose(fd int)
//	func sysAccept(lfd int) (fd int, peer netip.AddrPort, err errno)
//	func setNoDelay(fd int) errno
//	func sockError(fd int) error
//	func listenTCP(addr string, o listenOpts) (fd int, bound netip.AddrPort, err error)
//	func listenAt(fd int) netip.AddrPort
//
// platformSupported is true only where a backend exists; New returns
// ErrUnsupported elsewhere.

// listenOpts are the listening socket's options (listenTCP).
type listenOpts struct {
	reusePort      bool // SO_REUSEPORT: one socket per loop
	backlog        int  // listen(2) backlog
	sndBuf, rcvBuf int  // SO_SNDBUF, SO_RCVBUF (0: the kernel's autotuning)
}
