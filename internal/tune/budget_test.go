package tune

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// hostWith builds a host with cores and memory known and nothing else.
func hostWith(cores int, mem int64) Host {
	h := Host{Sysctls: map[string]Reading{}}
	h.CPU.Cores, h.CPU.Why = cores, "test"
	h.Memory.Bytes, h.Memory.Why = mem, "test"
	return h
}

func TestNextPrevPow2(t *testing.T) {
	tests := []struct{ n, next, prev int64 }{
		{-3, 1, 1}, {0, 1, 1}, {1, 1, 1}, {2, 2, 2}, {3, 4, 2}, {4096, 4096, 4096}, {4097, 8192, 4096},
		{1<<62 + 1, 1 << 62, 1 << 62},
	}
	for i, tc := range tests {
		if got := nextPow2(tc.n); got != tc.next {
			t.Errorf("%d: nextPow2(%d) = %d, want %d", i, tc.n, got, tc.next)
		}
		if got := prevPow2(tc.n); got != tc.prev {
			t.Errorf("%d: prevPow2(%d) = %d, want %d", i, tc.n, got, tc.prev)
		}
	}
}

func TestComputeTable(t *testing.T) {
	base := Target{Conns: 10000, MsgBytes: 128, InflightMsgs: 16, MemShare: 0.5}
	tests := []struct {
		name   string
		host   Host
		target func(Target) Target
		check  func(t *testing.T, b Budgets)
	}{
		{"watermarks and per-connection budgets", hostWith(2, 24<<30), nil, func(t *testing.T, b Budgets) {
			want := Budgets{Loops: 2, MaxConns: 12500, MaxConnsLow: 11250, OutQueueMsgs: 32,
				OutQueueBytes: 32768, OutQueueHighBytes: 16384, OutQueueLowBytes: 8192, // twice the read budget
				ReadBudgetBytes: 16384, FlushBudgetBytes: 16384, ReadBufferBytes: 65536, Backlog: 2048, MemLimitBytes: 12 << 30,
				NoFileNeeded: 12500 + FDReserve + 2*FDsPerLoop}
			// Queued bytes are bounded by the per-connection budgets here.
			want.MaxQueuedBytes = 12500 * (32768 + 128)
			if !equalBudgets(b, want) {
				t.Errorf("budgets = %+v\nwant      %+v", b, want)
			}
		}},
		{"memory bounds the global budget", hostWith(4, 1<<30),
			func(t Target) Target { t.MsgBytes, t.InflightMsgs = 4096, 64; return t },
			func(t *testing.T, b Budgets) {
				share := int64(512 << 20)
				usable := share - RuntimeReserveBytes - 4*MaxBudgetBytes - 12500*(IdleConnBytes+4096)
				if b.MaxQueuedBytes != usable/2 {
					t.Errorf("global = %d, want %d", b.MaxQueuedBytes, usable/2)
				}
				// 128 x 4 KiB = 512 KiB wanted, but a sixteenth of the global
				// budget (about 10 MiB) is larger, so it stays.
				if b.OutQueueBytes != 512<<10 || b.OutQueueMsgs != 128 {
					t.Errorf("out-queue = %d msgs, %d bytes", b.OutQueueMsgs, b.OutQueueBytes)
				}
				if b.ReadBudgetBytes != MaxBudgetBytes {
					t.Errorf("read budget %d, want the %d clamp", b.ReadBudgetBytes, MaxBudgetBytes)
				}
			}},
		{"per-connection queue capped by a small global budget", hostWith(1, 256<<20),
			func(t Target) Target { t.Conns, t.MsgBytes, t.InflightMsgs = 100, 64<<10, 64; return t },
			func(t *testing.T, b Budgets) {
				limit := prevPow2(b.MaxQueuedBytes / 16)
				if int64(b.OutQueueBytes) != limit {
					t.Errorf("out-queue bytes %d, want a sixteenth of the global budget rounded down, %d", b.OutQueueBytes, limit)
				}
			}},
		{"a small global budget lowers the read budget with the out-queue", hostWith(1, 140<<20),
			func(t Target) Target { t.Conns, t.MsgBytes, t.InflightMsgs = 10, 64<<10, 64; return t },
			func(t *testing.T, b Budgets) {
				if b.OutQueueBytes != 128<<10 || b.ReadBudgetBytes != 64<<10 || b.FlushBudgetBytes != 64<<10 {
					t.Errorf("out-queue %d, read %d, flush %d; want 128 KiB, 64 KiB, 64 KiB", b.OutQueueBytes, b.ReadBudgetBytes, b.FlushBudgetBytes)
				}
			}},
		{"memory too small for the connections", hostWith(1, 256<<20),
			func(t Target) Target { t.Conns = 200000; return t },
			func(t *testing.T, b Budgets) {
				if b.MaxConns >= 250000 || b.MaxConns <= 0 {
					t.Errorf("max conns %d: want lowered to what 128 MiB holds", b.MaxConns)
				}
				connBytes := int64(IdleConnBytes + 128)
				share := int64(128 << 20)
				if used := int64(b.MaxConns)*connBytes + RuntimeReserveBytes; used > share {
					t.Errorf("%d connections use %d bytes, more than the %d share", b.MaxConns, used, share)
				}
				if b.MaxConnsLow >= b.MaxConns {
					t.Errorf("low %d >= high %d", b.MaxConnsLow, b.MaxConns)
				}
				if !hasWarning(b.Warnings, "holds about") {
					t.Errorf("no memory warning in %q", b.Warnings)
				}
			}},
		{"share below the runtime reserve", hostWith(1, 64<<20), nil, func(t *testing.T, b Budgets) {
			if b.MaxQueuedBytes != 0 || b.MemLimitBytes != 32<<20 || !hasWarning(b.Warnings, "cannot even hold the runtime reserve") {
				t.Errorf("global %d, memlimit %d, warnings %q", b.MaxQueuedBytes, b.MemLimitBytes, b.Warnings)
			}
		}},
		{"memory unknown", hostWith(2, 0), nil, func(t *testing.T, b Budgets) {
			if b.MaxQueuedBytes != 0 || b.MemLimitBytes != 0 || !hasWarning(b.Warnings, "memory is unknown") {
				t.Errorf("global %d, memlimit %d, warnings %q", b.MaxQueuedBytes, b.MemLimitBytes, b.Warnings)
			}
			if b.MaxConns != 12500 {
				t.Errorf("max conns %d, want 12500", b.MaxConns)
			}
		}},
		{"memory given by -mem-bytes", hostWith(2, 0),
			func(t Target) Target { t.MemBytes = 8 << 30; return t },
			func(t *testing.T, b Budgets) {
				if b.MemLimitBytes != 4<<30 || len(b.Warnings) != 0 {
					t.Errorf("memlimit %d, warnings %q", b.MemLimitBytes, b.Warnings)
				}
			}},
		{"socket buffers and share exceed memory", hostWith(2, 2<<30),
			func(t Target) Target { t.Conns, t.MsgBytes, t.MemShare = 50000, 256, 0.8; return t },
			func(t *testing.T, b Budgets) {
				// 62500 x 2 x 4 KiB = 488 MiB of socket buffers + 1.6 GiB > 2 GiB.
				if !hasWarning(b.Warnings, "lower -mem-share to about 0.76") {
					t.Errorf("warnings %q", b.Warnings)
				}
			}},
		{"cores unknown", hostWith(0, 1<<30), nil, func(t *testing.T, b Budgets) {
			if b.Loops != 1 || !hasWarning(b.Warnings, "core count is unknown") {
				t.Errorf("loops %d, warnings %q", b.Loops, b.Warnings)
			}
		}},
		{"backlog from the connection rate", hostWith(2, 1<<30),
			func(t Target) Target { t.ConnRatePerSec = 50000; return t },
			func(t *testing.T, b Budgets) {
				if b.Backlog != 8192 { // 50000/s x 0.1 s = 5000 -> 8192
					t.Errorf("backlog %d, want 8192", b.Backlog)
				}
			}},
		{"backlog clamps", hostWith(2, 1<<30),
			func(t Target) Target { t.Conns = 10; return t },
			func(t *testing.T, b Budgets) {
				if b.Backlog != MinBacklog {
					t.Errorf("backlog %d, want %d", b.Backlog, MinBacklog)
				}
			}},
		{"backlog upper clamp", hostWith(2, 1<<40),
			func(t Target) Target { t.Conns = 4 << 20; return t },
			func(t *testing.T, b Budgets) {
				if b.Backlog != MaxBacklog {
					t.Errorf("backlog %d, want %d", b.Backlog, MaxBacklog)
				}
			}},
		{"one in flight", hostWith(2, 1<<30),
			func(t Target) Target { t.InflightMsgs = 1; return t },
			func(t *testing.T, b Budgets) {
				if b.OutQueueMsgs != 4 || b.OutQueueBytes != 2*MinBudgetBytes || b.ReadBudgetBytes != MinBudgetBytes {
					t.Errorf("out-queue %d msgs %d bytes, read %d", b.OutQueueMsgs, b.OutQueueBytes, b.ReadBudgetBytes)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			target := base
			if tc.target != nil {
				target = tc.target(base)
			}
			b, err := Compute(tc.host, target)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, b)
			tc.check(t, b)
		})
	}
}

