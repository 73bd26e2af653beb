package admission

import (
	"fmt"
	"math"
	"time"
)

// Watermark is a High/Low pair with a minimum dwell time that turns a
// continuous value (a pressure, a byte count, a lag) into a two-state signal
// that cannot flap.
//
// The signal turns hot as soon as the value reaches High: protection is never
// delayed. It turns cold only after the value has stayed at or below Low for
// MinDwell without interruption; any observation above Low restarts that
// wait. So a hot period lasts at least MinDwell, a full hot→cold→hot cycle
// takes at least MinDwell, and a value oscillating around one threshold (or
// between the two) cannot produce more than two transitions per MinDwell.
// The band between Low and High keeps the current state.
type Watermark struct {
	// High is the value at or above which the signal turns hot.
	High float64
	// Low is the value at or below which the signal may turn cold.
	Low float64
	// MinDwell is how long the value must stay at or below Low before the
	// signal turns cold. Zero turns cold on the first low observation.
	MinDwell time.Duration
}

// Validate reports whether w can provide hysteresis: finite values with
// Low <= High and a non-negative dwell.
func (w Watermark) Validate() error {
	switch {
	case math.IsNaN(w.High) || math.IsNaN(w.Low) || math.IsInf(w.High, 0) || math.IsInf(w.Low, 0):
		return fmt.Errorf("%w: non-finite High %v or Low %v", ErrBadWatermark, w.High, w.Low)
	case w.Low > w.High:
		return fmt.Errorf("%w: Low %v above High %v", ErrBadWatermark, w.Low, w.High)
	case w.MinDwell < 0:
		return fmt.Errorf("%w: negative MinDwell %v", ErrBadWatermark, w.MinDwell)
	}
	return nil
}

// Hysteresis is the state of one Watermark signal. It is a small value type
// so that it can be embedded per connection. It is not safe for concurrent
// use: one owner calls Update. Build it with NewHysteresis; the zero value has
// High = Low = 0 and is hot for every non-negative value.
type Hysteresis struct {
	w          Watermark
	hot        bool
	below      bool  // hot and the value has stayed <= Low since belowSince
	belowSince int64 // nanos
}

// NewHysteresis returns a cold signal driven by w.
func NewHysteresis(w Watermark) (Hysteresis, error) {
	if err := w.Validate(); err != nil {
		return Hysteresis{}, err
	}
	return Hysteresis{w: w}, nil
}

// Update feeds the value observed at now and returns the resulting state and
// whether this observation changed it. A NaN value carries no information and
// leaves the state unchanged. Times must not go backwards; a time earlier
// than the previous one counts as no time passing.
func (h *Hysteresis) Update(now time.Time, value float64) (hot, changed bool) {
	if math.IsNaN(value) {
		return h.hot, false
	}
	t := nanos(now)
	if !h.hot {
		if value >= h.w.High {
			h.hot, h.below = true, false
			return true, true
		}
		return false, false
	}
	if value > h.w.Low {
		h.below = false
		return true, false
	}
	if !h.below {
		h.below, h.belowSince = true, t
	}
	if t-h.belowSince >= int64(h.w.MinDwell) {
		h.hot, h.below = false, false
		return false, true
	}
	return true, false
}

// Hot reports the current state.
func (h *Hysteresis) Hot() bool { return h.hot }

// Watermark returns the configuration.
func (h *Hysteresis) Watermark() Watermark { return h.w }
