package netpoll

import (
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/ringq"
)

// Poller is the contract every backend fills: a readiness notifier for one
// event loop, owning an event set, a one-shot timer and a wake-up
// descriptor.
//
// Ownership. A Poller belongs to one goroutine at a time, its owner (the
// loop); ownership may pass only with a happens-before edge (the engine
// opens a poller and adds its listener before it starts the loop's
// goroutine). Every method but Wake is the owner's. Wake may be called
// from any goroutine between Open and Close; callers must stop calling it
// before Close (the engine closes the loop's inbox first).
//
// Tags. Add and Mod take a tag, 32 bits the poller hands back with each of
// the descriptor's events. Tag 0 belongs to the poller's own descriptors
// (the timer, the wake-up) and to the listener; a connection's tag is
// never 0. The engine stores the low bits of the connection's generation
// there, and drops an event whose tag is not the generation of the
// connection now on that descriptor: a descriptor closed and reused may
// still have events from its previous life in the last Wait's batch, and
// under io_uring an event with the interest Mod has just replaced may
// still come (the kernel learns of the change with the next submission).
// No Wait after Del reports an event of the removed registration.
//
// Event bits. In, Out, RdHup, Hup and Err are readiness, as epoll(7) means
// them; Edge and Exclusive are registration flags: Edge asks for
// edge-triggered events (a connection: each new readiness is reported
// once, so the owner reads until a short read or EAGAIN), without it the
// registration is level-triggered (the listener: a backlog the accept
// budget left is reported again); Exclusive is EPOLLEXCLUSIVE, for a
// listener shared by several loops. Fail, Data and Sent are the backend's
// own (see their declarations); an epoll poller never sets them.
type Poller interface {
	// Open creates the event set, the timer and the wake-up descriptor,
	// with room for maxEvents events per Wait. After a failed Open, Close
	// releases what was opened.
	Open(maxEvents int) error
	// Attach runs on the owner's locked OS thread after Open and before
	// the first Wait: per-thread setup (io_uring creates its ring there,
	// single issuer). Epoll has nothing to do.
	Attach() error
	// Add registers fd for ev with tag; registering an fd twice fails.
	Add(fd int, ev Events, tag uint32) error
	// Mod replaces fd's interest and tag.
	Mod(fd int, ev Events, tag uint32) error
	// Del unregisters fd.
	Del(fd int) error
	// Forget is called just before a registered connection fd is closed,
	// without Del: closing takes an fd out of an epoll set, but an
	// io_uring poll holds a reference to the file, which Forget drops.
	Forget(fd int)
	// Wait collects events into the poller's array and returns how many
	// there are (Event reads them). block=false never sleeps and makes no
	// runtime syscall bookkeeping; block=true sleeps until at least one
	// event (deadlines come through the timer). An interrupted wait
	// returns 0 events and no error.
	Wait(block bool) (int, error)
	// Park is Wait(true) that releases the owner's P while it sleeps: the
	// goroutine sleeps in Go's netpoller (a descriptor readable when the
	// poller has events), so another goroutine sharing the P runs at once.
	// Where that cannot be set up it is Wait(true).
	Park() (int, error)
	// Event returns the i-th event of the last Wait (i below its count),
	// valid until the next Wait.
	Event(i int) (fd int, tag uint32, ev Events)
	// Wake makes a sleeping Wait or Park return (and a parked owner
	// runnable at once on the caller's P). Any goroutine; see above.
	Wake() error
	// ArmTimer makes the timer descriptor report In once, afterNanos from
	// now (at least 1 ns), replacing any earlier arming.
	ArmTimer(afterNanos int64) error
	// SubmitNow hands the kernel what was prepared since the last Wait
	// without waiting (io_uring's sends); nothing to do on epoll, whose
	// writes are the owner's own system calls.
	SubmitNow() error
	// Accept returns the next connection of the registered listener lfd,
	// non-blocking and close-on-exec, with its peer: accept4(2), or under
	// io_uring the next fd its multishot accept brought. EAGAIN: none
	// now. The errno is returned bare, not wrapped, so the accept path
	// allocates nothing.
	Accept(lfd int) (fd int, peer netip.AddrPort, en Errno)
	// AcceptQueued returns how many connections Accept would hand over
	// without asking the kernel (io_uring's queue; 0 on epoll).
	AcceptQueued() int
	// Close releases everything Open opened (and, under io_uring,
	// connections accepted and never handed over). It is idempotent.
	Close()
}

