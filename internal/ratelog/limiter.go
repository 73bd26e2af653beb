package ratelog

import (
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"time"
)

// Defaults for the zero Options.
const (
	// DefaultBurst is how many records with one message pass at once.
	DefaultBurst = 10
	// DefaultInterval is the time over which a key's Burst refills.
	DefaultInterval = time.Minute
	// DefaultMaxKeys bounds the distinct messages tracked.
	DefaultMaxKeys = 1024
)

// shardCount spreads keys over independently locked shards, so goroutines
// logging different messages rarely contend.
const shardCount = 16

// Options configures a Limiter or Handler. The zero value lets DefaultBurst
// records per message through at once, refilling at DefaultBurst per
// DefaultInterval, over at most DefaultMaxKeys messages, on time.Now.
type Options struct {
	// Burst is how many records with the same message pass back to back
	// before suppression starts. Zero means DefaultBurst.
	Burst int
	// Interval is the time over which Burst tokens refill: in the steady
	// state at most Burst records per Interval pass per message. Zero means
	// DefaultInterval.
	Interval time.Duration
	// MaxKeys bounds the number of distinct messages tracked, so a flood of
	// distinct messages cannot grow memory. Past it, untracked messages
	// share one bucket per shard. Zero means DefaultMaxKeys.
	MaxKeys int
	// Now is the clock. Nil means time.Now. Tests pass a fake clock.
	Now func() time.Time
}

// withDefaults validates o and fills in the zero fields.
func (o Options) withDefaults() (Options, error) {
	if o.Burst < 0 || o.Interval < 0 || o.MaxKeys < 0 {
		return o, fmt.Errorf("%w: negative burst %d, interval %v or max keys %d", ErrInvalidOptions, o.Burst, o.Interval, o.MaxKeys)
	}
	if o.Burst == 0 {
		o.Burst = DefaultBurst
	}
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.MaxKeys == 0 {
		o.MaxKeys = DefaultMaxKeys
	}
	if o.Interval < time.Duration(o.Burst) {
		return o, fmt.Errorf("%w: interval %v is shorter than one nanosecond per record of burst %d", ErrInvalidOptions, o.Interval, o.Burst)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}

// entry is one message's bucket, in GCRA form: tat is the theoretical
// arrival time (nanoseconds since the limiter's epoch) of the next record
// at the steady rate.
type entry struct {
	tat        int64
	suppressed uint64
	level      slog.Level // of the last suppressed record, for Flush
}

type shard struct {
	mu       sync.Mutex
	keys     map[string]*entry
	overflow entry  // shared by keys that found the shard full
	total    uint64 // records suppressed in this shard, ever
}

// Limiter is a per-key token bucket (GCRA: one timestamp per key) with time
// passed in. It is safe for concurrent use. Allow on a tracked key does not
// allocate.
type Limiter struct {
	emission  int64 // nanoseconds between records at the steady rate
	tolerance int64 // how far ahead of now tat may run: the burst
	perShard  int
	epoch     time.Time
	seed      maphash.Seed
	shards    [shardCount]shard
}

// NewLimiter returns a Limiter for o. Its epoch is o.Now() at creation;
// Allow measures time from it (monotonically, when both times carry a
// monotonic reading, as time.Now's do).
func NewLimiter(o Options) (*Limiter, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	emission := int64(o.Interval) / int64(o.Burst)
	l := &Limiter{
		emission:  emission,
		tolerance: int64(o.Interval) - emission,
		perShard:  max(1, o.MaxKeys/shardCount),
		epoch:     o.Now(),
		seed:      maphash.MakeSeed(),
	}
	for i := range l.shards {
		l.shards[i].keys = make(map[string]*entry)
	}
	return l, nil
}

// Allow reports whether a record with key may pass at now. When it passes
// after others with the same key were suppressed, suppressed is how many
// were, and the count restarts from zero.
func (l *Limiter) Allow(key string, now time.Time) (ok bool, suppressed uint64) {
	return l.allow(key, slog.LevelInfo, now)
}

func (l *Limiter) allow(key string, level slog.Level, now time.Time) (bool, uint64) {
	t := int64(now.Sub(l.epoch))
	s := &l.shards[maphash.String(l.seed, key)%shardCount]
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.keys[key]
	if e == nil {
		e = s.insert(key, t, l.perShard)
	}
	tat := max(e.tat, t)
	if tat-t > l.tolerance {
		e.suppressed++
		e.level = level
		s.total++
		return false, 0
	}
	e.tat = tat + l.emission
	n := e.suppressed
	e.suppressed = 0
	return true, n
}

// insert adds key to a shard with room, first dropping entries that are
// back to a full bucket with nothing suppressed (they behave exactly like a
// new entry). A shard still full hands out its shared overflow entry.
func (s *shard) insert(key string, now int64, limit int) *entry {
	if len(s.keys) >= limit {
		for k, e := range s.keys {
			if e.tat <= now && e.suppressed == 0 {
				delete(s.keys, k)
			}
		}
		if len(s.keys) >= limit {
			return &s.overflow
		}
	}
	e := &entry{}
	s.keys[key] = e
	return e
}

// Pending is a message whose suppressed records have not been reported yet.
type Pending struct {
	// Message is the key.
	Message string
	// Level is the level of the last suppressed record.
	Level slog.Level
	// Suppressed is how many records were suppressed since the last one
	// that passed.
	Suppressed uint64
	// Overflow is true for the shared bucket of messages that found the
	// limiter full (MaxKeys); Message is then "".
	Overflow bool
}

// TakePending returns every key with suppressed records not yet reported
// and resets their counts, so a flood that stops is still accounted for.
// Keys that shared an overflow bucket are reported with Overflow set.
func (l *Limiter) TakePending() []Pending {
	var out []Pending
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		for k, e := range s.keys {
			if e.suppressed > 0 {
				out = append(out, Pending{Message: k, Level: e.level, Suppressed: e.suppressed})
				e.suppressed = 0
			}
		}
		if s.overflow.suppressed > 0 {
			out = append(out, Pending{Level: s.overflow.level, Suppressed: s.overflow.suppressed, Overflow: true})
			s.overflow.suppressed = 0
		}
		s.mu.Unlock()
	}
	return out
}

// Suppressed returns the number of records suppressed since the Limiter
// was made, for a metric.
func (l *Limiter) Suppressed() uint64 {
	var n uint64
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += s.total
		s.mu.Unlock()
	}
	return n
}

// Keys returns the number of distinct keys tracked now.
func (l *Limiter) Keys() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.keys)
		s.mu.Unlock()
	}
	return n
}
