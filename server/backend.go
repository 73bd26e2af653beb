package server

import (
	"fmt"

	"github.com/sluicenet/sluice/server/internal/netpoll"
)

// Backend says how an engine's loops learn that their sockets are ready.
// Reads, writes and accepts are the same system calls on every backend;
// handlers, codecs, Conn, admission, metrics and shutdown do not change.
type Backend uint8

const (
	// BackendEpoll is the default: one edge-triggered epoll set per loop.
	BackendEpoll Backend = iota
	// BackendIOURing gives each loop an io_uring instance, created on the
	// loop's locked thread (SINGLE_ISSUER and DEFER_TASKRUN where the
	// kernel has them). Connections are read by completion: a recv per
	// connection takes a buffer from the loop's shared provided buffer
	// ring (1,024 × 4 KiB), armed again only when the connection may read,
	// so budgets and backpressure hold as with epoll and no read(2) is
	// made. The listener, the timer and the wake-up fd, and a connection's
	// wait for room to write, are multishot IORING_OP_POLL_ADDs. Writes
	// and accepts stay the loop's system calls (writev, accept4). Each
	// wait is one io_uring_enter. Where io_uring or a feature it needs is
	// missing, New falls back to BackendEpoll and logs why through
	// Config.Logger.
	BackendIOURing
)

// String returns "epoll" or "io_uring".
func (b Backend) String() string {
	switch b {
	case BackendEpoll:
		return "epoll"
	case BackendIOURing:
		return "io_uring"
	}
	return fmt.Sprintf("Backend(%d)", uint8(b))
}

// ParseBackend returns the Backend that String names ("epoll", "io_uring").
func ParseBackend(s string) (Backend, error) {
	switch s {
	case "epoll", "":
		return BackendEpoll, nil
	case "io_uring", "iouring", "uring":
		return BackendIOURing, nil
	}
	return 0, fmt.Errorf("%w: unknown backend %q (epoll, io_uring)", ErrInvalidConfig, s)
}

// Backend returns the backend the engine's loops run: Config.Backend, or
// BackendEpoll when New fell back because the kernel lacks io_uring or a
// feature the io_uring backend needs.
func (e *Engine) Backend() Backend { return e.backend }

// testBackend, when not zero, replaces Config.Backend in New. Only tests set
// it (SLUICE_TEST_BACKEND, see main_test.go), so the whole suite can run on
// either backend.
var testBackend Backend

// uringCheck reports why the io_uring backend cannot run here, or nil; a
// variable so a test can play a kernel without io_uring.
var uringCheck = netpoll.CheckURing

// chooseBackend settles which backend New's engine runs, logging once why
// io_uring was refused.
func (e *Engine) chooseBackend() {
	want := e.cfg.Backend
	if testBackend != BackendEpoll {
		want = testBackend
	}
	if want != BackendIOURing {
		return
	}
	if err := uringCheck(); err != nil {
		if lg := e.cfg.Logger; lg != nil {
			lg.Warn("sluice: io_uring backend unavailable, using epoll", "err", err.Error())
		}
		return
	}
	e.backend = BackendIOURing
	// TLS reads with read(2) and writes sealed records with write(2): its
	// connections stay on io_uring readiness, not its buffer ring (tls.go)
	e.uringReadiness = e.cfg.TLS != nil
}
