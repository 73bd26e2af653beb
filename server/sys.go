package server

import "github.com/sluicenet/sluice/server/internal/netpoll"

// errno is the system call error number the hot path passes around bare
// (netpoll's raw calls return it); it is wrapped where an error leaves the
// engine.
type errno = netpoll.Errno

// sysRead and sysClose are the loop's read(2) and close(2), variables so
// that tests can script reads (the framing fuzz target feeds a stream cut
// at arbitrary points) without a socket, at the cost of an indirect call.
var (
	sysRead  = netpoll.Read
	sysWrite = netpoll.Write // TLS records (tls.go)
	sysClose = netpoll.Close
	// setLingerZero makes the next close of a socket a reset (Conn.Abort).
	setLingerZero = netpoll.SetLingerZero
	// listenHook, if set, runs on a new listening socket before bind; the
	// sluice_rxstamp build (rxstamp_linux.go) turns on receive timestamps
	// there, which accepted sockets inherit.
	listenHook func(fd int) error
)