// checkInvariants holds for every plan.
func checkInvariants(t *testing.T, b Budgets) {
	t.Helper()
	if b.MaxConnsLow >= b.MaxConns && b.MaxConns > 1 {
		t.Errorf("MaxConnsLow %d >= MaxConns %d", b.MaxConnsLow, b.MaxConns)
	}
	if !(0 < b.OutQueueLowBytes && b.OutQueueLowBytes < b.OutQueueHighBytes && b.OutQueueHighBytes <= b.OutQueueBytes) {
		t.Errorf("out-queue watermarks out of order: %d < %d <= %d", b.OutQueueLowBytes, b.OutQueueHighBytes, b.OutQueueBytes)
	}
	if b.OutQueueBytes < 2*b.ReadBudgetBytes {
		t.Errorf("out-queue %d cannot hold the replies to one read of %d above its high watermark", b.OutQueueBytes, b.ReadBudgetBytes)
	}
	if b.ReadBufferBytes < b.ReadBudgetBytes {
		t.Errorf("read buffer %d below read budget %d", b.ReadBufferBytes, b.ReadBudgetBytes)
	}
	for _, v := range []int{b.OutQueueMsgs, b.ReadBudgetBytes, b.FlushBudgetBytes, b.Backlog} {
		if v <= 0 {
			t.Errorf("a budget is not positive: %+v", b)
		}
	}
	if b.OutQueueMsgs&(b.OutQueueMsgs-1) != 0 {
		t.Errorf("out-queue msgs %d is not a power of two", b.OutQueueMsgs)
	}
	if b.NoFileNeeded <= int64(b.MaxConns) {
		t.Errorf("nofile %d does not cover %d connections", b.NoFileNeeded, b.MaxConns)
	}
	if b.MemLimitBytes > 0 && b.MaxQueuedBytes > b.MemLimitBytes {
		t.Errorf("queued-bytes cap %d above the memory share %d", b.MaxQueuedBytes, b.MemLimitBytes)
	}
	if len(b.Reasons) == 0 {
		t.Errorf("no reasons")
	}
	for _, r := range b.Reasons {
		if r.Why == "" || budgetValue(b, r.Name) == "?" {
			t.Errorf("reason for %s is empty or names no budget", r.Name)
		}
	}
}

