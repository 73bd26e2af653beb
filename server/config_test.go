package server

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	checks := []struct {
		name      string
		got, want any
	}{
		{"Addr", c.Addr, DefaultAddr},
		{"Loops", c.Loops, runtime.GOMAXPROCS(0)},
		{"Accept", c.Accept, AcceptReusePort},
		{"Codec", c.Codec, protocol.Codec(protocol.Raw{})},
		{"MaxConns", c.MaxConns, 0},
		{"MaxConnsLow", c.MaxConnsLow, 0},
		{"ReadBudgetBytes", c.ReadBudgetBytes, DefaultReadBudgetBytes},
		{"OutQueueHighBytes", c.OutQueueHighBytes, DefaultOutQueueBytes / 2},
		{"OutQueueLowBytes", c.OutQueueLowBytes, DefaultOutQueueBytes / 4},
		{"IdleTimeout", c.IdleTimeout, DefaultIdleTimeout},
		{"DrainTimeout", c.DrainTimeout, DefaultDrainTimeout},
	}
	for i, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%d: %s = %v, want %v", i, ch.name, ch.got, ch.want)
		}
	}
	if got := (Config{MaxConns: 100}).withDefaults().MaxConnsLow; got != 90 {
		t.Errorf("MaxConnsLow default = %d, want 90", got)
	}
	if got := (Config{IdleTimeout: -1}).withDefaults().IdleTimeout; enabled(got) {
		t.Errorf("negative IdleTimeout enabled: %v", got)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		cfg   Config
		field string // "" means valid
	}{
		{Config{}, ""},
		{Config{MaxConns: 10, MaxConnsLow: 5, IdleTimeout: -1, FrameTimeout: time.Second}, ""},
		{Config{Loops: -1}, "Loops"},
		{Config{Loops: maxLoops + 1}, "Loops"},
		{Config{Accept: AcceptMode(9)}, "Accept"},
		{Config{MaxConns: -1}, "MaxConns"},
		{Config{MaxConnsLow: 3}, "MaxConnsLow"},
		{Config{MaxConns: 10, MaxConnsLow: 10}, "MaxConnsLow"},
		{Config{ReadBufferBytes: 100}, "ReadBufferBytes"},
		{Config{ReadBudgetBytes: -5}, "ReadBudgetBytes"},
		{Config{OutQueueBytes: 1000, OutQueueHighBytes: 2000}, "OutQueueHighBytes"},
		{Config{OutQueueHighBytes: 1000, OutQueueLowBytes: 1000}, "OutQueueLowBytes"},
		{Config{AcceptRetryDelay: -time.Second}, "AcceptRetryDelay"},
		{Config{DrainTimeout: -time.Second}, "DrainTimeout"},
		{Config{InboxTasks: -1}, "InboxTasks"},
		{Config{HandshakeShare: 0.5}, ""},
		{Config{HandshakeShare: -0.1}, "HandshakeShare"},
		{Config{HandshakeShare: 1.5}, "HandshakeShare"},
		{Config{HandshakeShare: math.NaN()}, "HandshakeShare"},
	}
	for i, tt := range tests {
		err := tt.cfg.Validate()
		if tt.field == "" {
			if err != nil {
				t.Errorf("%d: Validate() = %v, want nil", i, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%d: Validate() = %v, want ErrInvalidConfig naming %s", i, err, tt.field)
		}
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	if _, err := New(Config{}, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("nil handler: %v", err)
	}
	if _, err := New(Config{Loops: -1}, HandlerFuncs{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("bad config: %v", err)
	}
}

func TestStrings(t *testing.T) {
	tests := []struct{ got, want string }{
		{None.String(), "none"}, {Close.String(), "close"}, {Shutdown.String(), "shutdown"},
		{Action(7).String(), "Action(7)"},
		{AcceptDefault.String(), "default"}, {AcceptReusePort.String(), "reuseport"},
		{AcceptExclusive.String(), "exclusive"}, {AcceptMode(5).String(), "AcceptMode(5)"},
		{CauseIdleTimeout.String(), "idle_timeout"}, {CloseCause(99).String(), "CloseCause(99)"},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%d: %q, want %q", i, tt.got, tt.want)
		}
	}
}
