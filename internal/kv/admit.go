package kv

import (
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/protocol/envelope"
	"github.com/sluicenet/sluice/protocol/resp"
	"github.com/sluicenet/sluice/server"
)

// maxTenantKeyBytes is room for any tenant key on the stack: a tag, the
// longest envelope tenant, or an IPv6 address.
const maxTenantKeyBytes = 1 + envelope.MaxTenantBytes

// TenantAdmitter is a server.FrameAdmitter that charges every frame to its
// tenant's quota in an admission.TenantLimiter (GCRA): the envelope's
// tenant field when Envelope is set and the frame names one, else the
// peer's IP address. A frame over quota is refused with reason "tenant"
// and the limiter's exact retry-after, which the kv codecs turn into
// "-ERR sluice: too many requests ..." or a StatusTooManyRequests reject.
//
// Frames the handler will refuse anyway (an envelope that does not parse,
// the whole-buffer frame RESPCodec passes on a framing error) are admitted
// uncharged, so the handler answers them and, for RESP, closes the
// connection instead of leaving it out of step.
//
// The limiter's clock is the engine's loop clock, anchored at the wall
// time NewTenantAdmitter ran; it does not allocate per frame. A
// TenantAdmitter is safe for concurrent use.
type TenantAdmitter struct {
	limiter  *admission.TenantLimiter
	envelope bool
	base     time.Time
}

// NewTenantAdmitter returns an admitter over limiter; envelope says frames
// are envelopes (else RESP). Create it just before the engine, so the loop
// clock and the wall clock Sweep uses agree to within milliseconds.
func NewTenantAdmitter(limiter *admission.TenantLimiter, envelope bool) *TenantAdmitter {
	return &TenantAdmitter{limiter: limiter, envelope: envelope, base: time.Now()}
}

// AdmitFrame implements server.FrameAdmitter.
func (a *TenantAdmitter) AdmitFrame(c *server.Conn, frame []byte, nowNanos int64) server.Verdict {
	var buf [maxTenantKeyBytes]byte
	key := buf[:0]
	if a.envelope {
		var m envelope.Message
		if envelope.Parse(frame, &m) != nil {
			return server.Verdict{}
		}
		if len(m.Tenant) > 0 {
			key = admission.AppendTenantKey(key, m.Tenant)
		}
	} else if _, n, err := (resp.Codec{}).Decode(frame); err != nil || n != len(frame) {
		return server.Verdict{}
	}
	if len(key) == 0 {
		key = admission.AppendIPKey(key, c.RemoteAddrPort().Addr())
	}
	d := a.limiter.Allow(a.base.Add(time.Duration(nowNanos)), key)
	if d.Allowed {
		return server.Verdict{}
	}
	return server.Verdict{Reject: true, Reason: admission.ReasonTenant.String(), RetryAfter: d.RetryAfter}
}

// Sweep drops idle tenants from the limiter (see TenantLimiter.Sweep);
// call it from a timer with the wall clock.
func (a *TenantAdmitter) Sweep(now time.Time, maxShards int) int {
	return a.limiter.Sweep(now, maxShards)
}
