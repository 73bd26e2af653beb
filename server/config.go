package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/sluicenet/sluice/protocol"
)

// AcceptMode says how the loops share the listening address.
type AcceptMode uint8

const (
	// AcceptDefault picks the measured default, AcceptReusePort: with
	// idle loops, EPOLLEXCLUSIVE wakes the first waiting loop every time,
	// so long-lived connections pile onto one loop (64 connections split
	// 63/1 and 64/0 over two loops, against 39/25 and 34/30 with
	// SO_REUSEPORT); connection churn ran at the same rate either way
	// (7.5k-9.7k connections/s, within the machine's noise).
	AcceptDefault AcceptMode = iota
	// AcceptReusePort gives every loop its own listening socket with
	// SO_REUSEPORT; the kernel spreads connections by a hash of the peer.
	AcceptReusePort
	// AcceptExclusive registers one shared listening socket in every loop
	// with EPOLLEXCLUSIVE; an idle loop is woken for each new connection.
	AcceptExclusive
)

// String returns "default", "reuseport" or "exclusive".
func (m AcceptMode) String() string {
	switch m {
	case AcceptDefault:
		return "default"
	case AcceptReusePort:
		return "reuseport"
	case AcceptExclusive:
		return "exclusive"
	}
	return fmt.Sprintf("AcceptMode(%d)", uint8(m))
}

// Defaults for zero Config fields.
const (
	DefaultAddr                 = "127.0.0.1:0"
	DefaultBacklog              = 4096
	DefaultMaxAcceptPerTurn     = 32
	DefaultAcceptRetryDelay     = 100 * time.Millisecond
	DefaultMaxEventsPerWait     = 512
	DefaultReadBufferBytes      = 64 << 10
	DefaultReadBudgetBytes      = 64 << 10
	DefaultMaxInBufferBytes     = protocol.DefaultMaxFrameBytes + 64<<10
	DefaultFlushBudgetBytes     = 256 << 10
	DefaultOutQueueMsgs         = 1024
	DefaultOutQueueBytes        = 256 << 10
	DefaultIdleTimeout          = 2 * time.Minute
	DefaultFrameTimeout         = 30 * time.Second
	DefaultWriteStallTimeout    = 30 * time.Second
	DefaultDrainTimeout         = 5 * time.Second
	DefaultInboxTasks           = 4096
	DefaultMaxInboxTasksPerTurn = 256
	DefaultMaxFramesPerTurn     = 256
)

