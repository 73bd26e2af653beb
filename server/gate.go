package server

import (
	"math"
	"time"

	"github.com/sluicenet/sluice/server/internal/netpoll"
)

// The listen gate: the listening fd leaves the epoll set of every loop
// while any reason holds the gate closed (MaxConns reached, a shutdown, the
// admission policy's gate), so the kernel backlog, not the heap, absorbs a
// flood; and an EMFILE pause keeps one loop's listener out for
// AcceptRetryDelay. Policy decides through Engine.pauseAccept and
// resumeAccept; this file is the mechanism.

// listener is a loop's listening socket and its part in the gate.
type listener struct {
	fd          int             // listening fd, -1 once released
	shared      bool            // fd is shared by all loops (AcceptExclusive)
	in          bool            // fd is in the epoll set
	ready       bool            // fd was reported readable by this turn's wait
	pausedUntil int64           // EMFILE pause: keep the listener out until then (0: none)
	nextSample  int64           // next accept-queue sample (loop clock)
	info        netpoll.TCPInfo // getsockopt scratch of sampleAcceptQueue
}

// sampleNanos spaces a loop's accept-queue samples (one getsockopt), and
// is how often a loop wakes while the listen gate is closed (or an
// admission signal is hot), so that the gate can reopen after its dwell
// even when no connection has anything to say.
const sampleNanos = int64(10 * time.Millisecond)

// Gate reasons: the listen gate is open only while no reason holds it
// closed. Each is a bit in Engine.gate.
const (
	gateMaxConns   uint32 = 1 << iota // MaxConns reached, until MaxConnsLow
	gateShutdown                      // Shutdown started
	gateAdmission                     // the admission policy's gate is closed or paused
	gateHandshakes                    // Config.MaxHandshakes TLS handshakes in progress, until 3/4 of it
)

// wantListen reports whether this loop's listener should be in epoll.
func (l *loop) wantListen() bool {
	if l.lis.fd < 0 || l.draining || l.lis.pausedUntil != 0 {
		return false
	}
	g := l.e.gate.Load()
	// A policy gate in GateRejecting keeps accepting (to reject) even at
	// MaxConns: refusing explicitly is the point of that state.
	return g == 0 || l.e.rejecting.Load() && g&^(gateMaxConns|gateAdmission) == 0
}

// setListening adds the listener to epoll or takes it out (the gate
// mechanism; policy decides through Engine.pauseAccept/resumeAccept); under
// io_uring add arms the listener's multishot accept and del cancels it.
// EPOLLEXCLUSIVE can only be given with EPOLL_CTL_ADD, hence add/del rather
// than mod.
func (l *loop) setListening(on bool) {
	var err error
	if on {
		ev := netpoll.In
		if l.lis.shared {
			ev |= netpoll.Exclusive
		}
		err = l.p.Add(l.lis.fd, ev, 0)
	} else {
		err = l.p.Del(l.lis.fd)
	}
	if err != nil {
		l.e.fail(err)
		return
	}
	l.lis.in = on
}

// releaseListener takes the listener out for good (shutdown, exit). A shared
// listener is closed by the last loop to let go of it, so no loop can
// accept on an fd number that was closed and reused.
func (l *loop) releaseListener() {
	if l.lis.fd < 0 {
		return
	}
	if l.lis.in {
		l.p.Del(l.lis.fd)
		l.lis.in = false
	}
	if !l.lis.shared || l.e.sharedRefs.Add(-1) == 0 {
		sysClose(l.lis.fd)
	}
	l.lis.fd = -1
}

// pauseAccept closes the listen gate for reason: every loop takes its
// listener out of epoll at its next turn (the kernel backlog absorbs new
// connections meanwhile). Policy (MaxConns now, admission later) decides;
// this is the mechanism.
func (e *Engine) pauseAccept(reason uint32) {
	for {
		old := e.gate.Load()
		if old&reason != 0 {
			return
		}
		if e.gate.CompareAndSwap(old, old|reason) {
			if old == 0 {
				e.gateTransitions.Add(1)
				e.gateTimeSync()
				if lg := e.cfg.Logger; lg != nil {
					lg.Info("sluice: listen gate closed", "reason", gateReasonName(reason), "conns", e.open.Load())
				}
			}
			break
		}
	}
	// MaxConns: connections may have closed below the low watermark between
	// the count and the bit; nobody else would reopen then.
	if reason == gateMaxConns && e.open.Load() <= int64(e.cfg.MaxConnsLow) {
		e.resumeAccept(gateMaxConns)
	}
}

