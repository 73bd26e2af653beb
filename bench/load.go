package bench

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/sluicenet/sluice/internal/human"
)

// Default values used when a LoadConfig field is zero.
const (
	DefaultResponseTimeout = 5 * time.Second
	DefaultConnectTimeout  = 5 * time.Second
	// DefaultLateTolerance is how far behind its intended time a send may be
	// issued before it counts as late. Latency is measured from the intended
	// time either way; the count says whether the generator kept up.
	DefaultLateTolerance = time.Millisecond
	// DefaultOpenInFlight caps the requests in flight per connection in an open
	// loop when LoadConfig.InFlight is zero.
	DefaultOpenInFlight = 64
)

// SizeSpec is the payload size of each request: fixed (Min == Max) or drawn
// uniformly from [Min, Max] per request.
type SizeSpec struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// draw returns a payload size, uniform in [Min, Max], advancing the
// xorshift64 state rng (never zero).
func (s SizeSpec) draw(rng *uint64) int32 {
	if s.Min == s.Max {
		return int32(s.Min)
	}
	*rng ^= *rng << 13
	*rng ^= *rng >> 7
	*rng ^= *rng << 17
	return int32(s.Min + int(*rng%uint64(s.Max-s.Min+1)))
}

// FixedSize returns a SizeSpec of exactly n bytes.
func FixedSize(n int) SizeSpec { return SizeSpec{Min: n, Max: n} }

// ParseSize parses "64" (fixed) or "64-4096" (uniform). Sizes are bytes,
// optionally with a k/K suffix for KiB ("4k").
func ParseSize(s string) (SizeSpec, error) {
	lo, hi, isRange := strings.Cut(s, "-")
	a, err := parseBytes(lo)
	if err != nil {
		return SizeSpec{}, err
	}
	b := a
	if isRange {
		if b, err = parseBytes(hi); err != nil {
			return SizeSpec{}, err
		}
	}
	sz := SizeSpec{Min: a, Max: b}
	return sz, sz.Validate()
}

func parseBytes(s string) (int, error) {
	mult := 1
	if t, ok := strings.CutSuffix(strings.ToLower(s), "k"); ok {
		s, mult = t, 1024
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%w: size %q", ErrInvalidConfig, s)
	}
	return n * mult, nil
}

// Validate reports a size outside 1..MaxMessageBytes or Min above Max.
func (s SizeSpec) Validate() error {
	if s.Min < 1 || s.Max > MaxMessageBytes || s.Min > s.Max {
		return fmt.Errorf("%w: size %d-%d outside 1-%d", ErrInvalidConfig, s.Min, s.Max, MaxMessageBytes)
	}
	return nil
}

// String returns "64" or "64-4096".
func (s SizeSpec) String() string {
	if s.Min == s.Max {
		return strconv.Itoa(s.Min)
	}
	return strconv.Itoa(s.Min) + "-" + strconv.Itoa(s.Max)
}

