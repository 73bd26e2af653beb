// Package server is the sluice engine: per-core edge-triggered epoll loops
// that own raw non-blocking sockets, with an explicit budget and an explicit
// behaviour at every boundary.
//
// It owns listening and accepting (SO_REUSEPORT or EPOLLEXCLUSIVE, the
// listen gate), the loops and their turn phases, connections and their
// lifetimes, input buffering and framing through a protocol.Codec, the
// out-queues and their flushing through ioflush, per-connection deadlines,
// the loop inbox for calls from other goroutines, graceful shutdown, the
// per-loop counters behind Engine.Stats, a bounded worker pool for handlers
// that block, and the mechanism that carries out admission decisions:
// refusing a frame with the codec's protocol.Rejecter, taking the listener
// out of epoll, pausing reads, holding refusals back and deferring the
// reads whose frames would all be refused, and the measurements the
// decisions need (a frame's queueing delay, a handler's service time, how
// long a loop slept). It refuses to own policy: how many connections or
// requests are too many, which tenant pays, when a queue stands and how
// long a frame may wait. Package admission answers those (budgets, quotas,
// CoDel, the gate) and its subpackage admission/shed holds the shedding
// law (the derived caps, the overload judgement, fair shares, how long
// refusals are held), which the loops and the worker pool both apply; the
// engine asks through one seam, Config.Admission (an AdmissionPolicy over
// an admission.Admitter, or an AdmitFunc). The readiness backends (epoll,
// io_uring) and the raw system calls live in an internal package behind a
// Go interface. It also refuses to own protocols: codecs and their
// refusals are values from package protocol and its subpackages. It runs
// TLS (Config.TLS) without owning it: crypto/tls, unforked, does every
// cryptographic and protocol step over a net.Conn the engine feeds whole
// records; the engine owns only where the bytes go, the handshakes'
// bounds and their counters (docs/TLS.md). Certificates, their reload and
// trust are the tls.Config's.
//
// The usage sketch is the package example (Example): New with a Config and
// a Handler, then Serve(ctx), which runs until ctx ends and then shuts down
// gracefully.
//
// # Handler shape
//
// A Handler has three callbacks, OnOpen, OnFrame and OnClose, each run on the
// connection's loop, and the first two return an Action (None, Close,
// Shutdown). Frames, not reads: the engine owns buffering and framing, so a
// handler never sees a partial message and never manages a buffer; the frame
// slice aliases the loop's read buffer for the duration of the call, which
// is what lets an echo run without allocating. An Action instead of an error
// keeps control flow out of the error channel: errors are values that
// describe causes (OnClose receives one), actions are instructions. Writes
// are not returned but made through the Conn, because a handler may reply
// zero or many times, to this or another connection, now or later from
// another goroutine. A handler (or codec, or policy function) that panics
// closes only its connection, with a *PanicError as the cause: the engine
// recovers at each call, never around a turn (docs/ARCHITECTURE.md#handler-panics).
//
// # Loops and the turn
//
// Each loop is a goroutine locked to its OS thread while it runs (on epoll
// it leaves the thread while it sleeps in Go's netpoller, loop.park). A
// turn runs the phases
// wait, start, accept, ready, io, inbox, timers, drain, flush, writable,
// control (see loop.run for the order and its reasons). Non-blocking
// syscalls (read, writev, accept4, epoll_ctl, and epoll_wait with timeout
// 0) are raw syscalls that skip the runtime's syscall bookkeeping. Under
// load (the last wait returned several events) the loop blocks in
// epoll_wait only when a zero-timeout poll found nothing, so a saturated
// loop never enters a blocking syscall; a loop that is not under load
// blocks at once, which saves the zero-timeout poll that would find
// nothing.
//
// With Config.Admission set, each loop has an admission stage behind one
// interface, in the shape of Redis's beforeSleep/afterSleep: the turn
// calls it at its start (queueing-delay bounds, loop lag, the Admitter's
// tick and gate, deferred connections that are due), around each read
// (arrival bounds, read charging, deferred reads), for every decoded frame
// (the decision, before the pool or the handler), on the write side
// (held refusals, per-connection budgets) and at its end (the load
// published, when to wake). The stage reads the loop's turn (its clock,
// whether it slept, when the last turn ended) and nothing else of it.
// Without Config.Admission the loop's stage admits everything.
//
// Connections are registered once, EPOLLIN|EPOLLRDHUP|EPOLLET. Reads go to
// the loop's buffer and stop at ReadBudgetBytes per connection per turn (the
// connection then goes on the ready list, because no new edge will come for
// bytes already queued); only an unparsed tail is copied into a buffer of
// the connection's own, so an idle connection holds no input buffer. Replies
// are coalesced into per-loop chunks and flushed once at the end of the turn
// with one budgeted writev per connection: would-block arms EPOLLOUT (one
// EPOLL_CTL_MOD), flushed disarms it, budget-spent goes to the ready list.
// Above OutQueueHighBytes the loop stops reading and decoding the
// connection, so a peer that does not read cannot grow memory past its
// budget or slow its neighbours; reading resumes at OutQueueLowBytes.
//
// # Deadlines
//
// Each loop has one timerfd armed to its earliest deadline and a 4-ary heap
// of timers, one per connection. The data path only stamps progress times
// with the loop's per-turn clock; a connection's timer is re-armed only when
// it fires, to the earliest moment one of its deadlines (idle, frame,
// write stall) could pass. A fire happens at most once per connection per
// shortest timeout, so the heap's exact deadlines cost no more than a
// timing wheel's ticks (BenchmarkTimers compares the two).
//
// # Calls from other goroutines
//
// Conn methods detect whether they run on the connection's loop (the
// running loop's thread is locked, so the runtime's M identifies it; a
// sleeping loop records none) and act directly;
// otherwise they copy into a pooled buffer and go through the loop's
// bounded inbox, tagged with the connection's generation. A full inbox
// returns ErrInboxFull; a stale generation drops the task, so an fd reused
// by a newer connection never receives an older connection's bytes. A
// write from elsewhere books the connection's out-queue budget first, so
// ErrQueueFull reaches its caller at once and the loop never closes a
// connection for it; Conn.Writable with a WritabilityHandler,
// Conn.PauseReads, Conn.Run, Engine.Run and Fanout (one encoded frame to
// many connections, one inbox task per loop) are the rest of what a
// fan-out server needs (docs/FANOUT.md). The
// eventfd wake-up is guarded by a CAS flag: a loop that is awake gets no
// write at all, and a burst while it sleeps costs one.
//
// # Sharing a P with the worker pool
//
// A loop's blocking wait is a system call that keeps its P until sysmon
// takes it back, up to 10 ms later, which is harmless while nothing else
// needs that P. While the worker pool holds a task it does: a worker
// sharing the P would wait that long each time the loop slept. So while
// the pool is busy the loop sleeps in Go's netpoller instead: on a
// duplicate of its epoll fd, or on an eventfd its io_uring signals
// (IORING_REGISTER_EVENTFD, switched on only for that sleep). A wake-up
// from another goroutine makes the parked loop runnable at once on the
// waking goroutine's P, so a worker that yields after a frame hands its
// loop the P to send the reply and read what arrived.
//
// # Backends
//
// Config.Backend chooses how a loop does its I/O. BackendEpoll, the
// default, is one edge-triggered epoll set per loop, with read(2) and
// writev(2). BackendIOURing gives each loop an io_uring instance, set up on
// the loop's locked thread, and moves connections' I/O onto it: a
// connection's bytes arrive with a recv completion, in a buffer of the
// loop's shared provided buffer ring (frames are decoded in place, the
// buffer goes back at the next wait), and its out-queue leaves as a
// sendmsg whose iovecs are the queued segments, submitted with the turn's
// one io_uring_enter, or earlier in a turn of slow handlers
// (Stats.EarlySubmits). Each recv is a multishot capped at
// 4 KiB per arming (a single recv on kernels without the cap), armed again
// only when the connection may read, so read budgets, backpressure,
// MaxQueuedBytes and the admission stage's slow reads stop input as with
// epoll, give or take what the recv under way still brings (below 8 KiB;
// the kernel keeps the rest in the socket); one send per connection is in
// flight, and its segments stay queued until its completion. The listener
// accepts by a multishot IORING_OP_ACCEPT whose fds the loop takes under
// the same accept budget (getpeername(2) gives each one's peer), which the
// listen gate cancels and arms again; the timer and wake-up fds stay on
// polls (multishot IORING_OP_POLL_ADD). Where the
// kernel refuses io_uring or lacks a feature the backend needs, New falls
// back to epoll and logs why; Engine.Backend says which backend runs.
//
// # Accept
//
// AcceptReusePort (one SO_REUSEPORT socket per loop) and AcceptExclusive
// (one socket in every loop's epoll set with EPOLLEXCLUSIVE) are both
// offered; AcceptDefault is AcceptReusePort, which spreads long-lived
// connections over the loops by hash, where EPOLLEXCLUSIVE hands them all
// to the first idle loop (see AcceptDefault). accept4 (io_uring: the
// multishot accept's queue) runs up to MaxAcceptPerTurn per turn; EMFILE,
// ENFILE, ENOBUFS and ENOMEM take the listener out of epoll (io_uring:
// cancel its accept) for AcceptRetryDelay instead of spinning. MaxConns
// closes the gate for every loop and MaxConnsLow reopens it.
//
// # Admission
//
// With an AdmissionPolicy every decoded frame passes the Admitter's order —
// global caps, tenant quota (GCRA), the connection's queue, the idempotency
// claim — then, when the Admitter has a CoDel, CoDel on the frame's
// queueing delay (measured from when its bytes could first have been seen:
// the connection's last draining read, or the previous wait for a fresh
// edge) and MaxQueueDelay. An AdmitFunc is asked instead, when that is the
// Admission. With ChargeReadBytes the tenant quota is charged per read
// instead, before decoding, and a connection over its quota is not read
// until it has room. RejectFlushDelay batches refusals: reject-only output
// waits for the next reply or the delay, and a connection whose unread
// bytes would all be refused is read from a slow list. A refused frame
// never reaches the handler: the codec's protocol.Rejecter (a "-REJECT
// reason ms" frame for the length and line codecs, envelope rejects, RESP
// -ERR/-BUSY, HTTP 429/503 with Retry-After, statuses from
// protocol.RejectStatus) answers it with the reason and a retry-after, the
// refusal is counted by reason, and the connection stays open; a codec
// without one has the connection closed with ErrRejected. Each loop
// publishes its load once per turn and ticks the Admitter (which samples
// at most every 10 ms); the listen gate follows the policy's GatePolicy on
// every loop, EMFILE pauses it, the listeners' accept queues (TCP_INFO)
// feed it, and in GateRejecting new connections are accepted only to be
// answered with a reject. While the gate is closed or a signal is hot, idle
// loops wake every 10 ms so that the gate can reopen after its dwell.
// The engine owns its loop count and its caps (Config.MaxConns,
// MaxQueuedBytes) and hands them to the Admitter when New binds it
// (admission.Binding); times cross the seam as time.Time readings of the
// loops' clock. Config.MaxQueuedBytes holds the engine's queued bytes near
// a global budget by not reading connections that do not read their
// replies. Config.MaxFramesPerTurn keeps one pipelined connection from
// holding a loop for a whole read's worth of frames. Config.Pool runs a
// BlockingHandler on a bounded worker pool with an enqueue deadline, a
// per-request deadline and the frame's idempotency claim in its context
// (FrameClaimFrom), and CoDel with newest-first service; replies come back
// through the loop inbox.
//
// # Stats
//
// Each loop counts in plain memory and publishes to atomics once per turn;
// Engine.Stats sums the atomics without a lock, so the hot path has no
// shared writes and a snapshot is at most one turn old.
package server
