package server

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice/admission"
	"golang.org/x/sys/unix"
)

// CloseCause classifies why a connection closed, for counters and metrics.
type CloseCause uint8

// Close causes, from the sentinel errors.
const (
	CausePeerClosed    CloseCause = iota // ErrPeerClosed
	CauseLocal                           // ErrLocalClose (Close, handler Action Close)
	CauseIdleTimeout                     // ErrIdleTimeout
	CauseFrameTimeout                    // ErrFrameTimeout
	CauseWriteStall                      // ErrWriteStall
	CauseFrameTooLarge                   // ErrFrameTooLarge
	CauseMalformed                       // ErrMalformed
	CauseQueueFull                       // ErrQueueFull
	CauseRejected                        // ErrRejected
	CauseShutdown                        // ErrShutdown
	CauseIOError                         // anything else: ECONNRESET, EPIPE, a handler's own cause
	CauseTLS                             // ErrTLS: a failed handshake (HandshakeError), a bad record, an alert
	CauseHandlerPanic                    // ErrHandlerPanic: code called for the connection panicked (PanicError)
	NumCloseCauses                       // number of causes
)

var causeNames = [NumCloseCauses]string{
	"peer_closed", "local", "idle_timeout", "frame_timeout", "write_stall",
	"frame_too_large", "malformed", "queue_full", "rejected", "shutdown", "io_error", "tls", "handler_panic",
}

// String returns the cause's metric label, e.g. "idle_timeout".
func (c CloseCause) String() string {
	if c < NumCloseCauses {
		return causeNames[c]
	}
	return fmt.Sprintf("CloseCause(%d)", uint8(c))
}

// CauseOf classifies a close cause error.
func CauseOf(err error) CloseCause {
	switch {
	case errors.Is(err, ErrPeerClosed):
		return CausePeerClosed
	case errors.Is(err, ErrLocalClose):
		return CauseLocal
	case errors.Is(err, ErrIdleTimeout):
		return CauseIdleTimeout
	case errors.Is(err, ErrFrameTimeout):
		return CauseFrameTimeout
	case errors.Is(err, ErrWriteStall):
		return CauseWriteStall
	case errors.Is(err, ErrFrameTooLarge):
		return CauseFrameTooLarge
	case errors.Is(err, ErrMalformed):
		return CauseMalformed
	case errors.Is(err, ErrQueueFull):
		return CauseQueueFull
	case errors.Is(err, ErrRejected):
		return CauseRejected
	case errors.Is(err, ErrShutdown):
		return CauseShutdown
	case errors.Is(err, ErrTLS):
		return CauseTLS
	case errors.Is(err, ErrHandlerPanic):
		return CauseHandlerPanic
	}
	return CauseIOError
}

// AcceptErrno is the errno of an accept error (Stats.AcceptErrnos), from
// accept4 or from setting up the accepted connection (setsockopt,
// epoll_ctl). The set is fixed, so it is a bounded metric label:
// AcceptErrnoOther counts the errnos it does not name.
type AcceptErrno uint8

// Accept errnos.
const (
	AcceptECONNABORTED AcceptErrno = iota // the peer reset the connection before accept4 took it
	AcceptEPERM                           // a firewall rule refused it
	AcceptEPROTO                          // protocol error
	AcceptEINVAL                          // invalid argument (setsockopt on a connection already gone)
	AcceptENOSPC                          // epoll_ctl: fs.epoll.max_user_watches reached
	AcceptENOMEM                          // setup ran out of kernel memory
	AcceptErrnoOther                      // any other errno
	NumAcceptErrnos                       // number of accept errnos
)

var acceptErrnos = [NumAcceptErrnos]struct {
	en   errno
	name string
}{
	{unix.ECONNABORTED, "ECONNABORTED"}, {unix.EPERM, "EPERM"}, {unix.EPROTO, "EPROTO"},
	{unix.EINVAL, "EINVAL"}, {unix.ENOSPC, "ENOSPC"}, {unix.ENOMEM, "ENOMEM"}, {0, "other"},
}