// LoadConfig describes one load run. The zero value of every optional field
// selects the documented default.
type LoadConfig struct {
	// Addr is the server's HOST:PORT.
	Addr string `json:"addr"`
	// Codec is the framing: raw (byte accounting), or a length prefix (1, 2,
	// 4 or 8 bytes, either byte order), line, RESP or HTTP (each response
	// matched to its request by order, length, sequence number and content).
	Codec Codec `json:"codec"`
	// Conns is the number of connections.
	Conns int `json:"conns"`
	// LocalAddr, when set, is the source IP address every connection is
	// bound to before it connects (the kernel picks the port). On loopback,
	// 127.0.0.2 and up give a generator its own peer address, which a server
	// that keys tenants by address counts as its own tenant. Empty: the
	// kernel picks the address too.
	LocalAddr string `json:"local_addr,omitempty"`
	// InFlight is, in a closed loop, the requests kept in flight on each
	// connection (a new one is sent as each response arrives; zero: 1); in an
	// open loop, the most requests a connection may have in flight, beyond
	// which a due send is counted as missed (zero: DefaultOpenInFlight).
	InFlight int `json:"in_flight"`
	// Size is the payload size of each request.
	Size SizeSpec `json:"size"`
	// RatePerSec, when positive, makes the run open-loop: requests are sent at
	// this total rate, spread evenly over the connections, whatever the
	// responses do. Zero makes it closed-loop.
	RatePerSec float64 `json:"rate_per_sec,omitempty"`
	// Warmup runs the load without measuring it; Duration is the measured
	// window after it.
	Warmup   time.Duration `json:"warmup_ns"`
	Duration time.Duration `json:"duration_ns"`
	// Workers is the number of event loops (each on its own locked OS thread);
	// zero means runtime.GOMAXPROCS(0).
	Workers int `json:"workers,omitempty"`
	// ResponseTimeout closes a connection whose oldest request has waited this
	// long (zero: DefaultResponseTimeout).
	ResponseTimeout time.Duration `json:"response_timeout_ns,omitempty"`
	// ConnectTimeout bounds each connection attempt, with TLS its
	// handshake included (zero: DefaultConnectTimeout).
	ConnectTimeout time.Duration `json:"connect_timeout_ns,omitempty"`
	// LateTolerance: an open-loop send issued later than this after its
	// intended time counts as late (zero: DefaultLateTolerance).
	LateTolerance time.Duration `json:"late_tolerance_ns,omitempty"`
	// ServerPID, when positive, is the server process whose CPU time, system
	// calls and memory are read at the start and end of the measured window.
	ServerPID int `json:"server_pid,omitempty"`
	// Progress, when non-nil, receives a progress line about once a second.
	Progress io.Writer `json:"-"`
	// Seed seeds the size distribution.
	Seed uint64 `json:"seed,omitempty"`
	// TLS, when set, makes every connection a crypto/tls client connection
	// with a clone of this configuration (ServerName, when empty, is Addr's
	// host), its handshake done within ConnectTimeout. The epoll loops
	// cannot speak TLS, so goroutines drive these connections, one reader
	// and one writer each, with the same closed and open loops, checks,
	// latency and report; the generator then costs more per message than
	// the raw one, and Workers must be zero.
	TLS *tls.Config `json:"-"`
	// Handshakes, with TLS, measures handshakes instead of messages: for the
	// run, each of Conns workers dials, completes a handshake (resumed when
	// TLS has a ClientSessionCache and the server a ticket), sends one
	// request of Size, checks the answer and closes, again and again.
	// InFlight (beyond 1) and RatePerSec do not apply.
	Handshakes bool `json:"handshakes,omitempty"`
	// Reconnect, in a closed loop, dials a connection the server closed
	// with a final refusal (reason "goaway") again once the refusal's
	// retry-after has passed (1 s without one), and keeps InFlight
	// requests on it again, as a client honouring the refusal would: a
	// refusal at accept (the tenant still cooling) closes it again.
	// Without it the connection stays closed. Not with TLS.
	Reconnect bool `json:"reconnect,omitempty"`
}

// OpenLoop reports whether the run is open-loop.
func (c *LoadConfig) OpenLoop() bool { return c.RatePerSec > 0 }

