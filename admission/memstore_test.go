package admission

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var bg = context.Background()

func fp(s string) Fingerprint { return FingerprintOf([]byte("PUT"), []byte(s)) }

func TestMemoryStoreLifecycle(t *testing.T) {
	s, err := NewMemoryStore(StoreConfig{TTL: time.Hour, InProgressTTL: 10 * time.Second, InProgressRetryAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("k1")
	c, err := s.Claim(bg, t0, key, fp("a"))
	if err != nil || c.State != ClaimNew || c.Token == 0 {
		t.Fatalf("first claim: %+v %v", c, err)
	}
	tok := c.Token
	type probe struct {
		at    time.Duration
		fp    Fingerprint
		state ClaimState
		retry time.Duration
	}
	// While in progress.
	for i, p := range []probe{
		{ms, fp("a"), ClaimInProgress, time.Second},
		{9500 * ms, fp("a"), ClaimInProgress, 500 * ms}, // capped at the lease left
		{ms, fp("b"), ClaimMismatch, 0},
	} {
		c, err := s.Claim(bg, at(p.at), key, p.fp)
		if err != nil || c.State != p.state || c.RetryAfter != p.retry {
			t.Errorf("in progress %d: %+v %v, want %v retry %v", i, c, err, p.state, p.retry)
		}
	}
	if err := s.Finish(bg, at(2*time.Second), key, tok+1, 201, []byte("x")); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("finish with a wrong token: %v", err)
	}
	resp := []byte("created")
	if err := s.Finish(bg, at(2*time.Second), key, tok, 201, resp); err != nil {
		t.Fatal(err)
	}
	resp[0] = 'X' // the store keeps its own copy
	if err := s.Finish(bg, at(2*time.Second), key, tok, 201, resp); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("second finish: %v", err)
	}
	c, _ = s.Claim(bg, at(3*time.Second), key, fp("a"))
	if c.State != ClaimDone || c.Status != 201 || string(c.Response) != "created" {
		t.Fatalf("replay: %+v", c)
	}
	if c, _ := s.Claim(bg, at(3*time.Second), key, fp("b")); c.State != ClaimMismatch {
		t.Fatalf("mismatch after done: %+v", c)
	}
	// TTL counts from Finish (2s): still there at 1h+1s, gone at 1h+2s.
	if c, _ := s.Claim(bg, at(time.Hour+time.Second), key, fp("a")); c.State != ClaimDone {
		t.Fatalf("before TTL: %+v", c)
	}
	if c, _ := s.Claim(bg, at(time.Hour+2*time.Second), key, fp("b")); c.State != ClaimNew {
		t.Fatalf("after TTL: %+v", c)
	}
	st := s.Stats()
	if st.Claims != 2 || st.Replays != 2 || st.InProgress != 2 || st.Mismatches != 2 || st.Keys != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestMemoryStoreLeaseAndAbandon(t *testing.T) {
	s, _ := NewMemoryStore(StoreConfig{InProgressTTL: time.Second})
	key := []byte("k")
	c1, _ := s.Claim(bg, t0, key, fp("a"))
	// The owner crashed: after the lease, a retry owns the key.
	c2, _ := s.Claim(bg, at(time.Second), key, fp("a"))
	if c2.State != ClaimNew || c2.Token == c1.Token {
		t.Fatalf("after lease: %+v", c2)
	}
	// The late original cannot finish over the new owner.
	if err := s.Finish(bg, at(time.Second+ms), key, c1.Token, 200, nil); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("late finish: %v", err)
	}
	if err := s.Abandon(bg, at(time.Second+ms), key, c1.Token); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("late abandon: %v", err)
	}
	// Abandon lets the next retry run.
	if err := s.Abandon(bg, at(time.Second+ms), key, c2.Token); err != nil {
		t.Fatal(err)
	}
	if c3, _ := s.Claim(bg, at(time.Second+2*ms), key, fp("a")); c3.State != ClaimNew {
		t.Fatalf("after abandon: %+v", c3)
	}
}

