// Command echo is the sluice echo server: every frame it receives goes back
// to its sender, encoded with the same codec.
//
//	echo -addr 127.0.0.1:7000 -codec length -loops 2
//
// With -codec http it is an HTTP/1.1 server instead (package httpecho):
// "Hello, World!" on GET /, the request body echoed on POST /echo.
//
// It prints "listening on HOST:PORT" once it accepts connections, and exits
// 0 after a clean shutdown on SIGINT or SIGTERM. With -admin-addr
// 127.0.0.1:9100 it also serves /metrics, /healthz, /readyz, /debug/pprof/
// and /debug/sluice there (package server/admin) and prints
// "admin on http://HOST:PORT" on stderr. Logs go to stderr, rate-limited
// per message (internal/ratelog).
//
// Overload: -work 200us burns that much CPU per frame (on the loop, or on
// the engine's worker pool with -work-mode pool), so that overload can be
// produced on a small machine; -shed turns on CoDel on each frame's queueing
// delay; -max-queued-bytes, -max-inflight, -budget-conns and -memory-limit
// are the global budgets whose maximum pressure drives the listen gate
// (-gate-high, -gate-low, -gate-dwell); -tenant-rate and -tenant-burst are
// per-peer-IP quotas; -concurrency caps the work in progress;
// -backlog-reject answers new connections with a reject when the kernel
// accept queue is nearly full. Refusals reach the client in its protocol:
// "-REJECT reason retry_after_ms" as a length-prefixed or line frame, 429 or
// 503 with Retry-After over HTTP.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicenet/sluice/internal/cmdutil"
	"github.com/sluicenet/sluice/internal/httpecho"
	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/server"
	"github.com/sluicenet/sluice/server/admin"
	"github.com/sluicenet/sluice/server/metrics"
	"github.com/sluicenet/sluice/tlsutil"
)

