package redisstore

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicenet/sluice/internal/ratelog"
)

// captureHandler records what reaches it.
type captureHandler struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.recs = append(h.recs, r)
	h.mu.Unlock()
	return nil
}

func (h *captureHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *captureHandler) WithGroup(string) slog.Handler      { return h }

// TestRouteClientLogs: with the go-redis logger routed, the pool's dial
// errors against an unreachable Redis (a closed loopback port) arrive as
// Warn records with ClientLogMsg and the line as "detail", instead of on
// stderr, and a rate-limited handler (internal/ratelog, keyed on the
// message) lets only its burst of them through.
func TestRouteClientLogs(t *testing.T) {
	capture := &captureHandler{}
	limited, err := ratelog.New(capture, ratelog.Options{Burst: 1, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	RouteClientLogs(slog.New(limited))
	defer RouteClientLogs(slog.New(slog.DiscardHandler))
	RouteClientLogs(nil) // ignored: the routing above stays

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	// The closed port refuses at once: the dial timeout and the context are
	// safety nets, long enough that a loaded machine's dials end in the
	// refusal, not in their own timeout (100 ms and 1 s did, with four CPU
	// hogs beside the test: "i/o timeout").
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 5 * time.Second, MaxRetries: 1})
	for i := 0; i < 3; i++ { // each Ping logs the pool's dial failure
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := rdb.Ping(ctx).Err(); err == nil {
			t.Fatal("ping to a closed port succeeded")
		}
		cancel()
	}
	rdb.Close()

	capture.mu.Lock()
	defer capture.mu.Unlock()
	if len(capture.recs) != 1 {
		t.Fatalf("%d records passed a handler with a burst of 1, want 1", len(capture.recs))
	}
	r := capture.recs[0]
	var detail string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "detail" {
			detail = a.Value.String()
		}
		return true
	})
	if r.Message != ClientLogMsg || r.Level != slog.LevelWarn || !strings.Contains(detail, "connection refused") {
		t.Errorf("record %q at %v, detail %q; want %q at WARN with the dial error", r.Message, r.Level, detail, ClientLogMsg)
	}
}