// String returns the errno's metric label, e.g. "EPERM", or "other".
func (a AcceptErrno) String() string {
	if a < NumAcceptErrnos {
		return acceptErrnos[a].name
	}
	return fmt.Sprintf("AcceptErrno(%d)", uint8(a))
}

// acceptErrnoOf classifies en.
func acceptErrnoOf(en errno) AcceptErrno {
	for i := range AcceptErrnoOther {
		if acceptErrnos[i].en == en {
			return i
		}
	}
	return AcceptErrnoOther
}

// PauseErrno is the errno that paused a listener (Stats.AcceptPauseErrnos):
// the process or the system ran out of file descriptors or memory.
type PauseErrno uint8

// Pause errnos.
const (
	PauseEMFILE    PauseErrno = iota // RLIMIT_NOFILE reached
	PauseENFILE                      // fs.file-max reached
	PauseENOBUFS                     // no socket buffer memory
	PauseENOMEM                      // no kernel memory
	NumPauseErrnos                   // number of pause errnos
)

var pauseErrnos = [NumPauseErrnos]struct {
	en   errno
	name string
}{{unix.EMFILE, "EMFILE"}, {unix.ENFILE, "ENFILE"}, {unix.ENOBUFS, "ENOBUFS"}, {unix.ENOMEM, "ENOMEM"}}

// String returns the errno's metric label, e.g. "EMFILE".
func (p PauseErrno) String() string {
	if p < NumPauseErrnos {
		return pauseErrnos[p].name
	}
	return fmt.Sprintf("PauseErrno(%d)", uint8(p))
}

// pauseErrnoOf classifies en, one of the errnos that pause a listener.
func pauseErrnoOf(en errno) PauseErrno {
	for i := range NumPauseErrnos {
		if pauseErrnos[i].en == en {
			return i
		}
	}
	return PauseENOMEM
}

// Per-loop counter indices. Each loop counts in plain memory (st) and
// copies to atomics (pub) once per turn and before it sleeps; Stats sums
// the atomics. So the hot path has no atomic and no shared cache line, and a
// snapshot is at most one turn old.
const (
	cTurns = iota
	cBlockingWaits
	cEvents
	cAccepted
	cAcceptErrors
	cAcceptPauses
	cReads
	cBytesIn
	cFrames
	cReadBudgetSpent
	cFlushes
	cBytesOut
	cOutArms
	cFlushBudgetSpent
	cPauses
	cQueueFull
	cRejects
	cSlowReads
	cLazyFlushes
	cInboxTasks
	cStaleEvents
	cStaleTasks
	cTimerFires
	cFramesHeld     // dispatches stopped by MaxFramesPerTurn or the stage's turn time
	cBacklogRejects // connections accepted only to be refused (GateRejecting)
	cEarlySubmits   // io_uring submissions of a turn's sends before its end (submitEarly)
	cRationHolds    // reads held back because they brought only refusals while the loop rationed (stage_ration.go)
	cRationPulls    // held connections read before their hold ended because the loop had nothing else to do (releaseHeld)
	cGoAways        // connections closed with a final refusal (goaway.go)
	cGoAwayConns    // connections refused at accept while their tenant cooled after a final refusal
	// gauges, set at publish (the accept queue's when sampled)
	gConns
	gReadyLen
	gOutBytes
	gInBytes
	gPaused
	gInflight    // frames this loop handed to the worker pool, not yet done
	gAcceptDepth // the listener's accept queue (TCP_INFO), at the last sample
	gAcceptLimit
	gDelayCap                                                   // the derived queueing-delay cap C (ns)
	gServiceNanos                                               // the average handler time per frame the cap derives from (ns)
	gRefuseShare                                                // the last busy window's share of refused frames in the loop's busy time (permille)
	gHeldConns                                                  // connections whose reads the loop holds back (rationed reads)
	cAcceptErrnoBase                                            // AcceptErrors by AcceptErrno
	cPauseErrnoBase  = cAcceptErrnoBase + int(NumAcceptErrnos)  // AcceptPauses by PauseErrno
	cClosedBase      = cPauseErrnoBase + int(NumPauseErrnos)    // Closed by CloseCause
	cRefusedBase     = cClosedBase + int(NumCloseCauses)        // refusals carried out, by admission.Reason
	cRefusedPrioBase = cRefusedBase + int(admission.NumReasons) // policy refusals by admission.Priority
	numCounters      = cRefusedPrioBase + int(admission.NumPriorities)
)

