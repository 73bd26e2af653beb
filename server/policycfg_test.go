package server

import (
	"testing"

	"github.com/sluicenet/sluice/admission"
)

// TestPolicyBudgetsReachEngine: with a Policy, the engine takes the
// Admitter's MaxConns and MaxQueuedBytes as its own exact caps unless the
// Config sets them, and the Config's values win when it does.
func TestPolicyBudgetsReachEngine(t *testing.T) {
	b := admission.GlobalBudgets{MaxConns: 10, MaxQueuedBytes: 1 << 20, MemoryLimitBytes: -1}
	adm := newAdmitter(t, admission.Config{Loops: 1, Budgets: b})
	if got := adm.Budgets(); got.MaxConns != 10 || got.MaxQueuedBytes != 1<<20 {
		t.Fatalf("Admitter.Budgets() = %+v", got)
	}
	e, err := New(Config{Loops: 1, Policy: AdmissionPolicy{Admitter: adm}}, HandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	if e.cfg.MaxConns != 10 || e.cfg.MaxConnsLow != 9 || e.cfg.MaxQueuedBytes != 1<<20 {
		t.Errorf("derived MaxConns %d MaxConnsLow %d MaxQueuedBytes %d, want 10, 9, %d",
			e.cfg.MaxConns, e.cfg.MaxConnsLow, e.cfg.MaxQueuedBytes, 1<<20)
	}
	adm2 := newAdmitter(t, admission.Config{Loops: 1, Budgets: b})
	e2, err := New(Config{Loops: 1, MaxConns: 20, MaxQueuedBytes: 4096, Policy: AdmissionPolicy{Admitter: adm2}}, HandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	if e2.cfg.MaxConns != 20 || e2.cfg.MaxQueuedBytes != 4096 {
		t.Errorf("explicit MaxConns %d MaxQueuedBytes %d, want 20 and 4096", e2.cfg.MaxConns, e2.cfg.MaxQueuedBytes)
	}
}
