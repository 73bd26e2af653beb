package admission

import (
	"context"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// memShards is the number of independently locked shards of a MemoryStore.
const memShards = 16

// memEntryOverhead approximates the bytes one entry costs beyond its key and
// response (struct, map slot, string header), charged against MaxBytes.
const memEntryOverhead = 160

// evictScan is how many entries from the cold end of a shard's LRU list an
// insertion inspects for one it may drop.
const evictScan = 16

// MemoryStore is the in-memory idempotency Store for one process: sharded
// maps with an LRU list per shard, a hard cap on keys and on bytes, a TTL for
// outcomes and a lease for claims. Eviction takes the least recently used
// entry that is finished or expired; an in-progress claim is never evicted
// (that would let a duplicate run twice), so a store full of in-progress
// claims refuses new ones with ErrStoreFull. It is safe for concurrent use
// and never blocks on anything but its shard lock. Use NewMemoryStore.
type MemoryStore struct {
	cfg    StoreConfig
	seed   maphash.Seed
	shards [memShards]memShard
	token  atomic.Uint64

	claims, replays, inProgress, mismatches, evictions, full atomic.Uint64
}

type memShard struct {
	mu       sync.Mutex
	m        map[string]*memEntry
	lru      memEntry // sentinel: lru.next is most recent, lru.prev least
	bytes    int64
	maxKeys  int
	maxBytes int64
}

type memEntry struct {
	key        string
	fp         Fingerprint
	token      uint64
	done       bool
	status     int
	response   []byte
	expires    int64
	prev, next *memEntry
}

// NewMemoryStore returns an empty store.
func NewMemoryStore(cfg StoreConfig) (*MemoryStore, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	perShard := cfg.MaxBytes / memShards
	if int64(cfg.MaxResponseBytes+cfg.MaxKeyBytes+memEntryOverhead) > perShard {
		return nil, fmt.Errorf("%w: MaxBytes %d too small for %d shards of MaxResponseBytes %d",
			ErrBadConfig, cfg.MaxBytes, memShards, cfg.MaxResponseBytes)
	}
	s := &MemoryStore{cfg: cfg, seed: maphash.MakeSeed()}
	s.token.Store(rand.Uint64() >> 1)
	for i := range s.shards {
		sh := &s.shards[i]
		sh.m = make(map[string]*memEntry)
		sh.lru.next, sh.lru.prev = &sh.lru, &sh.lru
		sh.maxKeys = max(1, cfg.MaxKeys/memShards)
		sh.maxBytes = perShard
	}
	return s, nil
}

func (s *MemoryStore) shard(key []byte) *memShard {
	return &s.shards[maphash.Bytes(s.seed, key)%memShards]
}

// Claim implements Store. It does not block and ignores ctx.
func (s *MemoryStore) Claim(_ context.Context, now time.Time, key []byte, fp Fingerprint) (Claim, error) {
	if err := s.cfg.CheckKey(key); err != nil {
		return Claim{}, err
	}
	t := nanos(now)
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.m[string(key)]
	if e != nil && e.expires <= t {
		sh.remove(e)
		e = nil
	}
	if e == nil {
		if !sh.makeRoom(t, 1, int64(len(key)+memEntryOverhead), &s.evictions) {
			s.full.Add(1)
			return Claim{}, ErrStoreFull
		}
		tok := s.nextToken()
		e = &memEntry{key: string(key), fp: fp, token: tok, expires: t + int64(s.cfg.InProgressTTL)}
		sh.insert(e)
		s.claims.Add(1)
		return Claim{State: ClaimNew, Token: tok}, nil
	}
	sh.touch(e)
	switch {
	case e.fp != fp:
		s.mismatches.Add(1)
		return Claim{State: ClaimMismatch}, nil
	case !e.done:
		s.inProgress.Add(1)
		return Claim{State: ClaimInProgress, RetryAfter: s.cfg.InProgressHint(time.Duration(e.expires - t))}, nil
	}
	s.replays.Add(1)
	return Claim{State: ClaimDone, Status: e.status, Response: e.response}, nil
}

// Finish implements Store: it copies response into the store.
func (s *MemoryStore) Finish(_ context.Context, now time.Time, key []byte, token uint64, status int, response []byte) error {
	if err := s.cfg.CheckKey(key); err != nil {
		return err
	}
	if len(response) > s.cfg.MaxResponseBytes {
		return ErrResponseTooLarge
	}
	t := nanos(now)
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.m[string(key)]
	if e == nil || e.done || e.token != token || e.expires <= t {
		return ErrNotOwner
	}
	// Charge the response first so that making room cannot evict e itself:
	// e is in progress and makeRoom never drops in-progress entries.
	if !sh.makeRoom(t, 0, int64(len(response)), &s.evictions) {
		s.full.Add(1)
		return ErrStoreFull
	}
	e.done, e.status, e.expires = true, status, t+int64(s.cfg.TTL)
	if len(response) > 0 {
		e.response = append([]byte(nil), response...)
	}
	sh.bytes += int64(len(response))
	sh.touch(e)
	return nil
}

// Abandon implements Store.
func (s *MemoryStore) Abandon(_ context.Context, now time.Time, key []byte, token uint64) error {
	if err := s.cfg.CheckKey(key); err != nil {
		return err
	}
	t := nanos(now)
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.m[string(key)]
	if e == nil || e.done || e.token != token || e.expires <= t {
		return ErrNotOwner
	}
	sh.remove(e)
	return nil
}

func (s *MemoryStore) nextToken() uint64 {
	for {
		if t := s.token.Add(1); t != 0 {
			return t
		}
	}
}

// makeRoom ensures addKeys more entries and addBytes more bytes fit,
// dropping expired or finished entries from the cold end of the LRU list. It
// reports false when only in-progress entries stand in the way.
func (sh *memShard) makeRoom(t int64, addKeys int, addBytes int64, evictions *atomic.Uint64) bool {
	for len(sh.m)+addKeys > sh.maxKeys || sh.bytes+addBytes > sh.maxBytes {
		var victim *memEntry
		e := sh.lru.prev
		for i := 0; i < evictScan && e != &sh.lru; i, e = i+1, e.prev {
			if e.done || e.expires <= t {
				victim = e
				break
			}
		}
		if victim == nil {
			return false
		}
		sh.remove(victim)
		evictions.Add(1)
	}
	return true
}

func (sh *memShard) insert(e *memEntry) {
	sh.m[e.key] = e
	sh.bytes += int64(len(e.key) + memEntryOverhead)
	e.prev, e.next = &sh.lru, sh.lru.next
	e.next.prev = e
	sh.lru.next = e
}

func (sh *memShard) touch(e *memEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = &sh.lru, sh.lru.next
	e.next.prev = e
	sh.lru.next = e
}

func (sh *memShard) remove(e *memEntry) {
	delete(sh.m, e.key)
	sh.bytes -= int64(len(e.key) + memEntryOverhead + len(e.response))
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// MemoryStoreStats counts a MemoryStore's activity.
type MemoryStoreStats struct {
	// Keys and Bytes are the current size (Bytes includes the per-entry
	// overhead estimate).
	Keys  int
	Bytes int64
	// Claims counts ClaimNew; Replays ClaimDone; InProgress
	// ClaimInProgress; Mismatches ClaimMismatch.
	Claims, Replays, InProgress, Mismatches uint64
	// Evictions counts entries dropped to make room; Full counts claims
	// and finishes refused with ErrStoreFull.
	Evictions, Full uint64
}

// Stats returns the counters and current size.
func (s *MemoryStore) Stats() MemoryStoreStats {
	st := MemoryStoreStats{
		Claims: s.claims.Load(), Replays: s.replays.Load(), InProgress: s.inProgress.Load(),
		Mismatches: s.mismatches.Load(), Evictions: s.evictions.Load(), Full: s.full.Load(),
	}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		st.Keys += len(sh.m)
		st.Bytes += sh.bytes
		sh.mu.Unlock()
	}
	return st
}