type counters [numCounters]uint64

// refused counts a refusal carried out on the loop by reason.
func (st *counters) refused(r admission.Reason) { st[cRefusedBase+int(r)]++ }

type published [numCounters]atomic.Uint64

// publish copies the loop's counters and gauges to its atomics.
func (l *loop) publish() {
	l.st[gConns] = uint64(l.nconns)
	l.st[gReadyLen] = uint64(l.readyq.n)
	l.st[gOutBytes] = uint64(l.bp.outBytes)
	l.st[gInBytes] = uint64(l.bp.inBytes)
	l.st[gPaused] = uint64(l.bp.nPaused)
	l.st[gInflight] = uint64(l.poolInflight)
	for i := range l.st {
		if l.pub[i].Load() != l.st[i] {
			l.pub[i].Store(l.st[i])
		}
	}
	l.hists.publish()
}

// Stats is a snapshot of an engine's counters, summed over its loops; each
// loop's part is at most one loop turn old.
type Stats struct {
	Loops int // event loops

	ConnsOpen       int64  // connections open now (engine-wide)
	GateOpen        bool   // the listen gate is open
	GateTransitions uint64 // gate open→closed plus closed→open
	InboxFull       uint64 // off-loop calls refused with ErrInboxFull
	// HandlerPanics counts panics recovered from code the engine called
	// (PanicError); each closed its connection (Closed[CauseHandlerPanic])
	// but one in OnClose, which had nothing left to close.
	HandlerPanics uint64

	Accepted          uint64                  // connections accepted
	AcceptErrors      uint64                  // accept4/setup failures other than fd shortage
	AcceptErrnos      [NumAcceptErrnos]uint64 // AcceptErrors by AcceptErrno
	AcceptPauses      uint64                  // listener paused for EMFILE/ENFILE/ENOBUFS/ENOMEM
	AcceptPauseErrnos [NumPauseErrnos]uint64  // AcceptPauses by PauseErrno
	Closed            [NumCloseCauses]uint64  // connections closed, by CloseCause

	Draining       bool          // a shutdown has begun (listeners closing, connections draining)
	GateClosedTime time.Duration // total time the listen gate was closed, the current closure included

	Reads           uint64 // read(2) calls that returned data
	BytesIn         uint64 // bytes read
	Frames          uint64 // frames decoded
	ReadBudgetSpent uint64 // reads stopped by ReadBudgetBytes (connection to the ready list)
	// FrameBudgetSpent counts dispatches stopped by MaxFramesPerTurn, or
	// with derived shedding and classes, by a turn's inline work past L/3 (the rest of
	// the input waits, the connection goes to the ready list).
	FrameBudgetSpent uint64

	Flushes          uint64 // ioflush.Flush calls (writev, usually one each)
	BytesOut         uint64 // bytes written
	OutArms          uint64 // EPOLLOUT armed after a would-block flush (io_uring: a send the socket took only part of)
	FlushBudgetSpent uint64 // flushes stopped by FlushBudgetBytes (to the ready list; io_uring: a send cut at the budget)
	// EarlySubmits counts io_uring submissions of a turn's sends made
	// before the turn ended, in turns of slow handlers (0 on epoll).
	EarlySubmits uint64
	Pauses       uint64 // reading paused by backpressure (high watermark)
	QueueFull    uint64 // writes refused with ErrQueueFull
	Rejects      uint64 // frames refused by admission
	// SlowReads counts reads deferred by RejectFlushDelay because every
	// frame in them would have been refused (AdmissionPolicy); LazyFlushes
	// counts reject-only out-queues it deferred to a later turn.
	SlowReads   uint64
	LazyFlushes uint64

	InboxTasks  uint64 // off-loop tasks run
	StaleEvents uint64 // epoll events for a closed or reused fd, dropped
	StaleTasks  uint64 // inbox tasks for a closed connection, dropped
	TimerFires  uint64 // connection timers that fired

	Turns         uint64 // loop turns
	BlockingWaits uint64 // turns that slept in epoll_wait
	Events        uint64 // epoll events

	ReadyListLen   int64 // connections on ready lists now
	PausedConns    int64 // connections whose reading is paused by backpressure now
	QueuedOutBytes int64 // bytes in out-queues now
	QueuedInBytes  int64 // unparsed input bytes kept now

	// TLS (Config.TLS): handshakes in progress now, completed, of which
	// resumed a session, and failed by HandshakeFailure; the time
	// handshakes waited for their share of the loops (HandshakeShare),
	// summed over handshakes.
	TLSHandshaking       int64
	TLSHandshakes        uint64
	TLSResumed           uint64
	TLSHandshakeFailures [NumHandshakeFailures]uint64
	TLSShareWait         time.Duration

	// Admission is the admission snapshot: refusals by reason, the
	// listener's accept queue, the worker pool and the policy's gate.
	Admission AdmissionStats
}

