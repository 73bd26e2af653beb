package kv

import (
	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/protocol/envelope"
	"github.com/sluicenet/sluice/protocol/resp"
	"github.com/sluicenet/sluice/server"
)

// TenantPolicy returns the engine's admission policy for a per-tenant
// quota in limiter (GCRA): every frame is charged to its tenant, the
// envelope's tenant field when env is set and the frame names one, else
// the peer's IP address. A frame over quota is refused with reason
// "tenant" and the limiter's exact retry-after, which the codecs turn into
// "-ERR sluice: too many requests ..." or a StatusTooManyRequests reject.
// The Admitter sweeps idle tenants from the limiter as it ticks, and has
// no memory budget (kv's Store has its own bounds).
//
// Frames the handler will refuse anyway (an envelope that does not parse,
// the whole-buffer frame resp.ServerCodec passes on a framing error) are admitted
// uncharged, so the handler answers them and, for RESP, closes the
// connection instead of leaving it out of step.
func TenantPolicy(limiter *admission.TenantLimiter, env bool) (server.AdmissionPolicy, error) {
	adm, err := admission.NewAdmitter(admission.Config{Tenants: limiter, MemoryLimitBytes: -1})
	if err != nil {
		return server.AdmissionPolicy{}, err
	}
	p := server.AdmissionPolicy{Admitter: adm, Classify: classifyRESP}
	if env {
		p.Classify = classifyEnvelope
	}
	return p, nil
}

// classifyEnvelope charges an envelope to its tenant field when it names
// one (f.Tenant holds the peer's key otherwise), gives the frame the
// envelope's priority, and admits one that does not parse uncharged. It
// does not allocate.
func classifyEnvelope(_ *server.Conn, frame []byte, f *admission.Frame) {
	var m envelope.Message
	if envelope.Parse(frame, &m) != nil {
		f.Tenant = nil
		return
	}
	if len(m.Tenant) > 0 {
		f.Tenant = admission.AppendTenantKey(f.Tenant[:0], m.Tenant)
	}
	f.Priority = admissionPriority(m.Priority)
}

// admissionPriority maps the envelope's four classes onto the engine's
// three: low and background work are both refused first.
func admissionPriority(p envelope.Priority) admission.Priority {
	switch p {
	case envelope.PriorityCritical:
		return admission.PriorityCritical
	case envelope.PriorityLow, envelope.PriorityBackground:
		return admission.PriorityBestEffort
	}
	return admission.PriorityNormal
}

// classifyRESP admits a frame that is not one whole RESP command (a
// framing error resp.ServerCodec passed through) uncharged.
func classifyRESP(_ *server.Conn, frame []byte, f *admission.Frame) {
	if _, n, err := (resp.Codec{}).Decode(frame); err != nil || n != len(frame) {
		f.Tenant = nil
	}
}
