// Package loadcmd is the load generator's command line, shared by
// cmd/sluiceload and the lab's cmd/bench load (lab/cmd/bench): the flags,
// the progress line, the human-readable or JSON result and the SVG latency
// chart, which it draws itself (standard library only).
//
// loadcmd owns flag parsing, printing and the chart; the load itself is
// package bench's. It refuses to own the comparison lab (the separate module
// in lab/), which runs this command as its generator process and reads its
// -json output.
//
// Usage:
//
//	err := loadcmd.Run(ctx, "sluiceload", os.Args[1:], os.Stdout, os.Stderr)
package loadcmd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicenet/sluice/bench"
	"github.com/sluicenet/sluice/internal/procstat"
)

// ErrUsage reports command-line flags that do not parse; the flag package
// has already printed the problem and the usage.
var ErrUsage = errors.New("sluice: load: bad usage")

// Run runs one load test as the flags in args describe and prints its
// result on stdout: a summary, or JSON with -json. The progress line, when
// stderr is a terminal and -json is off, and the usage go to stderr. name is
// the command's name in the usage text. It returns ErrUsage for flags that do
// not parse, nil after -h, and otherwise the run's error.
func Run(ctx context.Context, name string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:7000", "server address HOST:PORT")
	codec := fs.String("codec", "length", "framing: raw (byte accounting); length (4-byte big-endian prefix), length1, length2, length8, length2le, length4le, length8le (1-8 byte prefix, le: little-endian); line; resp (ECHO commands); http (POST /echo). Every framed response is matched to its request")
	conns := fs.Int("conns", 64, "connections")
	local := fs.String("local-addr", "", "source IP address of every connection (on loopback 127.0.0.2 and up: a peer address of its own, which servers keying tenants by address count as a tenant; empty: the kernel's choice)")
	inflight := fs.Int("inflight", 0, "closed loop: requests in flight per connection (0: 1); open loop: the most per connection, beyond which a due send is missed (0: 64)")
	size := fs.String("size", "64", `payload bytes: fixed ("64", "4k") or uniform range ("64-4096")`)
	rate := fs.Float64("rate", 0, "open loop: total requests per second over all connections (0: closed loop)")
	warmup := fs.Duration("warmup", bench.DefaultWarmup, "warm-up before measuring")
	duration := fs.Duration("duration", bench.DefaultDuration, "measured window")
	workers := fs.Int("workers", 0, "generator event loops (0: GOMAXPROCS)")
	timeout := fs.Duration("timeout", bench.DefaultResponseTimeout, "response timeout (a connection whose oldest request waits longer is closed)")
	serverPID := fs.Int("server-pid", 0, "server process to read CPU time, system calls and memory of (0: none)")
	cpus := fs.String("cpus", "", `pin this process to these CPUs ("1" or "2,3"; empty: no pinning)`)
	useTLS := fs.Bool("tls", false, "speak TLS 1.3 (crypto/tls), verifying the server with -tls-ca or, with -tls-insecure, not at all. "+
		"TLS connections are goroutines, a reader and a writer each, not the epoll loops, so the generator costs more per message; "+
		"the closed and open loops, checks and report are the same. Not with -workers (it sizes the epoll loops)")
	tlsCA := fs.String("tls-ca", "", "with -tls: PEM file of the certificates that verify the server's, for the host of -addr")
	tlsInsecure := fs.Bool("tls-insecure", false, "with -tls: do not verify the server's certificate")
	tlsResume := fs.Bool("tls-resume", false, "with -tls: keep a session cache, so that new connections resume sessions from the server's tickets "+
		"(the handshakes of -handshakes; the loops dial only at the start)")
	reconnect := fs.Bool("reconnect", false, "closed loop: dial a connection the server closed with a final refusal (reason goaway) again once its retry-after has passed, as a client honouring it would (default: it stays closed)")
	handshakes := fs.Bool("handshakes", false, "with -tls: measure handshakes: for -duration, each of -conns workers dials, handshakes (resumed with -tls-resume), "+
		"sends one -size request, checks the answer and closes, again and again; reports handshakes/s, the share resumed, failures by reason and "+
		"the handshake's latency (dial to handshake done). Not with -rate or -inflight above 1")
	jsonOut := fs.Bool("json", false, "print the result as JSON on stdout and no progress line")
	svg := fs.String("svg", "", "write the latency-by-percentile chart (HDR histogram) to this SVG file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return ErrUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %q\n", name, fs.Args())
		fs.Usage()
		return ErrUsage
	}

	tlsCfg, err := tlsConfig(*useTLS, *tlsCA, *tlsInsecure, *tlsResume, *handshakes, *conns)
	if err != nil {
		return err
	}
	c, err := bench.ParseCodec(*codec)
	if err != nil {
		return err
	}
	sz, err := bench.ParseSize(*size)
	if err != nil {
		return err
	}
	if *cpus != "" {
		list, err := procstat.ParseCPUList(*cpus)
		if err != nil {
			return err
		}
		if err := procstat.PinProcess(list); err != nil {
			return err
		}
	}
	cfg := bench.LoadConfig{
		Addr: *addr, LocalAddr: *local, Codec: c, Conns: *conns, InFlight: *inflight, Size: sz, RatePerSec: *rate,
		Warmup: *warmup, Duration: *duration, Workers: *workers, ResponseTimeout: *timeout, ServerPID: *serverPID,
		TLS: tlsCfg, Handshakes: *handshakes, Reconnect: *reconnect,
	}
	if f, ok := stderr.(*os.File); ok && !*jsonOut && procstat.IsTerminal(f) {
		cfg.Progress = stderr
	}
	res, err := bench.Load(ctx, cfg)
	if res == nil {
		return err
	}
	if *svg != "" {
		if cerr := writeChartFile(*svg, res); cerr != nil && err == nil {
			err = cerr
		}
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(res); jerr != nil {
			return jerr
		}
		return err
	}
	_, _ = fmt.Fprint(stdout, bench.FormatLoadResult(res))
	return err
}

