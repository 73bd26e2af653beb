package kv

import (
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/sluicenet/sluice/protocol/resp"
)

// Defaults for zero Config fields.
const (
	// DefaultShards is the number of independently locked shards: enough
	// that the event loops and workers of a small machine rarely meet on
	// one lock.
	DefaultShards = 64
	// DefaultMaxKeys bounds the number of keys (1,048,576).
	DefaultMaxKeys = 1 << 20
	// DefaultMaxBytes bounds keys plus values plus a fixed per-entry
	// overhead (256 MiB).
	DefaultMaxBytes = 256 << 20
	// DefaultMaxValueBytes bounds one value (512 KiB), below the engine's
	// default input buffer so that a SET of the largest value still fits
	// one frame.
	DefaultMaxValueBytes = 512 << 10

	// entryOverheadBytes is what one entry costs beyond its key and value
	// bytes (map slot, string and slice headers, the entry, allocator
	// rounding), for the MaxBytes budget.
	entryOverheadBytes = 96
	// maxShards bounds Config.Shards.
	maxShards = 1 << 16
)

// Config bounds a Store. The zero value takes the defaults above.
type Config struct {
	// Shards is the number of shards, rounded up to a power of two.
	// Default 64.
	Shards int
	// MaxKeys is the key budget: a write that would add a key beyond it
	// fails with ErrStoreFull. Default 1,048,576.
	MaxKeys int
	// MaxBytes is the memory budget for keys, values and per-entry
	// overhead: a write that would pass it fails with ErrStoreFull.
	// Default 256 MiB.
	MaxBytes int64
	// MaxValueBytes bounds one value: a longer write fails with
	// ErrValueTooLarge. Default 512 KiB.
	MaxValueBytes int
}

func (c Config) withDefaults() Config {
	if c.Shards == 0 {
		c.Shards = DefaultShards
	}
	if c.MaxKeys == 0 {
		c.MaxKeys = DefaultMaxKeys
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.MaxValueBytes == 0 {
		c.MaxValueBytes = DefaultMaxValueBytes
	}
	return c
}

// Validate reports negative or out-of-range fields.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Shards < 1 || c.Shards > maxShards:
		return fmt.Errorf("%w: Shards = %d: must be in [1, %d]", ErrInvalidConfig, c.Shards, maxShards)
	case c.MaxKeys < 1:
		return fmt.Errorf("%w: MaxKeys = %d: must be positive", ErrInvalidConfig, c.MaxKeys)
	case c.MaxBytes < 1:
		return fmt.Errorf("%w: MaxBytes = %d: must be positive", ErrInvalidConfig, c.MaxBytes)
	case c.MaxValueBytes < 1:
		return fmt.Errorf("%w: MaxValueBytes = %d: must be positive", ErrInvalidConfig, c.MaxValueBytes)
	}
	return nil
}

// Store is an in-memory map from byte-string keys to byte-string values
// with optional expiry, split into shards each under its own RWMutex. It
// knows nothing of protocols or connections. Time is passed in as unix
// nanoseconds (now) so expiry is testable without sleeping; expired keys
// are invisible at once and removed by the next write to them or by Sweep.
//
// Values are copied once on write; an overwrite with a value of similar
// size reuses the old buffer, so the steady SET and GET paths do not
// allocate. Readers copy values out under the shard's read lock (Get
// appends them to the caller's buffer), so no caller ever holds a
// reference into the store. A Store is safe for concurrent use.
type Store struct {
	cfg    Config
	seed   maphash.Seed
	mask   uint64
	shards []shard

	keys     atomic.Int64 // entries, expired ones not yet removed included
	bytes    atomic.Int64 // accounted bytes of all entries
	refusals atomic.Uint64
	expired  atomic.Uint64
}

// shard is one lock and its map, padded so neighbouring locks do not share
// a cache line.
type shard struct {
	mu sync.RWMutex
	m  map[string]*entry
	_  [64 - 8 - 24]byte
}

// entry is one stored value. val's capacity is what the byte budget counts.
type entry struct {
	val      []byte
	expireAt int64 // unix nanoseconds; 0: never
}