// Config configures an Engine. The zero value is usable: every zero field
// takes the default documented on it. Budgets are per connection unless they
// say otherwise; each one is a hard limit with a counter in Stats.
type Config struct {
	// Addr is the TCP address to listen on, "host:port". Default
	// "127.0.0.1:0" (loopback, a free port; read it back with Engine.Addr).
	Addr string

	// Loops is the number of event loops, each a goroutine locked to its OS
	// thread while it runs (on epoll it leaves the thread while it sleeps in
	// Go's netpoller: docs/TLS.md#where-a-loop-sleeps). Default
	// runtime.GOMAXPROCS(0).
	Loops int

	// Accept chooses how loops share the listener. Default AcceptDefault.
	Accept AcceptMode

	// Backend chooses how the loops learn that sockets are ready. Default
	// BackendEpoll; BackendIOURing falls back to epoll (and logs why) where
	// the kernel lacks what it needs. Engine.Backend says which one runs.
	Backend Backend

	// Backlog is the listen(2) backlog; the kernel caps it at
	// net.core.somaxconn. Default 4096.
	Backlog int

	// Codec splits input into frames and encodes WriteFrame replies.
	// Default protocol.Raw{} (every read is one frame).
	Codec protocol.Codec

	// MaxConns is the connection budget for the whole engine: when this
	// many connections are open the listen gate closes (the listening fd
	// leaves epoll and the kernel backlog absorbs new connections), and it
	// reopens when the count falls to MaxConnsLow. Zero means no budget
	// beyond RLIMIT_NOFILE, whose EMFILE closes the gate for
	// AcceptRetryDelay. An admission policy derives its connection budget
	// from it (admission.Binding): the policy's gate adds its watermarks
	// and dwell on top of this exact cap.
	MaxConns int

	// MaxConnsLow is the low watermark for MaxConns; the gap prevents the
	// gate from flapping around the budget. Default 9/10 of MaxConns.
	MaxConnsLow int

	// MaxQueuedBytes is the engine-wide budget on queued bytes (unparsed
	// input plus queued output, all connections): at or above it a loop
	// does not read a connection that has output queued (it is not reading
	// what it is sent; its TCP window closes) until that output is gone,
	// while connections that keep up go on being served. Each loop checks
	// its own bytes exactly and the others' as published at their last
	// turn, before every read, so the budget holds to within one read per
	// loop. An admission policy derives its queued-bytes budget from it
	// (it drives the gate and refuses frames with reason "global" at the
	// cap). Zero: none.
	MaxQueuedBytes int

	// SocketSendBufferBytes and SocketRecvBufferBytes set SO_SNDBUF and
	// SO_RCVBUF on the listening socket, which accepted connections
	// inherit (set before listen(2), so the receive window is scaled to
	// it). Zero keeps the kernel's defaults, which autotune per
	// connection up to net.ipv4.tcp_wmem and tcp_rmem (4 MiB and 6–32 MiB
	// on common distributions): the kernel then holds up to that much per
	// connection that the peer has not read or the engine has not read,
	// outside the process and outside MaxQueuedBytes. A value turns
	// autotuning off for that direction; the kernel doubles it for its
	// bookkeeping and caps it at net.core.wmem_max / rmem_max.
	SocketSendBufferBytes int
	SocketRecvBufferBytes int

	// MaxAcceptPerTurn bounds accept4 calls per loop turn, so a connection
	// flood cannot starve established connections. Default 32.
	MaxAcceptPerTurn int

	// AcceptRetryDelay is how long a loop keeps its listener out of epoll
	// after accept4 failed with EMFILE, ENFILE, ENOBUFS or ENOMEM, instead
	// of spinning on a readable listener it cannot serve. Default 100ms.
	AcceptRetryDelay time.Duration

	// MaxEventsPerWait is the size of each loop's fixed epoll_wait event
	// array. Default 512.
	MaxEventsPerWait int

	// ReadBufferBytes is the size of each loop's read buffer; reads of every
	// connection land there first. Default 64 KiB.
	ReadBufferBytes int

	// ReadBudgetBytes bounds the bytes read from one connection per loop
	// turn, so one fast sender cannot starve the others; a connection with
	// data left goes on the ready list and is read again next turn.
	// Default 64 KiB.
	ReadBudgetBytes int

	// MaxInBufferBytes bounds the unparsed input kept for one connection (a
	// frame in progress, or frames held back by backpressure); beyond it the
	// connection closes with ErrFrameTooLarge. It must exceed the codec's
	// largest frame plus its header. Default 1 MiB + 64 KiB.
	MaxInBufferBytes int

	// FlushBudgetBytes bounds the bytes written to one connection per flush
	// (one writev per dirty connection per turn); the rest waits for the
	// next turn on the ready list. Default 256 KiB.
	FlushBudgetBytes int

	// OutQueueMsgs is the out-queue message budget: a write that would
	// queue more messages fails with ErrQueueFull. Reading pauses at half
	// of it and resumes at a quarter. Default 1024.
	OutQueueMsgs int

	// OutQueueBytes is the out-queue byte budget: a write that would queue
	// more bytes fails with ErrQueueFull. Default 256 KiB.
	OutQueueBytes int

	// OutQueueHighBytes is the backpressure high watermark: above it the
	// loop stops reading and decoding the connection (its TCP window
	// closes). Default OutQueueBytes/2, which leaves room for the replies
	// to one read budget of input.
	OutQueueHighBytes int

	// OutQueueLowBytes is the watermark at which reading resumes; the gap
	// prevents pausing and resuming on every flush. Default
	// OutQueueHighBytes/2.
	OutQueueLowBytes int

	// IdleTimeout closes a connection that moved no bytes either way for
	// this long (ErrIdleTimeout). Zero means 2 minutes; negative disables.
	IdleTimeout time.Duration

	// FrameTimeout closes a connection whose started frame did not complete
	// within this long (ErrFrameTimeout). Zero means 30 s; negative
	// disables.
	FrameTimeout time.Duration

	// WriteStallTimeout closes a connection whose queued output made no
	// progress for this long (ErrWriteStall). Zero means 30 s; negative
	// disables.
	WriteStallTimeout time.Duration

	// DrainTimeout bounds a shutdown that Serve starts when its context ends
	// or that a handler starts by returning Shutdown: after it, connections
	// with unflushed output are closed. Default 5 s.
	DrainTimeout time.Duration

	// InboxTasks is the capacity of each loop's inbox, the bounded queue
	// that carries off-loop writes and closes; a full inbox returns
	// ErrInboxFull to the caller. Default 4096.
	InboxTasks int

	// MaxInboxTasksPerTurn bounds the inbox tasks a loop runs per turn, so
	// off-loop writers cannot starve network events. Default 256.
	MaxInboxTasksPerTurn int

	// Admission is the engine's admission seam: an AdmissionPolicy (an
	// admission.Admitter with the engine-side options), or an AdmitFunc
	// (one function asked about every frame). The engine builds an
	// admission stage on each loop from it and calls the stage at the
	// turn's hooks (see Admission). Nil admits everything and builds no
	// stage.
	Admission Admission

	// MaxFramesPerTurn bounds the frames dispatched from one connection per
	// loop turn, so a pipelined burst (a 64 KiB read of 32-byte frames is
	// 2,000 frames) cannot hold a slow handler on one connection for the
	// whole turn; the frames past it stay in the connection's input and it
	// goes on the ready list. Default 256.
	MaxFramesPerTurn int

	// Pool, when its Handler is set, runs frames in a bounded worker pool
	// instead of OnFrame on the loop, for handlers that block. See
	// PoolConfig.
	Pool PoolConfig

	// Logger receives one line per state change (gate closed or opened,
	// EMFILE pauses), never per request. Nil logs nothing.
	Logger *slog.Logger

	// TLS, when set, makes every connection a TLS server connection with
	// this configuration (crypto/tls; it needs Certificates,
	// GetCertificate or GetConfigForClient). The handler sees plaintext
	// frames, and OnOpen only once the handshake is done (Conn.TLS). See
	// docs/TLS.md. Nil: plaintext.
	TLS *tls.Config
	// TLSHandshakeTimeout bounds a TLS handshake from accept: a peer that
	// has not finished by then is closed (HandshakeTimeout). Default 10 s.
	TLSHandshakeTimeout time.Duration
	// MaxHandshakes bounds the TLS handshakes in progress in the engine:
	// at this many the listen gate closes (new connections wait in the
	// kernel's backlog) until 3/4 of it. Default 256.
	MaxHandshakes int
	// HandshakeCPUs bounds the TLS handshakes computing at once, which
	// bounds the CPU a handshake flood takes from established connections
	// (a handshake waiting for its peer holds none). Default GOMAXPROCS/4,
	// at least 1.
	HandshakeCPUs int
	// HandshakeShare bounds the share of the loops' time TLS handshakes
	// take while the loops have established traffic to serve: a
	// handshake's computing that overlaps a loop with work is charged to a
	// budget refilled at this share of wall time per loop, and handshakes
	// wait for it; computing no loop wanted the core for is free
	// (docs/TLS.md#the-loops-share). Default 0.02; 1 turns the bound off.
	HandshakeShare float64
}

