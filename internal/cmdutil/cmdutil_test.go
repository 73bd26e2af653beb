package cmdutil

import (
	"context"
	"testing"
	"time"

	"github.com/sluicenet/sluice/server"
	"github.com/sluicenet/sluice/server/admin"
	"github.com/sluicenet/sluice/server/metrics"
)

func TestStartAdminOff(t *testing.T) {
	stop, err := StartAdmin(context.Background(), "", admin.Config{})
	if err != nil || stop == nil {
		t.Fatalf("StartAdmin(\"\") = %v, %v; want a no-op stop", stop != nil, err)
	}
	stop()
}

func TestStartAdminError(t *testing.T) {
	cfg := admin.Config{Stats: metrics.SourceFunc(func() server.Stats { return server.Stats{} })}
	if _, err := StartAdmin(context.Background(), "127.0.0.1:-1", cfg); err == nil {
		t.Fatal("StartAdmin on a bad address: no error")
	}
}

func TestFlushLogsStops(t *testing.T) {
	_, h, err := NewLogger()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	returned := make(chan struct{})
	go func() { FlushLogs(context.Background(), done, h); close(returned) }()
	close(done)
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("FlushLogs did not return after done closed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	FlushLogs(ctx, nil, h) // returns at once
}