// RecvPoller is a Poller that can read and write connections by completion
// (io_uring with its provided buffer ring): when RecvMode reports true, a
// connection registered with Edge and a non-zero tag has its bytes
// delivered with Data events, and the owner makes no read(2); its writes
// go as sends through the poller, completed by Sent events. The methods
// are the owner's.
type RecvPoller interface {
	Poller
	// RecvMode reports whether connections are read by completion. It is
	// settled by Attach and does not change afterwards.
	RecvMode() bool
	// Received returns the bytes and result of event i, which has Data or
	// Sent: a byte count, 0 for end of file (Data), or a negated errno.
	// The bytes are the owner's until the next Wait, which recycles their
	// buffers.
	Received(i int) ([]byte, int32)
	// RecvOn arms fd's next receive once the owner can take more input (a
	// receive that ended on its own, by its cap or an error, stays off
	// until then); RecvOff cancels an armed one: what arrives meanwhile
	// stays in the socket. Completions already posted still come.
	RecvOn(fd int)
	RecvOff(fd int)
	// SendIovecs returns n iovecs for the owner to fill for one Send,
	// valid until the submission that carries it (the kernel copies them
	// there).
	SendIovecs(n int) ([]unix.Iovec, error)
	// Send submits a sendmsg of iovs on fd with the next Wait (or
	// SubmitNow); its completion is a Sent event. One send per fd is in
	// flight at a time.
	Send(fd int, iovs []unix.Iovec) error
	// OrphanSend hands over the out-queue q of fd, about to be closed with
	// a send in flight: the poller keeps q untouched until that send
	// completes, then releases it (ioflush.Drop). False if the send has
	// completed already (its event not yet handled): q is the caller's
	// to release.
	OrphanSend(fd int, q *ringq.Ring[ioflush.Segment]) bool
}

// The backends fill the contract, and so does the Dispatcher the engine
// holds.
var (
	_ Poller     = (*Epoll)(nil)
	_ RecvPoller = (*URing)(nil)
	_ RecvPoller = (*Dispatcher)(nil)
)

// Events is a set of event bits: an interest for Add and Mod, what
// happened for Event.
type Events uint32

// The backend's own event bits, none of them an EPOLL* flag (those end
// at bit 15 for the readiness bits, and the flags are bits 28 and up).
const (
	// Fail is set, with Err and Hup, on an event for a descriptor the
	// backend can no longer watch (an io_uring poll that failed): the
	// owner closes the connection.
	Fail Events = 1 << 27
	// Data marks a receive completion (recv mode): Received has its
	// bytes and result.
	Data Events = 1 << 26
	// Sent marks a send completion (recv mode): Received has its result.
	Sent Events = 1 << 25
	// More is set with Data when the receive left bytes in the socket
	// (IORING_CQE_F_SOCK_NONEMPTY; never on a kernel without it).
	More Events = 1 << 24
)

// Errno is the system call error number the raw calls return: a value
// that a hot path can compare and return without allocating.
type Errno = unix.Errno

// ListenConfig holds a listening socket's options (Listen).
type ListenConfig struct {
	ReusePort      bool // SO_REUSEPORT: one socket per loop
	Backlog        int  // listen(2) backlog
	SndBuf, RcvBuf int  // SO_SNDBUF, SO_RCVBUF (0: the kernel's autotuning)
	// Control, if set, runs on the new socket before bind(2); its error
	// fails Listen.
	Control func(fd int) error
}