func (e *entry) live(now int64) bool { return e.expireAt == 0 || now < e.expireAt }

// NewStore returns an empty store bounded by cfg.
func NewStore(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	n := 1 << bits.Len(uint(cfg.Shards-1))
	s := &Store{cfg: cfg, seed: maphash.MakeSeed(), mask: uint64(n - 1), shards: make([]shard, n)}
	for i := range s.shards {
		s.shards[i].m = make(map[string]*entry)
	}
	return s, nil
}

func (s *Store) shard(key []byte) *shard {
	return &s.shards[maphash.Bytes(s.seed, key)&s.mask]
}

// Get appends the value of key to dst, through enc when it is not nil
// (for example resp.AppendBulk, so the reply is encoded straight from the
// store), and reports whether key exists at now. Without the key dst is
// returned unchanged. It does not allocate when dst has room.
func (s *Store) Get(dst, key []byte, now int64, enc func(dst, v []byte) []byte) ([]byte, bool) {
	sh := s.shard(key)
	sh.mu.RLock()
	e := sh.m[string(key)]
	if e == nil || !e.live(now) {
		sh.mu.RUnlock()
		return dst, false
	}
	if enc != nil {
		dst = enc(dst, e.val)
	} else {
		dst = append(dst, e.val...)
	}
	sh.mu.RUnlock()
	return dst, true
}

// Exists reports whether key exists at now.
func (s *Store) Exists(key []byte, now int64) bool {
	sh := s.shard(key)
	sh.mu.RLock()
	e := sh.m[string(key)]
	ok := e != nil && e.live(now)
	sh.mu.RUnlock()
	return ok
}

// SetOptions are SET's conditions and expiry.
type SetOptions struct {
	// ExpireAt is the absolute expiry in unix nanoseconds; 0 means none
	// (an existing expiry is cleared unless KeepTTL).
	ExpireAt int64
	// KeepTTL keeps an existing key's expiry.
	KeepTTL bool
	// NX writes only if the key does not exist; XX only if it does.
	NX, XX bool
}

// Set stores a copy of val under key at now, subject to o, and reports
// whether it wrote (false when NX or XX said no). It fails with
// ErrValueTooLarge or ErrStoreFull and then changes nothing.
func (s *Store) Set(key, val []byte, now int64, o SetOptions) (bool, error) {
	if len(val) > s.cfg.MaxValueBytes {
		return false, ErrValueTooLarge
	}
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.m[string(key)]
	if e != nil && !e.live(now) {
		s.removeLocked(sh, key, e)
		s.expired.Add(1)
		e = nil
	}
	if (o.NX && e != nil) || (o.XX && e == nil) {
		return false, nil
	}
	if e == nil {
		return true, s.insertLocked(sh, key, val, o.ExpireAt)
	}
	if err := s.overwrite(e, val); err != nil {
		return false, err
	}
	if !o.KeepTTL {
		e.expireAt = o.ExpireAt
	}
	return true, nil
}

// reuse reports whether a buffer of capacity c may hold a value of n
// bytes: big enough, and not so big that a shrunken value pins memory.
func reuse(c, n int) bool { return n <= c && c <= 2*n+64 }

// overwrite replaces e's value, reusing its buffer when the size allows.
func (s *Store) overwrite(e *entry, val []byte) error {
	if reuse(cap(e.val), len(val)) {
		e.val = append(e.val[:0], val...)
		return nil
	}
	grow := int64(len(val)) - int64(cap(e.val))
	if grow > 0 && !s.reserve(0, grow) {
		return ErrStoreFull
	}
	if grow < 0 {
		s.bytes.Add(grow)
	}
	e.val = append(make([]byte, 0, len(val)), val...)
	return nil
}

// insertLocked adds a new entry within the budgets.
func (s *Store) insertLocked(sh *shard, key, val []byte, expireAt int64) error {
	if !s.reserve(1, int64(len(key)+len(val)+entryOverheadBytes)) {
		return ErrStoreFull
	}
	sh.m[string(key)] = &entry{val: append(make([]byte, 0, len(val)), val...), expireAt: expireAt}
	return nil
}