func TestMemoryStoreBounds(t *testing.T) {
	s, _ := NewMemoryStore(StoreConfig{MaxKeyBytes: 4, MaxResponseBytes: 8})
	if _, err := s.Claim(bg, t0, nil, fp("")); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("empty key: %v", err)
	}
	if _, err := s.Claim(bg, t0, []byte("12345"), fp("")); !errors.Is(err, ErrKeyTooLong) {
		t.Errorf("long key: %v", err)
	}
	c, _ := s.Claim(bg, t0, []byte("k"), fp(""))
	if err := s.Finish(bg, t0, []byte("k"), c.Token, 200, make([]byte, 9)); !errors.Is(err, ErrResponseTooLarge) {
		t.Errorf("large response: %v", err)
	}
	if _, err := NewMemoryStore(StoreConfig{MaxBytes: 1000}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("MaxBytes below one response per shard: %v", err)
	}
}

func TestMemoryStoreLRUAndHardCap(t *testing.T) {
	const maxKeys = 2 * memShards // two per shard
	s, _ := NewMemoryStore(StoreConfig{MaxKeys: maxKeys})
	now := t0
	// Fill with finished keys, touching key-0 so it stays recent.
	for i := range 1000 {
		k := fmt.Appendf(nil, "key-%d", i)
		c, err := s.Claim(bg, now, k, fp("p"))
		if err != nil || c.State != ClaimNew {
			t.Fatalf("claim %d: %+v %v", i, c, err)
		}
		if err := s.Finish(bg, now, k, c.Token, 200, []byte("ok")); err != nil {
			t.Fatal(err)
		}
		if c, _ := s.Claim(bg, now, []byte("key-0"), fp("p")); i > 0 && c.State != ClaimDone {
			t.Fatalf("after %d keys the most recently used key-0 was evicted: %+v", i, c)
		}
		if st := s.Stats(); st.Keys > maxKeys {
			t.Fatalf("%d keys > cap %d", st.Keys, maxKeys)
		}
	}
	if st := s.Stats(); st.Evictions < 1000-maxKeys {
		t.Fatalf("stats %+v", st)
	}
	// In-progress claims are never evicted: a store full of them refuses.
	s, _ = NewMemoryStore(StoreConfig{MaxKeys: memShards})
	full := 0
	var owners []Claim
	for i := range 200 {
		c, err := s.Claim(bg, now, fmt.Appendf(nil, "p-%d", i), fp("p"))
		switch {
		case errors.Is(err, ErrStoreFull):
			full++
		case err != nil:
			t.Fatal(err)
		default:
			owners = append(owners, c)
		}
	}
	if len(owners) != memShards || full != 200-memShards {
		t.Fatalf("owners %d, full %d", len(owners), full)
	}
	// Once the leases expire the space is reusable.
	if _, err := s.Claim(bg, now.Add(time.Minute), []byte("p-fresh"), fp("p")); err != nil {
		t.Fatalf("after leases expired: %v", err)
	}
}

func TestMemoryStoreByteBudget(t *testing.T) {
	s, _ := NewMemoryStore(StoreConfig{MaxBytes: memShards * 4096, MaxResponseBytes: 1024})
	for i := range 2000 {
		k := fmt.Appendf(nil, "key-%d", i)
		c, err := s.Claim(bg, t0, k, fp("p"))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(bg, t0, k, c.Token, 200, make([]byte, 1000)); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.Bytes > memShards*4096 {
			t.Fatalf("bytes %d over budget", st.Bytes)
		}
	}
}

// TestMemoryStoreConcurrentDuplicates: many goroutines claim the same key
// at once; exactly one wins and runs the "handler", every other sees it in
// progress or done, never new.
func TestMemoryStoreConcurrentDuplicates(t *testing.T) {
	s, _ := NewMemoryStore(StoreConfig{})
	for round := range 20 {
		key := fmt.Appendf(nil, "dup-%d", round)
		var wins, effects atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				c, err := s.Claim(bg, t0, key, fp("same"))
				if err != nil {
					t.Error(err)
					return
				}
				if c.State == ClaimNew {
					wins.Add(1)
					effects.Add(1)
					if err := s.Finish(bg, t0, key, c.Token, 200, []byte("r")); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 || effects.Load() != 1 {
			t.Fatalf("round %d: %d winners", round, wins.Load())
		}
	}
}

func TestClaimOrWait(t *testing.T) {
	s, _ := NewMemoryStore(StoreConfig{InProgressRetryAfter: 5 * ms})
	key := []byte("w")
	c, _ := s.Claim(bg, time.Now(), key, fp("a"))
	go func() {
		time.Sleep(20 * ms)
		s.Finish(bg, time.Now(), key, c.Token, 200, []byte("done"))
	}()
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	got, err := ClaimOrWait(ctx, s, time.Now, key, fp("a"), time.Second)
	if err != nil || got.State != ClaimDone || string(got.Response) != "done" {
		t.Fatalf("%+v %v", got, err)
	}
	// A claim that never finishes: the wait ends at the deadline with an
	// error that is os.ErrDeadlineExceeded.
	c2, _ := s.Claim(bg, time.Now(), []byte("stuck"), fp("a"))
	_ = c2
	ctx2, cancel2 := context.WithTimeout(bg, 30*ms)
	defer cancel2()
	got, err = ClaimOrWait(ctx2, s, time.Now, []byte("stuck"), fp("a"), 0)
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) || got.State != ClaimInProgress {
		t.Fatalf("stuck: %+v %v", got, err)
	}
}

