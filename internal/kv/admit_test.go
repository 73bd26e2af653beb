package kv

import (
	"testing"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/protocol/envelope"
)

// TestClassifyEnvelopePriority: an envelope's priority becomes the frame's
// admission priority (low and background both best-effort), and its tenant
// field the frame's tenant.
func TestClassifyEnvelopePriority(t *testing.T) {
	for _, c := range []struct {
		in   envelope.Priority
		want admission.Priority
	}{
		{envelope.PriorityCritical, admission.PriorityCritical},
		{envelope.PriorityNormal, admission.PriorityNormal},
		{envelope.PriorityLow, admission.PriorityBestEffort},
		{envelope.PriorityBackground, admission.PriorityBestEffort},
	} {
		m := envelope.Message{Type: envelope.TypeRequest, RequestID: 7, Priority: c.in, Method: []byte("GET"), Tenant: []byte("acme")}
		frame, err := m.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		f := admission.Frame{Priority: admission.PriorityNormal}
		classifyEnvelope(nil, frame, &f)
		if f.Priority != c.want {
			t.Errorf("envelope %v: admission priority %v, want %v", c.in, f.Priority, c.want)
		}
		if want := admission.AppendTenantKey(nil, []byte("acme")); string(f.Tenant) != string(want) {
			t.Errorf("envelope %v: tenant %q, want %q", c.in, f.Tenant, want)
		}
	}
}
