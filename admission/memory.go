package admission

import (
	"runtime/metrics"
	"time"
)

// Runtime metrics that together give the memory the GC counts against
// GOMEMLIMIT: everything the runtime has mapped minus heap returned to the OS.
const (
	metricTotalBytes    = "/memory/classes/total:bytes"
	metricReleasedBytes = "/memory/classes/heap/released:bytes"
)

// MemorySampler reads the Go runtime's memory use through runtime/metrics at
// most once per interval, with time passed in, so that it can be called every
// loop turn without paying for a metrics read per message. It is not safe for
// concurrent use; the zero value is not usable, use NewMemorySampler.
type MemorySampler struct {
	every   int64
	last    int64
	sampled bool
	value   int64
	samples [2]metrics.Sample
}

// NewMemorySampler returns a sampler that refreshes at most once per every
// (a non-positive value refreshes on every call).
func NewMemorySampler(every time.Duration) *MemorySampler {
	m := &MemorySampler{every: int64(every)}
	m.samples[0].Name = metricTotalBytes
	m.samples[1].Name = metricReleasedBytes
	return m
}

// Sample returns the runtime memory in bytes as of the latest refresh and
// whether this call refreshed it. It does not allocate.
func (m *MemorySampler) Sample(now time.Time) (bytes int64, fresh bool) {
	t := nanos(now)
	if m.sampled && t-m.last < m.every {
		return m.value, false
	}
	metrics.Read(m.samples[:])
	var total, released uint64
	if m.samples[0].Value.Kind() == metrics.KindUint64 {
		total = m.samples[0].Value.Uint64()
	}
	if m.samples[1].Value.Kind() == metrics.KindUint64 {
		released = m.samples[1].Value.Uint64()
	}
	v := int64(total - min(released, total))
	m.value, m.last, m.sampled = v, t, true
	return v, true
}