func equalBudgets(a, b Budgets) bool {
	a.Reasons, b.Reasons, a.Warnings, b.Warnings = nil, nil, nil, nil
	return reflect.DeepEqual(a, b)
}

func hasWarning(ws []string, sub string) bool {
	for _, w := range ws {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

func TestTargetValidate(t *testing.T) {
	good := DefaultTarget
	if err := good.Validate(); err != nil {
		t.Fatalf("default target: %v", err)
	}
	bad := []func(*Target){
		func(t *Target) { t.Conns = 0 },
		func(t *Target) { t.Conns = maxTargetConns + 1 },
		func(t *Target) { t.MsgBytes = 0 },
		func(t *Target) { t.InflightMsgs = -1 },
		func(t *Target) { t.MemShare = 0 },
		func(t *Target) { t.MemShare = 1.5 },
		func(t *Target) { t.MemShare = nan() },
		func(t *Target) { t.MemBytes = -1 },
		func(t *Target) { t.ConnRatePerSec = -1 },
		func(t *Target) { t.MsgRatePerSec = nan() },
	}
	for i, f := range bad {
		tg := good
		f(&tg)
		if err := tg.Validate(); !errors.Is(err, ErrInvalidTarget) {
			t.Errorf("%d: Validate(%+v) = %v, want ErrInvalidTarget", i, tg, err)
		}
		if _, err := Compute(hostWith(1, 1<<30), tg); !errors.Is(err, ErrInvalidTarget) {
			t.Errorf("%d: Compute err = %v, want ErrInvalidTarget", i, err)
		}
	}
}

func nan() float64 {
	var zero float64
	return zero / zero
}
