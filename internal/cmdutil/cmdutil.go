// Package cmdutil is the process wiring the sluice commands share (cmd/echo,
// cmd/kv): their logger, text records on stderr rate-limited per message
// (internal/ratelog), the periodic report of what the limiter dropped, and
// the optional admin server (server/admin), and the TLS configuration of
// -tls-cert and -tls-key.
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
	"time"

	"github.com/sluicenet/sluice/internal/ratelog"
	"github.com/sluicenet/sluice/server/admin"
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
// that PEM pair and the given ALPN protocols.
func TLSConfig(certFile, keyFile string, alpn ...string) (*tls.Config, error) {
	if certFile == "" && keyFile == "" {
		return nil, nil
	}
	if certFile == "" || keyFile == "" {
		return nil, errors.New("-tls-cert and -tls-key go together")
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("-tls-cert/-tls-key: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12, NextProtos: alpn}, nil
}
