// Command kv is the sluice key-value example server. With -proto resp (the
// default, on 127.0.0.1:6380) it speaks RESP2, so redis-cli and
// redis-benchmark work unmodified; with -proto envelope (127.0.0.1:7380) it
// speaks the sluice envelope (GET, PUT, DELETE, INCR, PING), honours
// deadlines and idempotency keys, and calls a simulated dependency through
// a retrier, a retry budget and a circuit breaker. The logic lives in
// internal/kv; this file parses flags.
//
//	go run ./cmd/kv                                  # or: make run-kv
//	redis-cli -p 6380 SET k v
//	redis-benchmark -p 6380 -t ping,set,get -P 16 -q
//	make run-kv ARGS="-proto envelope -dep-latency 20ms -dep-error-rate 0.3"
//
// It prints "listening on HOST:PORT" once it accepts connections, and
// exits 0 after a clean shutdown on SIGINT or SIGTERM. With -admin-addr
// 127.0.0.1:9100 it also serves /metrics, /healthz, /readyz, /debug/pprof/
// and /debug/sluice there (package server/admin) and prints
// "admin on http://HOST:PORT" on stderr. Logs go to stderr, rate-limited
// per message (internal/ratelog).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/internal/cmdutil"
	"github.com/sluicenet/sluice/internal/kv"
	"github.com/sluicenet/sluice/server/admin"
	"github.com/sluicenet/sluice/server/metrics"
	"github.com/sluicenet/sluice/tlsutil"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kv:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	var o kv.Options
	fs := flag.NewFlagSet("kv", flag.ContinueOnError)
	fs.StringVar(&o.Proto, "proto", kv.ProtoRESP, "protocol: resp or envelope")
	fs.StringVar(&o.Engine.Addr, "addr", "", "listen address host:port (default "+kv.DefaultRESPAddr+" for resp, "+kv.DefaultEnvelopeAddr+" for envelope)")
	fs.IntVar(&o.Engine.Loops, "loops", 0, "event loops (0: GOMAXPROCS)")
	fs.IntVar(&o.Engine.MaxConns, "max-conns", 0, "connection budget; the listen gate closes there (0: none)")
	fs.DurationVar(&o.Engine.IdleTimeout, "idle-timeout", 0, "close connections idle this long (0: default 2m, <0: off)")
	fs.IntVar(&o.Store.MaxKeys, "max-keys", 0, "key budget (0: default 1048576)")
	fs.Int64Var(&o.Store.MaxBytes, "max-bytes", 0, "store byte budget (0: default 256 MiB)")
	fs.IntVar(&o.Store.MaxValueBytes, "max-value-bytes", 0, "largest value (0: default 512 KiB)")
	tenantRate := fs.Int64("tenant-rate", 0, "requests per second per tenant (envelope tenant, else peer IP); 0: no quota")
	tenantBurst := fs.Int64("tenant-burst", 0, "tenant burst (0: the rate)")
	fs.StringVar(&o.Idempotency, "idempotency", kv.IdempotencyMemory, "envelope idempotency store: memory, redis or none")
	fs.StringVar(&o.RedisAddr, "redis-addr", "127.0.0.1:6379", "Redis address for -idempotency redis")
	fs.DurationVar(&o.IdempotencyTTL, "idempotency-ttl", 0, "how long idempotent outcomes are kept (0: 24h)")
	fs.DurationVar(&o.DepLatency, "dep-latency", 0, "envelope: latency of the simulated dependency each mutation calls")
	fs.Float64Var(&o.DepErrorRate, "dep-error-rate", 0, "envelope: failure probability of the simulated dependency, 0..1")
	fs.IntVar(&o.Retry.MaxAttempts, "dep-attempts", 0, "envelope: attempts per dependency call, first included (0: 3)")
	fs.IntVar(&o.Workers, "workers", 0, "envelope: worker pool size (0: 8)")
	fs.IntVar(&o.QueueLen, "worker-queue", 0, "envelope: worker queue length (0: 256)")
	fs.DurationVar(&o.MaxQueueWait, "max-queue-wait", 0, "envelope: shed requests that waited this long for a worker (0: 250ms)")
	tlsCert := fs.String("tls-cert", "", "PEM certificate (chain) file: serve TLS 1.3 and 1.2 with it and -tls-key, loaded again on SIGHUP (redis-cli --tls; empty: plaintext)")
	tlsKey := fs.String("tls-key", "", "PEM private key file of -tls-cert")
	adminAddr := fs.String("admin-addr", "", "serve /metrics, /healthz, /readyz, /debug/pprof/ and /debug/sluice on this address, e.g. 127.0.0.1:9100 (empty: off)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	var certs *tlsutil.Reloader
	if o.Engine.TLS, certs, err = cmdutil.TLSConfig(*tlsCert, *tlsKey); err != nil {
		return err
	}
	if *tenantRate > 0 {
		burst := *tenantBurst
		if burst <= 0 {
			burst = *tenantRate
		}
		o.TenantQuota = &admission.Quota{Count: *tenantRate, Per: time.Second, Burst: burst}
	}
	logger, logh, err := cmdutil.NewLogger()
	if err != nil {
		return err
	}
	o.Logger = logger

	// Catch the signals before announcing the address: a supervisor may
	// send SIGTERM as soon as it reads the line.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := kv.Start(o)
	if err != nil {
		return err
	}
	shutdown := func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return s.Shutdown(sctx)
	}
	cmdutil.ReloadOnHUP(ctx, certs, o.Logger)
	stopAdmin, err := cmdutil.StartAdmin(ctx, *adminAddr, admin.Config{Stats: s.Engine, Logger: o.Logger, Metrics: metrics.Options{Logs: logh}})
	if err != nil {
		_ = shutdown()
		return fmt.Errorf("-admin-addr: %w", err)
	}
	defer stopAdmin()
	fmt.Printf("listening on %s\n", s.Addr())
	go cmdutil.FlushLogs(ctx, s.Done(), logh)
	select {
	case <-ctx.Done():
	case <-s.Done():
	}
	err = shutdown()
	_ = logh.Flush(context.Background())
	return err
}