// withDefaults returns c with zero optional fields set.
func (c LoadConfig) withDefaults(gomaxprocs int) LoadConfig {
	if c.InFlight == 0 {
		c.InFlight = 1
		if c.OpenLoop() {
			c.InFlight = DefaultOpenInFlight
		}
	}
	if c.Workers == 0 && c.TLS == nil {
		c.Workers = gomaxprocs
	}
	if c.Workers > c.Conns && c.Conns > 0 {
		c.Workers = c.Conns
	}
	if c.ResponseTimeout == 0 {
		c.ResponseTimeout = DefaultResponseTimeout
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.LateTolerance == 0 {
		c.LateTolerance = DefaultLateTolerance
	}
	return c
}

// Validate reports a configuration that cannot run.
func (c *LoadConfig) Validate() error {
	switch {
	case c.Addr == "":
		return fmt.Errorf("%w: no address", ErrInvalidConfig)
	case c.Conns < 1:
		return fmt.Errorf("%w: %d connections", ErrInvalidConfig, c.Conns)
	case c.InFlight < 0:
		return fmt.Errorf("%w: %d in flight", ErrInvalidConfig, c.InFlight)
	case c.Duration <= 0 || c.Warmup < 0:
		return fmt.Errorf("%w: duration %v, warm-up %v", ErrInvalidConfig, c.Duration, c.Warmup)
	case c.RatePerSec < 0:
		return fmt.Errorf("%w: rate %v", ErrInvalidConfig, c.RatePerSec)
	case c.Workers < 0:
		return fmt.Errorf("%w: %d workers", ErrInvalidConfig, c.Workers)
	case c.Codec >= numCodecs:
		return fmt.Errorf("%w: codec %v", ErrInvalidConfig, c.Codec)
	case c.Size.Max > c.Codec.MaxPayloadBytes():
		return fmt.Errorf("%w: size %v above the %d bytes a %v length field carries", ErrInvalidConfig, c.Size, c.Codec.MaxPayloadBytes(), c.Codec)
	case c.LocalAddr != "" && net.ParseIP(c.LocalAddr) == nil:
		return fmt.Errorf("%w: local address %q is not an IP address", ErrInvalidConfig, c.LocalAddr)
	case c.TLS != nil && c.Workers != 0:
		return fmt.Errorf("%w: %d workers: TLS connections are driven by goroutines, not by event loops", ErrInvalidConfig, c.Workers)
	case c.Handshakes && c.TLS == nil:
		return fmt.Errorf("%w: the handshake mode needs TLS", ErrInvalidConfig)
	case c.Handshakes && c.OpenLoop():
		return fmt.Errorf("%w: the handshake mode is a closed loop of workers; it has no rate", ErrInvalidConfig)
	case c.Handshakes && c.InFlight > 1:
		return fmt.Errorf("%w: %d in flight: a handshake worker sends one request per connection", ErrInvalidConfig, c.InFlight)
	case c.Reconnect && (c.TLS != nil || c.OpenLoop()):
		return fmt.Errorf("%w: reconnecting after a final refusal is for a closed loop without TLS", ErrInvalidConfig)
	}
	return c.Size.Validate()
}

// ErrorKind classifies a connection failure.
type ErrorKind uint8

// The error kinds, as the report names them.
const (
	// ErrRefused: the connection was refused (ECONNREFUSED).
	ErrRefused ErrorKind = iota
	// ErrReset: the connection was reset or broken (ECONNRESET, EPIPE).
	ErrReset
	// ErrTimeout: a connect or a response took longer than its timeout.
	ErrTimeout
	// ErrRejected: the server closed the connection (end of stream) while the
	// run was going on: it rejected or shed the connection.
	ErrRejected
	// ErrMismatched: a response did not match its request (ErrMismatch).
	ErrMismatched
	// ErrOther: anything else.
	ErrOther
	// ErrTLS: a TLS handshake failed: the server's certificate did not
	// verify, the server sent an alert, or it does not speak TLS.
	ErrTLS
	numErrorKinds
)

var errorKindNames = [numErrorKinds]string{"refused", "reset", "timeout", "rejected", "mismatch", "other", "tls"}

// String returns the kind's report name.
func (k ErrorKind) String() string {
	if k < numErrorKinds {
		return errorKindNames[k]
	}
	return "unknown"
}

// errorCounts counts failures by kind.
type errorCounts [numErrorKinds]int64

func (e *errorCounts) total() int64 {
	var n int64
	for _, v := range e {
		n += v
	}
	return n
}

func (e *errorCounts) add(o *errorCounts) {
	for i := range e {
		e[i] += o[i]
	}
}

// asMap returns the non-zero counts by name.
func (e *errorCounts) asMap() map[string]int64 {
	m := make(map[string]int64)
	for i, v := range e {
		if v != 0 {
			m[ErrorKind(i).String()] = v
		}
	}
	return m
}

// LoadResult is what one load run measured. Rates are over the measured
// window, after the warm-up.
type LoadResult struct {
	Config LoadConfig `json:"config"`
	// Mode is "closed", "open" or, with LoadConfig.Handshakes, "handshakes".
	Mode string `json:"mode"`
	// WindowSec is the measured window as the generator timed it.
	WindowSec float64 `json:"window_sec"`
	// Msgs and PayloadBytes count responses completed in the window (payload
	// bytes one way, framing excluded).
	Msgs         int64   `json:"msgs"`
	PayloadBytes int64   `json:"payload_bytes"`
	MsgsPerSec   float64 `json:"msgs_per_sec"`
	// MBPerSec is payload megabytes (10^6) per second, one way.
	MBPerSec float64 `json:"mb_per_sec"`
	// Latency is measured from the intended send time (open loop) or from the
	// moment the request was due (closed loop: when the previous response
	// arrived), to the moment its response was read.
	Latency LatencySummary `json:"latency"`
	// HistogramV2 is the merged latency histogram (nanoseconds), HdrHistogram V2
	// compressed and base64-encoded, for anyone who wants more than the summary.
	HistogramV2 string `json:"histogram_v2,omitempty"`
	// Open loop only: the offered rate, the sends intended in the window, those
	// issued later than LateTolerance after their intended time, and those that
	// could not be issued at all (connection at its in-flight cap or dead).
	OfferedPerSec float64 `json:"offered_per_sec,omitempty"`
	Intended      int64   `json:"intended,omitempty"`
	Late          int64   `json:"late,omitempty"`
	Missed        int64   `json:"missed,omitempty"`
	// SendLag is how late the open-loop sends were issued (the generator's own
	// timing error).
	SendLag *LatencySummary `json:"send_lag,omitempty"`
	// Rejected counts requests the server refused in the window (a
	// "-REJECT reason retry_after_ms" frame, a RESP -BUSY or sluice refusal,
	// an HTTP 429 or 503): answered, but not
	// goodput, so not in Msgs or Latency. Rejects splits them by reason;
	// RejectLatency is their latency, measured like Latency.
	Rejected       int64            `json:"rejected,omitempty"`
	RejectedPerSec float64          `json:"rejected_per_sec,omitempty"`
	Rejects        map[string]int64 `json:"rejects,omitempty"`
	RejectLatency  *LatencySummary  `json:"reject_latency,omitempty"`
	// RejectHistogramV2 is the rejects' latency histogram, encoded as
	// HistogramV2 (EncodeHistogram), when there were rejects: the results
	// of several generators merge into one RejectLatency with it.
	RejectHistogramV2 string `json:"reject_histogram_v2,omitempty"`
	// Unfinished counts requests still in flight when the window closed; Dropped
	// counts requests lost with a failed connection.
	Unfinished int64 `json:"unfinished"`
	Dropped    int64 `json:"dropped"`
	// Errors counts connection failures by kind (whole run, warm-up included);
	// FirstError is the text of the first one.
	Errors     map[string]int64 `json:"errors"`
	FirstError string           `json:"first_error,omitempty"`
	// ConnsOpen is how many connections were established; ConnsLost how many
	// failed during the run.
	ConnsOpen int `json:"conns_open"`
	ConnsLost int `json:"conns_lost"`
	// GoAways is how many connections the server closed after a final
	// refusal (reason "goaway"): their requests count as refused, not lost.
	GoAways int `json:"goaways,omitempty"`
	// Reconnects is how many times such a connection was dialled again
	// (LoadConfig.Reconnect).
	Reconnects int `json:"reconnects,omitempty"`
	// TLSVersion and TLSCipherSuite are what the first TLS handshake of
	// the run negotiated (empty without TLS).
	TLSVersion     string `json:"tls_version,omitempty"`
	TLSCipherSuite string `json:"tls_cipher_suite,omitempty"`
	// Handshake mode only (Mode "handshakes"; Msgs, Latency and Rejected
	// are then the one request each connection sends, its latency from
	// the end of the handshake). Handshakes counts the connections of the
	// measured window whose whole cycle succeeded (dial, handshake,
	// request, answer), Resumed those of them whose handshake resumed a
	// session (tls.ConnectionState.DidResume), ResumedShare their share.
	// HandshakeLatency runs from the dial to the end of the handshake
	// (the TCP connect included); HandshakeHistogramV2 is its histogram,
	// encoded as HistogramV2. HandshakeFailures counts the cycles of the
	// window that failed, by reason: refused, reset, timeout, peer_closed,
	// bad_certificate (the server's did not verify), alert (the server
	// refused the handshake), not_tls, mismatch (a wrong answer) or other.
	Handshakes           int64            `json:"handshakes,omitempty"`
	HandshakesPerSec     float64          `json:"handshakes_per_sec,omitempty"`
	Resumed              int64            `json:"resumed,omitempty"`
	ResumedShare         float64          `json:"resumed_share,omitempty"`
	HandshakeLatency     *LatencySummary  `json:"handshake_latency,omitempty"`
	HandshakeHistogramV2 string           `json:"handshake_histogram_v2,omitempty"`
	HandshakeFailures    map[string]int64 `json:"handshake_failures,omitempty"`
	// Client and Server are the processes' costs over the window (Server only
	// with LoadConfig.ServerPID).
	Client *ProcUsage `json:"client,omitempty"`
	Server *ProcUsage `json:"server,omitempty"`
	// Cores is the busy fraction of every CPU the client and server may run on,
	// from /proc/stat: everything on that core, other people's work included.
	Cores []CoreUsage `json:"cores,omitempty"`
}

// ProcUsage is a process's cost over the measured window.
type ProcUsage struct {
	PID int `json:"pid"`
	// CPUs the process is allowed on.
	CPUs []int `json:"cpus,omitempty"`
	// CPUSec is user+system CPU time; Util is CPUSec over the window (1.0 = one
	// core fully busy).
	CPUSec float64 `json:"cpu_sec"`
	Util   float64 `json:"util"`
	// CPUMicrosPerMsg is CPUSec per completed message.
	CPUMicrosPerMsg float64 `json:"cpu_us_per_msg"`
	// SyscallsPerMsg is (syscr+syscw) per message: read-like plus write-like
	// system calls (epoll_wait and others are not counted); -1 when unknown.
	ReadSyscalls   int64   `json:"syscr"`
	WriteSyscalls  int64   `json:"syscw"`
	SyscallsPerMsg float64 `json:"syscalls_per_msg"`
	// RSSKiB is resident memory at the end of the window.
	RSSKiB int64 `json:"rss_kib"`
}

// CoreUsage is one CPU's busy fraction over the window.
type CoreUsage struct {
	CPU  int     `json:"cpu"`
	Role string  `json:"role"` // "server", "client" or "both"
	Busy float64 `json:"busy"` // fraction of the window
	// Steal is the fraction the hypervisor gave to other guests.
	Steal float64 `json:"steal"`
	// MicrosPerMsg is busy time per completed message.
	MicrosPerMsg float64 `json:"us_per_msg"`
}

// Defaults of the load command and of a comparison's runs.
const (
	DefaultWarmup   = time.Second
	DefaultDuration = 3 * time.Second
)

// FormatLoadResult renders a result as a few human-readable lines.
func FormatLoadResult(r *LoadResult) string {
	var b strings.Builder
	cfg := &r.Config
	inFlight := fmt.Sprintf("%d in flight", cfg.InFlight)
	if r.Mode == "open" {
		inFlight = fmt.Sprintf("≤%d in flight", cfg.InFlight)
	}
	tlsText := ""
	if r.TLSVersion != "" {
		tlsText = ", " + r.TLSVersion + " " + r.TLSCipherSuite
	}
	if r.Mode == "handshakes" {
		fmt.Fprintf(&b, "handshakes, %s codec, %d workers × one %s B request per connection%s, %.1fs measured after %v warm-up\n",
			cfg.Codec, cfg.Conns, cfg.Size, tlsText, r.WindowSec, cfg.Warmup)
		fmt.Fprintf(&b, "handshakes  %s/s  (%d; resumed %d, %.1f%%)  failures %v\n",
			human.Rate(r.HandshakesPerSec), r.Handshakes, r.Resumed, 100*r.ResumedShare, r.HandshakeFailures)
		if h := r.HandshakeLatency; h != nil {
			fmt.Fprintf(&b, "handshake   p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n",
				human.Micros(h.P50Micros), human.Micros(h.P90Micros), human.Micros(h.P99Micros), human.Micros(h.P999Micros), human.Micros(h.MaxMicros))
		}
	} else {
		fmt.Fprintf(&b, "%s loop, %s codec, %d conns × %s × %s B%s, %.1fs measured after %v warm-up\n",
			r.Mode, cfg.Codec, cfg.Conns, inFlight, cfg.Size, tlsText, r.WindowSec, cfg.Warmup)
	}
	fmt.Fprintf(&b, "throughput  %s msg/s  %.1f MB/s  (%d msgs)\n", human.Rate(r.MsgsPerSec), r.MBPerSec, r.Msgs)
	l := r.Latency
	fmt.Fprintf(&b, "latency     p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n",
		human.Micros(l.P50Micros), human.Micros(l.P90Micros), human.Micros(l.P99Micros), human.Micros(l.P999Micros), human.Micros(l.MaxMicros))
	if r.Mode == "open" {
		fmt.Fprintf(&b, "open loop   offered %s/s  intended %d  late %d  missed %d", human.Rate(r.OfferedPerSec), r.Intended, r.Late, r.Missed)
		if r.SendLag != nil {
			fmt.Fprintf(&b, "  send lag p99 %s max %s", human.Micros(r.SendLag.P99Micros), human.Micros(r.SendLag.MaxMicros))
		}
		b.WriteByte('\n')
	}
	if r.Rejected > 0 {
		fmt.Fprintf(&b, "rejected    %s/s  (%d: %v)", human.Rate(r.RejectedPerSec), r.Rejected, r.Rejects)
		if rl := r.RejectLatency; rl != nil {
			fmt.Fprintf(&b, "  latency p50 %s p99 %s", human.Micros(rl.P50Micros), human.Micros(rl.P99Micros))
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "conns       %d open, %d lost, %d closed with a final refusal, %d reconnects; unfinished %d, dropped %d; errors %v\n", r.ConnsOpen, r.ConnsLost, r.GoAways, r.Reconnects, r.Unfinished, r.Dropped, r.Errors)
	if r.FirstError != "" {
		fmt.Fprintf(&b, "first error %s\n", r.FirstError)
	}
	for _, p := range []struct {
		name string
		u    *ProcUsage
	}{{"client", r.Client}, {"server", r.Server}} {
		if p.u == nil {
			continue
		}
		fmt.Fprintf(&b, "%-11s pid %d cpus %v: %.0f%% of a core, %.2f µs/msg", p.name, p.u.PID, p.u.CPUs, 100*p.u.Util, p.u.CPUMicrosPerMsg)
		if p.u.SyscallsPerMsg >= 0 {
			fmt.Fprintf(&b, ", %.2f read+write syscalls/msg", p.u.SyscallsPerMsg)
		}
		fmt.Fprintf(&b, ", RSS %d KiB\n", p.u.RSSKiB)
	}
	for _, c := range r.Cores {
		fmt.Fprintf(&b, "cpu%-8d %s: %.0f%% busy (steal %.0f%%), %.2f µs/msg\n", c.CPU, c.Role, 100*c.Busy, 100*c.Steal, c.MicrosPerMsg)
	}
	return b.String()
}
