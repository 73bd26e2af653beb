package server

import (
	"errors"
	"testing"

	"github.com/sluicenet/sluice/admission"
)

// TestEngineCapsReachAdmitter: the engine owns its loop count and the caps
// it enforces (MaxConns, MaxQueuedBytes); New hands them to the policy's
// Admitter (admission.Binding), whose budgets then derive from them, and
// an Admitter serves one engine.
func TestEngineCapsReachAdmitter(t *testing.T) {
	adm := newAdmitter(t, admission.Config{MaxInflightReqs: 5, MemoryLimitBytes: -1})
	e, err := New(Config{Loops: 3, MaxConns: 10, MaxQueuedBytes: 1 << 20, Admission: AdmissionPolicy{Admitter: adm}}, HandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	want := admission.GlobalBudgets{MaxConns: 10, MaxInflightReqs: 5, MaxQueuedBytes: 1 << 20, MemoryLimitBytes: -1}
	if got := adm.Budgets(); got != want {
		t.Errorf("Admitter.Budgets() = %+v, want %+v", got, want)
	}
	if adm.Loop(2) == nil || adm.Loop(3) != nil {
		t.Error("the Admitter does not have exactly the engine's 3 loop handles")
	}
	if e.cfg.MaxConns != 10 || e.cfg.MaxConnsLow != 9 || e.cfg.MaxQueuedBytes != 1<<20 {
		t.Errorf("MaxConns %d MaxConnsLow %d MaxQueuedBytes %d, want 10, 9, %d",
			e.cfg.MaxConns, e.cfg.MaxConnsLow, e.cfg.MaxQueuedBytes, 1<<20)
	}
	if _, err := New(Config{Loops: 1, Admission: AdmissionPolicy{Admitter: adm}}, HandlerFuncs{}); !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, admission.ErrBound) {
		t.Errorf("a second engine on the same Admitter: %v, want ErrInvalidConfig wrapping admission.ErrBound", err)
	}
}