// codecHTTP selects the HTTP/1.1 server of package httpecho.
const codecHTTP = "http"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	var cfg server.Config
	var err error
	fs := flag.NewFlagSet("echo", flag.ContinueOnError)
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:7000", "listen address host:port")
	fs.IntVar(&cfg.Loops, "loops", 0, "event loops (0: GOMAXPROCS)")
	codecName := fs.String("codec", protocol.NameRaw, "framing: raw, length (4-byte big-endian), length16 (2-byte big-endian, protocol.LengthField), varint, line, or http (HTTP/1.1: Hello, World! on /, body echo on /echo)")
	accept := fs.String("accept", "", "how loops share the listener: reuseport or exclusive (default: the engine's)")
	backend := fs.String("backend", "epoll", "readiness backend: epoll or io_uring (falls back to epoll, with a log line, where the kernel lacks it)")
	fs.IntVar(&cfg.MaxConns, "max-conns", 0, "connection budget; the listen gate closes there (0: none)")
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", 0, "close connections idle this long (0: default 2m, <0: off)")
	fs.DurationVar(&cfg.FrameTimeout, "frame-timeout", 0, "close connections whose frame takes this long (0: default 30s, <0: off)")
	fs.DurationVar(&cfg.WriteStallTimeout, "write-stall-timeout", 0, "close connections whose output stalls this long (0: default 30s, <0: off)")
	fs.IntVar(&cfg.OutQueueMsgs, "out-queue-msgs", 0, "out-queue message budget per connection (0: default)")
	fs.IntVar(&cfg.OutQueueBytes, "out-queue-bytes", 0, "out-queue byte budget per connection (0: default)")
	fs.IntVar(&cfg.ReadBudgetBytes, "read-budget", 0, "bytes read per connection per loop turn (0: default)")
	fs.IntVar(&cfg.FlushBudgetBytes, "flush-budget", 0, "bytes written per connection per flush (0: default)")
	fs.IntVar(&cfg.SocketSendBufferBytes, "so-sndbuf", 0, "SO_SNDBUF of accepted connections, bytes: caps what the kernel holds per connection for a peer that does not read (0: the kernel's autotuning)")
	fs.IntVar(&cfg.SocketRecvBufferBytes, "so-rcvbuf", 0, "SO_RCVBUF of accepted connections, bytes (0: the kernel's autotuning)")
	tlsCert := fs.String("tls-cert", "", "PEM certificate (chain) file: serve TLS 1.3 and 1.2 with it and -tls-key, loaded again on SIGHUP (empty: plaintext)")
	tlsKey := fs.String("tls-key", "", "PEM private key file of -tls-cert")
	fs.DurationVar(&cfg.TLSHandshakeTimeout, "tls-handshake-timeout", 0, "close TLS connections whose handshake takes this long (0: default 10s)")
	fs.IntVar(&cfg.MaxHandshakes, "max-handshakes", 0, "TLS handshakes in progress before the listen gate closes (0: default 256)")
	fs.Float64Var(&cfg.HandshakeShare, "handshake-share", 0, "share of the loops' time TLS handshakes may take while established connections have work, 0 to 1 (0: the default; 1: no bound)")
	printStats := fs.Bool("print-stats", false, "print the engine's counters as JSON on stderr after shutdown")
	adminAddr := fs.String("admin-addr", "", "serve /metrics, /healthz, /readyz, /debug/pprof/ and /debug/sluice on this address, e.g. 127.0.0.1:9100 (empty: off)")
	var ov overloadFlags
	ov.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	switch *codecName {
	case protocol.NameRaw, protocol.NameLength, protocol.NameLength16, protocol.NameVarint, protocol.NameLine, codecHTTP:
	default:
		return fmt.Errorf("-codec %q: want raw, length, length16, varint, line or http", *codecName)
	}
	switch *accept {
	case "":
	case server.AcceptReusePort.String():
		cfg.Accept = server.AcceptReusePort
	case server.AcceptExclusive.String():
		cfg.Accept = server.AcceptExclusive
	default:
		return fmt.Errorf("-accept %q: want reuseport or exclusive", *accept)
	}
	if cfg.Backend, err = server.ParseBackend(*backend); err != nil {
		return fmt.Errorf("-backend: %w", err)
	}
	var alpn []string
	if *codecName == codecHTTP {
		alpn = []string{"http/1.1"}
	}
	var certs *tlsutil.Reloader
	if cfg.TLS, certs, err = cmdutil.TLSConfig(*tlsCert, *tlsKey, alpn...); err != nil {
		return err
	}
	var handler server.Handler = echoHandler{}
	if *codecName == codecHTTP {
		hc := httpecho.Codec{}
		cfg.Codec, handler = hc, httpecho.NewHandler(hc)
	} else {
		codec, err := protocol.ByName(*codecName, 0)
		if err != nil {
			return err
		}
		cfg.Codec = codec
	}
	handler, admSource, err := ov.apply(&cfg, handler, *codecName)
	if err != nil {
		return err
	}
	logger, logh, err := cmdutil.NewLogger()
	if err != nil {
		return err
	}
	cfg.Logger = logger

	e, err := server.New(cfg, handler)
	if err != nil {
		return err
	}
	// Catch the signals before announcing the address: a supervisor may
	// send SIGTERM as soon as it reads the line.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := e.Start(); err != nil {
		return err
	}
	cmdutil.ReloadOnHUP(ctx, certs, cfg.Logger)
	stopAdmin, err := cmdutil.StartAdmin(ctx, *adminAddr, admin.Config{Stats: e, Logger: cfg.Logger, Metrics: metrics.Options{Logs: logh, Admission: admSource}})
	if err != nil {
		_ = e.Shutdown(context.Background())
		return fmt.Errorf("-admin-addr: %w", err)
	}
	defer stopAdmin()
	fmt.Printf("listening on %s\n", e.Addr())
	lctx, stopLogs := context.WithCancel(ctx)
	go cmdutil.FlushLogs(lctx, nil, logh)
	err = e.Serve(ctx)
	stopLogs()
	_ = logh.Flush(context.Background())
	if *printStats {
		json.NewEncoder(os.Stderr).Encode(e.Stats())
	}
	return err
}

// echoHandler writes every frame back. When the connection's out-queue is
// over budget (a peer that sends but does not read), the engine has already
// stopped reading it at the high watermark; a frame that still does not fit
// closes the connection, and the write-stall timeout closes one whose queue
// stays stuck.
type echoHandler struct{}

func (echoHandler) OnOpen(*server.Conn) server.Action { return server.None }

func (echoHandler) OnFrame(c *server.Conn, frame []byte) server.Action {
	if err := c.WriteFrame(frame); err != nil {
		c.CloseWithError(err)
	}
	return server.None
}

func (echoHandler) OnClose(*server.Conn, error) {}