// TLS defaults (Config.TLSHandshakeTimeout, MaxHandshakes, HandshakeShare).
const (
	DefaultTLSHandshakeTimeout = 10 * time.Second
	DefaultMaxHandshakes       = 256
	DefaultHandshakeShare      = 0.02
)

// limits of Validate.
const (
	maxLoops = 1024
	// maxSocketBufferBytes bounds SO_SNDBUF/SO_RCVBUF requests (the kernel
	// doubles the value into an int).
	maxSocketBufferBytes = 1 << 30
	minReadBufferSize    = 512
)

// withDefaults returns cfg with every zero field set to its default.
func (cfg Config) withDefaults() Config {
	c := cfg
	setDefault(&c.Addr, DefaultAddr)
	setDefault(&c.Loops, runtime.GOMAXPROCS(0))
	if c.Accept == AcceptDefault {
		c.Accept = AcceptReusePort
	}
	setDefault(&c.Backlog, DefaultBacklog)
	if c.Codec == nil {
		c.Codec = protocol.Raw{}
	}
	if c.MaxConns > 0 && c.MaxConnsLow == 0 {
		c.MaxConnsLow = c.MaxConns * 9 / 10
	}
	setDefault(&c.MaxAcceptPerTurn, DefaultMaxAcceptPerTurn)
	setDefault(&c.AcceptRetryDelay, DefaultAcceptRetryDelay)
	setDefault(&c.MaxEventsPerWait, DefaultMaxEventsPerWait)
	setDefault(&c.ReadBufferBytes, DefaultReadBufferBytes)
	setDefault(&c.ReadBudgetBytes, DefaultReadBudgetBytes)
	setDefault(&c.MaxInBufferBytes, DefaultMaxInBufferBytes)
	setDefault(&c.FlushBudgetBytes, DefaultFlushBudgetBytes)
	setDefault(&c.OutQueueMsgs, DefaultOutQueueMsgs)
	setDefault(&c.OutQueueBytes, DefaultOutQueueBytes)
	setDefault(&c.OutQueueHighBytes, c.OutQueueBytes/2)
	setDefault(&c.OutQueueLowBytes, c.OutQueueHighBytes/2)
	setDefault(&c.IdleTimeout, DefaultIdleTimeout)
	setDefault(&c.FrameTimeout, DefaultFrameTimeout)
	setDefault(&c.WriteStallTimeout, DefaultWriteStallTimeout)
	setDefault(&c.DrainTimeout, DefaultDrainTimeout)
	setDefault(&c.InboxTasks, DefaultInboxTasks)
	setDefault(&c.MaxInboxTasksPerTurn, DefaultMaxInboxTasksPerTurn)
	setDefault(&c.MaxFramesPerTurn, DefaultMaxFramesPerTurn)
	c.Pool = c.Pool.withDefaults()
	if c.TLS != nil {
		setDefault(&c.TLSHandshakeTimeout, DefaultTLSHandshakeTimeout)
		setDefault(&c.MaxHandshakes, DefaultMaxHandshakes)
		setDefault(&c.HandshakeCPUs, max(1, runtime.GOMAXPROCS(0)/4))
		setDefault(&c.HandshakeShare, DefaultHandshakeShare)
	}
	return c
}

