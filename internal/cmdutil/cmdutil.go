// Package cmdutil is the process wiring the sluice commands share (cmd/echo,
// cmd/kv): their logger, text records on stderr rate-limited per message
// (internal/ratelog), the periodic report of what the limiter dropped, and
// the optional admin server (server/admin), and the TLS configuration of
// -tls-cert and -tls-key, reloaded on SIGHUP.
//
// It refuses to parse flags or to own a command's engine: the commands keep
// their flags, their error texts and their shutdown order.
package cmdutil

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluicenet/sluice/internal/ratelog"
	"github.com/sluicenet/sluice/server/admin"
	"github.com/sluicenet/sluice/tlsutil"
)

// logFlushInterval is how often FlushLogs reports dropped records, and the
// limiter's interval.
const logFlushInterval = 10 * time.Second

// NewLogger returns the commands' logger: text records on stderr,
// rate-limited to a burst of 5 per message each 10 s by the returned
// handler, which the caller flushes (FlushLogs, and once at exit).
func NewLogger() (*slog.Logger, *ratelog.Handler, error) {
	h, err := ratelog.New(slog.NewTextHandler(os.Stderr, nil), ratelog.Options{Burst: 5, Interval: logFlushInterval})
	if err != nil {
		return nil, nil, err
	}
	return slog.New(h), h, nil
}

// FlushLogs reports, every 10 s until ctx ends or done closes (nil: never),
// how many records of each message h dropped in floods that stopped.
func FlushLogs(ctx context.Context, done <-chan struct{}, h *ratelog.Handler) {
	t := time.NewTicker(logFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-t.C:
			_ = h.Flush(ctx)
		}
	}
}

// StartAdmin starts an admin server on addr with cfg, unless addr is empty;
// it marks the server draining once ctx ends (so /readyz fails before the
// engine's listener closes) and prints "admin on http://HOST:PORT" on stderr
// (stdout carries only the listening line). The returned stop shuts the
// server down, waiting up to 5 s; it does nothing when addr is empty. The
// error is admin.New's.
func StartAdmin(ctx context.Context, addr string, cfg admin.Config) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	adm, err := admin.New(addr, cfg)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, func() { adm.SetDraining(true) })
	fmt.Fprintf(os.Stderr, "admin on http://%s\n", adm.Addr())
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = adm.Shutdown(sctx)
	}, nil
}

// TLSConfig returns the commands' TLS configuration for -tls-cert and
// -tls-key: nil when both are empty (plaintext), else TLS 1.2 and 1.3 with
// that PEM pair and the given ALPN protocols. The pair is served through
// the returned tlsutil.Reloader, which ReloadOnHUP loads again on SIGHUP,
// so a renewed certificate needs no restart.
func TLSConfig(certFile, keyFile string, alpn ...string) (*tls.Config, *tlsutil.Reloader, error) {
	if certFile == "" && keyFile == "" {
		return nil, nil, nil
	}
	if certFile == "" || keyFile == "" {
		return nil, nil, errors.New("-tls-cert and -tls-key go together")
	}
	r, err := tlsutil.NewReloader(certFile, keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("-tls-cert/-tls-key: %w", err)
	}
	return &tls.Config{GetCertificate: r.GetCertificate, MinVersion: tls.VersionTLS12, NextProtos: alpn}, r, nil
}

// ReloadOnHUP loads r's pair again on each SIGHUP until ctx ends, and logs
// the outcome: a pair that does not load leaves the previous one serving.
// A nil r (plaintext) leaves SIGHUP alone.
func ReloadOnHUP(ctx context.Context, r *tlsutil.Reloader, lg *slog.Logger) {
	if r == nil {
		return
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
			}
			if err := r.Reload(); err != nil {
				lg.Error("sluice: tls certificate reload failed; the previous pair stays", "err", err.Error())
			} else {
				lg.Info("sluice: tls certificate reloaded")
			}
		}
	}()
}
