package redisstore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ClientLogMsg is the message of every go-redis log line routed by
// RouteClientLogs; the line itself is its "detail" attribute. One message
// for all of them lets a rate-limited handler (internal/ratelog keys on the
// message) hold a flood of reconnect errors to a few lines.
const ClientLogMsg = "redis client"

// RouteClientLogs sends go-redis's own log lines (it prints connection
// pool and reconnect errors to stderr with the standard log package, for
// example "redis: ... pool.go:770: ..." while Redis is unreachable) to
// logger at Warn level, as ClientLogMsg with the formatted line as
// "detail". go-redis has one logger per process, so this applies to every
// client; a nil logger is ignored.
func RouteClientLogs(logger *slog.Logger) {
	if logger == nil {
		return
	}
	redis.SetLogger(slogPrinter{logger})
}

// slogPrinter adapts a slog.Logger to go-redis's logging interface.
type slogPrinter struct{ l *slog.Logger }

// Printf logs one go-redis line.
func (p slogPrinter) Printf(ctx context.Context, format string, v ...any) {
	if ctx == nil {
		ctx = context.Background()
	}
	p.l.WarnContext(ctx, ClientLogMsg, "detail", strings.TrimSpace(fmt.Sprintf(format, v...)))
}
