package ratelog

import (
	"context"
	"log/slog"
	"sort"
	"time"
)

// SuppressedKey is the attribute added to the first record that passes
// after others with the same message were suppressed.
const SuppressedKey = "suppressed"

// OverflowMessage is the message of a Flush summary for records whose
// messages shared an overflow bucket (more distinct messages than MaxKeys).
const OverflowMessage = "ratelog: records with untracked messages suppressed"

// Handler is a slog.Handler that passes records to another handler at most
// Options.Burst at once and Options.Burst per Options.Interval per distinct
// message, and drops the rest. The first record of a message that passes
// after some were dropped carries suppressed=K. Handlers derived with
// WithAttrs and WithGroup share their parent's limits. A Handler is safe for
// concurrent use; dropping a record does not allocate.
type Handler struct {
	next slog.Handler
	lim  *Limiter
	now  func() time.Time
}

// New wraps next. It fails only on invalid Options (ErrInvalidOptions).
func New(next slog.Handler, o Options) (*Handler, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	lim, err := NewLimiter(o)
	if err != nil {
		return nil, err
	}
	return &Handler{next: next, lim: lim, now: o.Now}, nil
}

// Enabled reports whether the wrapped handler handles level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle passes r to the wrapped handler unless its message is over its
// rate. A record that passes after suppressed ones carries suppressed=K.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	ok, n := h.lim.allow(r.Message, r.Level, h.now())
	if !ok {
		return nil
	}
	if n > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Uint64(SuppressedKey, n))
	}
	return h.next.Handle(ctx, r)
}

// WithAttrs returns a Handler over next.WithAttrs(attrs) sharing h's limits.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{next: h.next.WithAttrs(attrs), lim: h.lim, now: h.now}
}

// WithGroup returns a Handler over next.WithGroup(name) sharing h's limits.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), lim: h.lim, now: h.now}
}

// Flush emits, through this handler's wrapped handler, one summary record
// (message, level of the last drop, suppressed=K) for every message whose
// suppressed records no later record has reported, in message order. Call
// it from a ticker every Interval or so, and at shutdown, so a flood that
// stops is still accounted for. It returns the first error of the wrapped
// handler.
func (h *Handler) Flush(ctx context.Context) error {
	ps := h.lim.TakePending()
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Overflow != ps[j].Overflow {
			return !ps[i].Overflow
		}
		return ps[i].Message < ps[j].Message
	})
	now := h.now()
	var first error
	for _, p := range ps {
		msg := p.Message
		if p.Overflow {
			msg = OverflowMessage
		}
		if !h.next.Enabled(ctx, p.Level) {
			continue
		}
		r := slog.NewRecord(now, p.Level, msg, 0)
		r.AddAttrs(slog.Uint64(SuppressedKey, p.Suppressed))
		if err := h.next.Handle(ctx, r); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Suppressed returns how many records all handlers sharing these limits
// have dropped, for a metric.
func (h *Handler) Suppressed() uint64 { return h.lim.Suppressed() }
