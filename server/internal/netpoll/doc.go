// Package netpoll is the engine's backend: how a loop learns that its
// sockets are ready, and the system calls it makes on them.
//
// It owns:
//
//   - the Poller contract (poller.go) and its two backends: Epoll, one
//     edge-triggered epoll set per loop, and URing, an io_uring instance
//     per loop that can also read and write connections by completion
//     (RecvPoller);
//   - Dispatcher, the concrete poller a loop holds, which hands each call
//     to the backend chosen before Open;
//   - the park: sleeping in Go's netpoller instead of a blocking system
//     call, so a goroutine sharing the loop's P (a pool worker) runs at
//     once, and waking such a sleeper on the waker's P;
//   - the raw socket calls the loop makes (Read, Write, Close, Accept,
//     SetNoDelay, SockError), listening sockets with their options
//     (Listen, LocalAddr), and the listener's accept-queue probe
//     (ListenQueue, TCP_INFO);
//   - what the kernel offers (CheckURing).
//
// It does not own connections, framing, budgets, backpressure, deadlines
// or any policy: those are package server's. The backend knows
// descriptors, interests and 32-bit tags, never what a connection is, and
// decides nothing on a loop's behalf: it reports readiness, completions
// and errno values, and the engine acts on them. A backend keeps a closed
// connection's out-queue only while the kernel may still read it
// (RecvPoller.OrphanSend).
//
// The calls a message passes through (Read, Write, Accept, SetNoDelay)
// return the errno bare (Errno), so they allocate nothing; the engine
// wraps it with os.NewSyscallError where an error leaves it. Poller
// methods, whose failures end a loop or a connection, return errors
// already wrapped. Calls that cannot block are raw system calls, without
// the runtime's syscall bookkeeping.
//
// Outside Linux the package compiles and Supported is false: every poller
// method and raw call fails, and the engine refuses to start.
package netpoll