// resumeAccept lifts reason; the gate opens when no reason is left, and
// every loop is woken to put its listener back.
func (e *Engine) resumeAccept(reason uint32) {
	for {
		old := e.gate.Load()
		if old&reason == 0 {
			return
		}
		if e.gate.CompareAndSwap(old, old&^reason) {
			if old&^reason == 0 {
				e.gateTransitions.Add(1)
				e.gateTimeSync()
				if lg := e.cfg.Logger; lg != nil {
					lg.Info("sluice: listen gate opened", "reason", gateReasonName(reason), "conns", e.open.Load())
				}
				e.wakeAll()
			}
			return
		}
	}
}

// gateTimeSync brings the gate's closed-time accounting in line with the
// gate's state after a transition. It reads the state under gateMu, so
// whichever of two racing transitions syncs last applies the final state,
// and the total never counts an open interval.
func (e *Engine) gateTimeSync() {
	e.gateMu.Lock()
	defer e.gateMu.Unlock()
	closed, now := e.gate.Load() != 0, e.clock()
	switch {
	case closed && e.gateClosedAt == 0:
		e.gateClosedAt = max(now, 1)
	case !closed && e.gateClosedAt != 0:
		e.gateClosedSum += max(now-e.gateClosedAt, 0)
		e.gateClosedAt = 0
	}
}

// gateClosedTime returns the total time the gate was closed, the current
// closure included.
func (e *Engine) gateClosedTime() time.Duration {
	e.gateMu.Lock()
	defer e.gateMu.Unlock()
	d := e.gateClosedSum
	if e.gateClosedAt != 0 {
		d += max(e.clock()-e.gateClosedAt, 0)
	}
	return time.Duration(d)
}

func gateReasonName(r uint32) string {
	switch r {
	case gateMaxConns:
		return "max_conns"
	case gateShutdown:
		return "shutdown"
	case gateAdmission:
		return "admission"
	case gateHandshakes:
		return "tls_handshakes"
	}
	return "unknown"
}

// sampleAcceptQueue reads this loop's listener's accept queue into the
// gauges Stats and the admission stage read (a shared listener is read by
// loop 0 only). Under io_uring the connections its multishot accept took
// from the kernel's queue and the loop has not opened yet count too (loop
// 0's own, for a shared listener).
func (l *loop) sampleAcceptQueue() {
	if l.lis.fd < 0 || l.lis.shared && l.id != 0 {
		return
	}
	depth, limit, ok := netpoll.ListenQueue(l.lis.fd, &l.lis.info)
	if !ok {
		return
	}
	depth += uint32(l.p.AcceptQueued())
	l.st[gAcceptDepth], l.st[gAcceptLimit] = uint64(depth), uint64(limit)
	l.pub[gAcceptDepth].Store(uint64(depth))
	l.pub[gAcceptLimit].Store(uint64(limit))
}

// gateWakeAt returns when the loop must wake even without events: every
// sampleNanos while the listen gate is closed for a reason other than
// shutdown, so the gate's state is sampled and it can reopen;
// math.MaxInt64 otherwise.
func (lis *listener) wakeAt(e *Engine, now int64, draining bool) int64 {
	if draining || e.gate.Load()&^gateShutdown == 0 {
		return math.MaxInt64
	}
	return max(lis.nextSample, now+1)
}

// worstBacklog returns the fullest accept queue of all loops, as they last
// sampled it (depth and limit), and false when none has a sample.
func (e *Engine) worstBacklog() (depth, limit uint32, ok bool) {
	worst := -1.0
	for _, o := range e.loops {
		d, lim := o.pub[gAcceptDepth].Load(), o.pub[gAcceptLimit].Load()
		if lim == 0 {
			continue
		}
		if r := float64(d) / float64(lim); r > worst {
			worst, depth, limit = r, uint32(d), uint32(lim)
		}
	}
	return depth, limit, worst >= 0
}