// reserve charges keys and bytes to the budgets, or charges nothing and
// returns false when either would pass its limit.
func (s *Store) reserve(keys, nbytes int64) bool {
	if keys > 0 && s.keys.Add(keys) > int64(s.cfg.MaxKeys) {
		s.keys.Add(-keys)
		s.refusals.Add(1)
		return false
	}
	if s.bytes.Add(nbytes) > s.cfg.MaxBytes {
		s.bytes.Add(-nbytes)
		s.keys.Add(-keys)
		s.refusals.Add(1)
		return false
	}
	return true
}

// removeLocked deletes key's entry e and returns its budget.
func (s *Store) removeLocked(sh *shard, key []byte, e *entry) {
	delete(sh.m, string(key))
	s.keys.Add(-1)
	s.bytes.Add(-int64(len(key) + cap(e.val) + entryOverheadBytes))
}

// Delete removes key and reports whether it existed at now.
func (s *Store) Delete(key []byte, now int64) bool {
	sh := s.shard(key)
	sh.mu.Lock()
	e := sh.m[string(key)]
	if e != nil {
		s.removeLocked(sh, key, e)
		if !e.live(now) {
			s.expired.Add(1)
			e = nil
		}
	}
	sh.mu.Unlock()
	return e != nil
}

// maxIntDigits is the longest decimal int64, "-9223372036854775808".
const maxIntDigits = 20

// Incr adds delta to the integer stored at key (a missing key counts as 0
// and is created without expiry; an existing expiry is kept) and returns
// the new value. It fails with ErrNotInteger when the value is not a
// canonical base-10 int64, ErrOverflow when the sum does not fit, or
// ErrStoreFull; on failure nothing changes.
func (s *Store) Incr(key []byte, delta, now int64) (int64, error) {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.m[string(key)]
	if e != nil && !e.live(now) {
		s.removeLocked(sh, key, e)
		s.expired.Add(1)
		e = nil
	}
	var cur int64
	if e != nil {
		v, ok := resp.ParseInt(e.val)
		if !ok {
			return 0, ErrNotInteger
		}
		cur = v
	}
	if (delta > 0 && cur > math.MaxInt64-delta) || (delta < 0 && cur < math.MinInt64-delta) {
		return 0, ErrOverflow
	}
	cur += delta
	var buf [maxIntDigits]byte
	digits := strconv.AppendInt(buf[:0], cur, 10)
	if e == nil {
		return cur, s.insertLocked(sh, key, digits, 0)
	}
	if cap(e.val) >= len(digits) {
		e.val = append(e.val[:0], digits...) // an integer never pins much memory
		return cur, nil
	}
	return cur, s.overwrite(e, digits)
}

// Sweep removes up to maxPerShard expired entries from each shard (a
// Go map iteration starts at a random place, so repeated sweeps sample the
// whole map, as redis's active expiry does) and returns how many it
// removed. A non-positive maxPerShard means no limit.
func (s *Store) Sweep(now int64, maxPerShard int) int {
	removed := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		seen := 0
		for k, e := range sh.m {
			if maxPerShard > 0 && seen >= maxPerShard {
				break
			}
			seen++
			if !e.live(now) {
				delete(sh.m, k)
				s.keys.Add(-1)
				s.bytes.Add(-int64(len(k) + cap(e.val) + entryOverheadBytes))
				removed++
			}
		}
		sh.mu.Unlock()
	}
	s.expired.Add(uint64(removed))
	return removed
}

// StoreStats is a snapshot of a Store's gauges and counters.
type StoreStats struct {
	Keys     int64  // entries, expired ones not yet removed included
	Bytes    int64  // keys + values + per-entry overhead, against MaxBytes
	Refusals uint64 // writes refused with ErrStoreFull
	Expired  uint64 // expired entries removed
}

// Stats returns a snapshot of the store's counters. It takes no lock.
func (s *Store) Stats() StoreStats {
	return StoreStats{Keys: s.keys.Load(), Bytes: s.bytes.Load(), Refusals: s.refusals.Load(), Expired: s.expired.Load()}
}