func setDefault[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}

// Validate reports whether cfg, with zero fields at their defaults, is
// usable. Errors wrap ErrInvalidConfig and name the field.
func (cfg Config) Validate() error {
	c := cfg.withDefaults()
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("%w: %s = %v: %s", ErrInvalidConfig, field, v, why)
	}
	positive := []struct {
		name string
		v    int
	}{
		{"Loops", c.Loops},
		{"Backlog", c.Backlog},
		{"MaxAcceptPerTurn", c.MaxAcceptPerTurn},
		{"MaxEventsPerWait", c.MaxEventsPerWait},
		{"ReadBufferBytes", c.ReadBufferBytes},
		{"ReadBudgetBytes", c.ReadBudgetBytes},
		{"MaxInBufferBytes", c.MaxInBufferBytes},
		{"FlushBudgetBytes", c.FlushBudgetBytes},
		{"OutQueueMsgs", c.OutQueueMsgs},
		{"OutQueueBytes", c.OutQueueBytes},
		{"OutQueueHighBytes", c.OutQueueHighBytes},
		{"InboxTasks", c.InboxTasks},
		{"MaxInboxTasksPerTurn", c.MaxInboxTasksPerTurn},
		{"MaxFramesPerTurn", c.MaxFramesPerTurn},
	}
	for _, f := range positive {
		if f.v <= 0 {
			return bad(f.name, f.v, "must be positive")
		}
	}
	switch {
	case c.TLSHandshakeTimeout < 0:
		return bad("TLSHandshakeTimeout", c.TLSHandshakeTimeout, "must not be negative")
	case c.MaxHandshakes < 0:
		return bad("MaxHandshakes", c.MaxHandshakes, "must not be negative")
	case c.HandshakeCPUs < 0:
		return bad("HandshakeCPUs", c.HandshakeCPUs, "must not be negative")
	case c.HandshakeShare < 0 || c.HandshakeShare > 1 || c.HandshakeShare != c.HandshakeShare:
		return bad("HandshakeShare", c.HandshakeShare, "must be within 0 and 1")
	case c.TLS != nil && len(c.TLS.Certificates) == 0 && c.TLS.GetCertificate == nil && c.TLS.GetConfigForClient == nil:
		return bad("TLS", "config", "needs Certificates, GetCertificate or GetConfigForClient")
	case c.Accept > AcceptExclusive:
		return bad("Accept", c.Accept, "unknown mode")
	case c.Backend > BackendIOURing:
		return bad("Backend", c.Backend, "unknown backend")
	case c.Loops > maxLoops:
		return bad("Loops", c.Loops, fmt.Sprintf("at most %d", maxLoops))
	case c.MaxConns < 0:
		return bad("MaxConns", c.MaxConns, "must not be negative")
	case c.MaxQueuedBytes < 0:
		return bad("MaxQueuedBytes", c.MaxQueuedBytes, "must not be negative")
	case c.SocketSendBufferBytes < 0 || c.SocketSendBufferBytes > maxSocketBufferBytes:
		return bad("SocketSendBufferBytes", c.SocketSendBufferBytes, fmt.Sprintf("must be in [0, %d]", maxSocketBufferBytes))
	case c.SocketRecvBufferBytes < 0 || c.SocketRecvBufferBytes > maxSocketBufferBytes:
		return bad("SocketRecvBufferBytes", c.SocketRecvBufferBytes, fmt.Sprintf("must be in [0, %d]", maxSocketBufferBytes))
	case c.MaxConns == 0 && c.MaxConnsLow != 0:
		return bad("MaxConnsLow", c.MaxConnsLow, "needs MaxConns")
	case c.MaxConns > 0 && (c.MaxConnsLow < 0 || c.MaxConnsLow >= c.MaxConns):
		return bad("MaxConnsLow", c.MaxConnsLow, "must be in [0, MaxConns)")
	case c.AcceptRetryDelay < 0:
		return bad("AcceptRetryDelay", c.AcceptRetryDelay, "must not be negative")
	case c.DrainTimeout < 0:
		return bad("DrainTimeout", c.DrainTimeout, "must not be negative")
	case c.ReadBufferBytes < minReadBufferSize:
		return bad("ReadBufferBytes", c.ReadBufferBytes, fmt.Sprintf("at least %d", minReadBufferSize))
	case c.OutQueueHighBytes > c.OutQueueBytes:
		return bad("OutQueueHighBytes", c.OutQueueHighBytes, "must not exceed OutQueueBytes")
	case c.OutQueueLowBytes < 0 || c.OutQueueLowBytes >= c.OutQueueHighBytes:
		return bad("OutQueueLowBytes", c.OutQueueLowBytes, "must be in [0, OutQueueHighBytes)")
	}
	if err := validateAdmission(c.Admission); err != nil {
		return err
	}
	return c.Pool.validate()
}

// enabled reports whether a timeout is on (negative disables).
func enabled(d time.Duration) bool { return d > 0 }