func TestFingerprint(t *testing.T) {
	if FingerprintOf([]byte("ab"), []byte("c")) == FingerprintOf([]byte("a"), []byte("bc")) {
		t.Error("op/payload boundary ignored")
	}
	if FingerprintOf(nil, []byte("x")) != FingerprintOf([]byte{}, []byte("x")) {
		t.Error("nil and empty op differ")
	}
	op, p := []byte("PUT"), []byte("payload")
	if n := testing.AllocsPerRun(100, func() { _ = FingerprintOf(op, p) }); n != 0 {
		t.Errorf("FingerprintOf allocates %v", n)
	}
}

func TestStoreStateNames(t *testing.T) {
	if ClaimInProgress.HTTPStatus() != 409 || ClaimMismatch.HTTPStatus() != 422 || ClaimNew.HTTPStatus() != 0 {
		t.Error("HTTP statuses")
	}
	if ClaimMismatch.String() != "mismatch" || ClaimState(9).String() != "claim(9)" {
		t.Error("names")
	}
}

// BenchmarkMemoryStore measures the in-memory store's throughput: a new key
// (Claim then Finish: one idempotent request's store work) and a replay
// (Claim of a finished key), serial and with parallel callers. ops/s counts
// requests. At the hard cap every new key evicts an old finished one, which
// is the steady state of a busy server.
func BenchmarkMemoryStore(b *testing.B) {
	s, _ := NewMemoryStore(StoreConfig{MaxKeys: 100_000})
	resp := []byte("a small stored response")
	f := fp("p")
	var seq atomic.Uint64
	newKey := func(buf []byte) []byte {
		return strconv.AppendUint(append(buf[:0], "key-"...), seq.Add(1), 10)
	}
	claimFinish := func(b *testing.B, buf []byte, now time.Time) []byte {
		buf = newKey(buf)
		c, err := s.Claim(bg, now, buf, f)
		if err != nil || c.State != ClaimNew {
			b.Fatalf("%+v %v", c, err)
		}
		if err := s.Finish(bg, now, buf, c.Token, 200, resp); err != nil {
			b.Fatal(err)
		}
		return buf
	}
	replayKey := []byte("replayed")
	// finishReplayKey (re)stores the replayed key: the "new" runs evict it.
	finishReplayKey := func(b *testing.B) {
		c, err := s.Claim(bg, t0, replayKey, f)
		if err == nil && c.State == ClaimNew {
			err = s.Finish(bg, t0, replayKey, c.Token, 200, resp)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	opsPerSec := func(b *testing.B) { b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s") }

	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 32)
		for b.Loop() {
			buf = claimFinish(b, buf, t0)
		}
		opsPerSec(b)
	})
	b.Run("replay", func(b *testing.B) {
		finishReplayKey(b)
		b.ReportAllocs()
		for b.Loop() {
			if c, _ := s.Claim(bg, t0, replayKey, f); c.State != ClaimDone {
				b.Fatal(c)
			}
		}
		opsPerSec(b)
	})
	b.Run("new-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			buf := make([]byte, 0, 32)
			for pb.Next() {
				buf = claimFinish(b, buf, t0)
			}
		})
		opsPerSec(b)
	})
	b.Run("replay-parallel", func(b *testing.B) {
		finishReplayKey(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				s.Claim(bg, t0, replayKey, f)
			}
		})
		opsPerSec(b)
	})
}