// Stats returns a snapshot of the engine's counters. It is safe from any
// goroutine; the only lock it takes is the one a loop takes at a gate
// transition (GateClosedTime), never per turn or per message.
func (e *Engine) Stats() Stats {
	s := Stats{
		Loops:           len(e.loops),
		ConnsOpen:       e.open.Load(),
		GateOpen:        e.gate.Load() == 0,
		GateTransitions: e.gateTransitions.Load(),
		InboxFull:       e.inboxFull.Load(),
		HandlerPanics:   e.panics.n.Load(),
		Draining:        e.draining.Load(),
		GateClosedTime:  e.gateClosedTime(),
	}
	var sum counters
	for _, l := range e.loops {
		for i := range sum {
			sum[i] += l.pub[i].Load()
		}
	}
	s.Accepted, s.AcceptErrors, s.AcceptPauses = sum[cAccepted], sum[cAcceptErrors], sum[cAcceptPauses]
	for i := range s.Closed {
		s.Closed[i] = sum[cClosedBase+i]
	}
	for i := range s.AcceptErrnos {
		s.AcceptErrnos[i] = sum[cAcceptErrnoBase+i]
	}
	for i := range s.AcceptPauseErrnos {
		s.AcceptPauseErrnos[i] = sum[cPauseErrnoBase+i]
	}
	s.Reads, s.BytesIn, s.Frames, s.ReadBudgetSpent = sum[cReads], sum[cBytesIn], sum[cFrames], sum[cReadBudgetSpent]
	s.Flushes, s.BytesOut, s.OutArms, s.FlushBudgetSpent = sum[cFlushes], sum[cBytesOut], sum[cOutArms], sum[cFlushBudgetSpent]
	s.Pauses, s.QueueFull, s.Rejects = sum[cPauses], sum[cQueueFull]+e.queueFullOff.Load(), sum[cRejects]
	s.SlowReads, s.LazyFlushes = sum[cSlowReads], sum[cLazyFlushes]
	s.InboxTasks, s.StaleEvents, s.StaleTasks, s.TimerFires = sum[cInboxTasks], sum[cStaleEvents], sum[cStaleTasks], sum[cTimerFires]
	s.Turns, s.BlockingWaits, s.Events = sum[cTurns], sum[cBlockingWaits], sum[cEvents]
	s.ReadyListLen = int64(sum[gReadyLen])
	s.PausedConns = int64(sum[gPaused])
	s.QueuedOutBytes = int64(sum[gOutBytes])
	s.QueuedInBytes = int64(sum[gInBytes])
	s.FrameBudgetSpent = sum[cFramesHeld]
	s.EarlySubmits = sum[cEarlySubmits]
	s.Admission = e.admissionStats(&sum, s.QueuedOutBytes+s.QueuedInBytes)
	e.tlsStats(&s)
	return s
}
