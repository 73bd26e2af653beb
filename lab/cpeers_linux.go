//go:build linux

package lab

import (
	"fmt"
	"net"
	"strconv"
	"time"
)

// cPeerPollInterval is how often startCPeer tries to connect while the C
// server starts (it prints no "listening on" line).
const cPeerPollInterval = 10 * time.Millisecond

// startCPeer starts the C floor server bin on a free loopback port, pinned to
// cpus, and waits up to timeout until it accepts a connection. The port is
// found by binding port 0 and closing it; a server that loses the port to
// another process in between exits, and startCPeer tries another port.
func startCPeer(bin string, cpus []int, timeout time.Duration) (*serverProc, error) {
	const attempts = 3
	var lastErr error
	for range attempts {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		p, err := startCPeerOn(bin, port, cpus, timeout)
		if err == nil {
			return p, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// startCPeerOn is one attempt of startCPeer on port.
func startCPeerOn(bin string, port int, cpus []int, timeout time.Duration) (*serverProc, error) {
	c, _, err := NewChild(bin, []string{strconv.Itoa(port)}, nil, 0)
	if err != nil {
		return nil, err
	}
	c.TermIsClean = true // the C servers have no SIGTERM handler
	if err := c.Start(cpus); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrServerStart, bin, err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-c.Done:
			return nil, fmt.Errorf("%w: %s exited (%v) before listening on %s: %s", ErrServerStart, bin, c.Err, addr, c.Output.String())
		default:
		}
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = conn.Close()
			break
		}
		if time.Now().After(deadline) {
			c.Kill()
			return nil, fmt.Errorf("%w: %s did not accept on %s within %v: %v", ErrServerStart, bin, addr, timeout, err)
		}
		time.Sleep(cPeerPollInterval)
	}
	c.Addr = addr
	return checkPinned(&serverProc{Child: c}, bin, cpus)
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