// tlsConfig returns the generator's TLS configuration for the -tls flags:
// nil without -tls, else TLS 1.3 that verifies the server with the
// certificates in caFile, or, with insecure, does not verify it, and that
// caches sessions with resume.
func tlsConfig(on bool, caFile string, insecure, resume, handshakes bool, conns int) (*tls.Config, error) {
	if !on {
		for _, f := range []struct {
			name string
			set  bool
		}{{"-tls-ca", caFile != ""}, {"-tls-insecure", insecure}, {"-tls-resume", resume}, {"-handshakes", handshakes}} {
			if f.set {
				return nil, fmt.Errorf("%w: %s needs -tls", bench.ErrInvalidConfig, f.name)
			}
		}
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13}
	switch {
	case caFile != "" && insecure:
		return nil, fmt.Errorf("%w: -tls-ca and -tls-insecure: verify the server or do not, not both", bench.ErrInvalidConfig)
	case insecure:
		cfg.InsecureSkipVerify = true
	case caFile == "":
		return nil, fmt.Errorf("%w: -tls needs -tls-ca FILE to verify the server, or -tls-insecure not to", bench.ErrInvalidConfig)
	default:
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("-tls-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: -tls-ca %s holds no PEM certificate", bench.ErrInvalidConfig, caFile)
		}
	}
	if resume {
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(max(conns, 1))
	}
	return cfg, nil
}

// Main runs Run with the process's standard output and error until it
// finishes or the process receives SIGINT or SIGTERM, and returns the exit
// code: 0 on success, 1 on failure, 2 on a usage error.
func Main(name string, args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch err := Run(ctx, name, args, os.Stdout, os.Stderr); {
	case errors.Is(err, ErrUsage):
		return 2
	case err != nil:
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}
