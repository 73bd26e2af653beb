package redisstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
)

var bg = context.Background()

func fp(s string) admission.Fingerprint { return admission.FingerprintOf([]byte("PUT"), []byte(s)) }

func newStore(t testing.TB, cfg admission.StoreConfig) *Store {
	t.Helper()
	s, err := NewStore(newClient(t), prefix(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStoreLifecycle(t *testing.T) {
	s := newStore(t, admission.StoreConfig{TTL: time.Hour, InProgressTTL: 10 * time.Second, InProgressRetryAfter: time.Second})
	key := []byte("k1")
	now := time.Now()
	c, err := s.Claim(bg, now, key, fp("a"))
	if err != nil || c.State != admission.ClaimNew || c.Token == 0 {
		t.Fatalf("first claim: %+v %v", c, err)
	}
	if d, err := s.Claim(bg, now, key, fp("a")); err != nil || d.State != admission.ClaimInProgress || d.RetryAfter != time.Second {
		t.Fatalf("duplicate in progress: %+v %v", d, err)
	}
	if d, err := s.Claim(bg, now, key, fp("b")); err != nil || d.State != admission.ClaimMismatch {
		t.Fatalf("different payload in progress: %+v %v", d, err)
	}
	if err := s.Finish(bg, now, key, c.Token+1, 201, []byte("x")); !errors.Is(err, admission.ErrNotOwner) {
		t.Fatalf("finish with a wrong token: %v", err)
	}
	if err := s.Abandon(bg, now, key, c.Token+1); !errors.Is(err, admission.ErrNotOwner) {
		t.Fatalf("abandon with a wrong token: %v", err)
	}
	resp := []byte("created\x00\xff binary")
	finished := time.Now() // before the outcome's TTL starts
	if err := s.Finish(bg, now, key, c.Token, 201, resp); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(bg, now, key, c.Token, 201, resp); !errors.Is(err, admission.ErrNotOwner) {
		t.Fatalf("second finish: %v", err)
	}
	d, err := s.Claim(bg, now, key, fp("a"))
	if err != nil || d.State != admission.ClaimDone || d.Status != 201 || string(d.Response) != string(resp) {
		t.Fatalf("replay: %+v %v", d, err)
	}
	if d, err := s.Claim(bg, now, key, fp("b")); err != nil || d.State != admission.ClaimMismatch {
		t.Fatalf("different payload after done: %+v %v", d, err)
	}
	// The TTL of the outcome is the store's TTL, less the time since it
	// was set (and the millisecond PTTL truncates).
	pttl, err := s.c.PTTL(bg, s.key(key)).Result()
	if took := time.Since(finished); err != nil || pttl < time.Hour-took-time.Millisecond || pttl > time.Hour {
		t.Fatalf("outcome TTL %v %v, want 1h less at most %v", pttl, err, took)
	}
}

func TestStoreLeaseExpiryAndAbandon(t *testing.T) {
	s := newStore(t, admission.StoreConfig{InProgressTTL: 50 * time.Millisecond})
	key := []byte("k")
	c1, err := s.Claim(bg, time.Now(), key, fp("a"))
	if err != nil || c1.State != admission.ClaimNew {
		t.Fatalf("%+v %v", c1, err)
	}
	// The owner "crashed": Redis expires the lease and a retry owns the key
	// (the deadline is only a safety net: the lease is 50 ms). The retry
	// comes through a store whose lease is long, so that the retry's own
	// lease outlives the round trips below on a loaded machine too (with a
	// 50 ms one, four CPU hogs let it expire before the Abandon).
	retry := newStore(t, admission.StoreConfig{InProgressTTL: time.Minute})
	deadline := time.Now().Add(10 * time.Second)
	var c2 admission.Claim
	for {
		c2, err = retry.Claim(bg, time.Now(), key, fp("a"))
		if err != nil {
			t.Fatal(err)
		}
		if c2.State == admission.ClaimNew || time.Now().After(deadline) {
			break
		}
		if c2.RetryAfter > 50*time.Millisecond {
			t.Fatalf("retry-after %v beyond the lease", c2.RetryAfter)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if c2.State != admission.ClaimNew || c2.Token == c1.Token {
		t.Fatalf("after the lease: %+v", c2)
	}
	if err := s.Finish(bg, time.Now(), key, c1.Token, 200, nil); !errors.Is(err, admission.ErrNotOwner) {
		t.Fatalf("late finish of the expired claim: %v", err)
	}
	if err := retry.Abandon(bg, time.Now(), key, c2.Token); err != nil {
		t.Fatal(err)
	}
	if c3, err := retry.Claim(bg, time.Now(), key, fp("a")); err != nil || c3.State != admission.ClaimNew {
		t.Fatalf("after abandon: %+v %v", c3, err)
	}
}

func TestStoreBounds(t *testing.T) {
	s := newStore(t, admission.StoreConfig{MaxKeyBytes: 4, MaxResponseBytes: 8})
	if _, err := s.Claim(bg, time.Now(), []byte("12345"), fp("")); !errors.Is(err, admission.ErrKeyTooLong) {
		t.Errorf("long key: %v", err)
	}
	if _, err := s.Claim(bg, time.Now(), nil, fp("")); !errors.Is(err, admission.ErrEmptyKey) {
		t.Errorf("empty key: %v", err)
	}
	c, _ := s.Claim(bg, time.Now(), []byte("k"), fp(""))
	if err := s.Finish(bg, time.Now(), []byte("k"), c.Token, 200, make([]byte, 9)); !errors.Is(err, admission.ErrResponseTooLarge) {
		t.Errorf("large response: %v", err)
	}
	if err := s.Finish(bg, time.Now(), []byte("k"), c.Token, 70000, nil); !errors.Is(err, ErrStatusRange) {
		t.Errorf("status 70000: %v", err)
	}
	// A foreign value under the key is reported, not misread.
	if err := s.c.Set(bg, s.key([]byte("junk")), "not a record", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(bg, time.Now(), []byte("junk"), fp("")); !errors.Is(err, ErrCorruptRecord) {
		t.Errorf("junk record: %v", err)
	}
	if _, err := NewStore(nil, "", admission.StoreConfig{}); !errors.Is(err, admission.ErrBadConfig) {
		t.Errorf("nil client: %v", err)
	}
}

// TestStoreTwoProcessesRace: two independent stores (two clients with their
// own connection pools, as two server processes would have) race many
// goroutines on the same key; exactly one claim wins per key and the
// handler's effect happens once.
func TestStoreTwoProcessesRace(t *testing.T) {
	a, b := newStore(t, admission.StoreConfig{}), newStore(t, admission.StoreConfig{})
	if a.c == b.c {
		t.Fatal("stores share a client")
	}
	for round := range 25 {
		key := fmt.Appendf(nil, "race-%d", round)
		var wins, effects atomic.Int32
		var seen [4]atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range 16 {
			s := a
			if g%2 == 1 {
				s = b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				c, err := s.Claim(bg, time.Now(), key, fp("same"))
				if err != nil {
					t.Error(err)
					return
				}
				seen[c.State].Add(1)
				if c.State == admission.ClaimNew {
					wins.Add(1)
					effects.Add(1)
					if err := s.Finish(bg, time.Now(), key, c.Token, 200, []byte("r")); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 || effects.Load() != 1 || seen[admission.ClaimMismatch].Load() != 0 {
			t.Fatalf("round %d: %d winners, outcomes new/in-progress/done/mismatch = %d/%d/%d/%d", round, wins.Load(),
				seen[0].Load(), seen[1].Load(), seen[2].Load(), seen[3].Load())
		}
	}
}

func TestStoreWithClaimOrWait(t *testing.T) {
	s := newStore(t, admission.StoreConfig{InProgressRetryAfter: 5 * time.Millisecond})
	other := newStore(t, admission.StoreConfig{InProgressRetryAfter: 5 * time.Millisecond})
	other.prefix = s.prefix
	key := []byte("w")
	c, err := s.Claim(bg, time.Now(), key, fp("a"))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		_ = s.Finish(bg, time.Now(), key, c.Token, 200, []byte("done"))
	}()
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	got, err := admission.ClaimOrWait(ctx, other, time.Now, key, fp("a"), time.Second)
	if err != nil || got.State != admission.ClaimDone || string(got.Response) != "done" {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestStoreUnreachable(t *testing.T) {
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	c := redisClientAt(fmt.Sprintf("127.0.0.1:%d", port))
	defer c.Close()
	s, _ := NewStore(c, "x:", admission.StoreConfig{})
	ctx, cancel := context.WithTimeout(bg, 2*time.Second)
	defer cancel()
	if _, err := s.Claim(ctx, time.Now(), []byte("k"), fp("")); err == nil {
		t.Fatal("claim against a closed port succeeded")
	}
}

// BenchmarkStore measures the Redis store's throughput against the local
// test server: a new key (SET NX, then the finish script: one idempotent
// request's store work, two round trips) and a replay (SET NX refused, then
// the read script: two round trips), with 32 concurrent callers sharing one
// client. ops/s counts requests.
func BenchmarkStore(b *testing.B) {
	s := newStore(b, admission.StoreConfig{TTL: time.Minute})
	resp := []byte("a small stored response")
	f := fp("p")
	var seq atomic.Uint64
	replayKey := []byte("replayed")
	c, err := s.Claim(bg, time.Now(), replayKey, f)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Finish(bg, time.Now(), replayKey, c.Token, 200, resp); err != nil {
		b.Fatal(err)
	}
	opsPerSec := func(b *testing.B) { b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s") }
	b.Run("new-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				k := fmt.Appendf(nil, "bench-%d", seq.Add(1))
				c, err := s.Claim(bg, time.Now(), k, f)
				if err != nil || c.State != admission.ClaimNew {
					b.Errorf("%+v %v", c, err)
					return
				}
				if err := s.Finish(bg, time.Now(), k, c.Token, 200, resp); err != nil {
					b.Error(err)
					return
				}
			}
		})
		opsPerSec(b)
	})
	b.Run("replay-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if c, err := s.Claim(bg, time.Now(), replayKey, f); err != nil || c.State != admission.ClaimDone {
					b.Errorf("%+v %v", c, err)
					return
				}
			}
		})
		opsPerSec(b)
	})
}

func TestStoreDeadline(t *testing.T) {
	s := newStore(t, admission.StoreConfig{})
	l, _ := NewLimiter(s.c, s.prefix, admission.Quota{Count: 1, Per: time.Second, Burst: 1})
	ctx, cancel := context.WithDeadline(bg, time.Now().Add(-time.Second))
	defer cancel()
	if _, err := s.Claim(ctx, time.Now(), []byte("k"), fp("")); !errors.Is(err, os.ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("claim past deadline: %v", err)
	}
	if _, err := l.AllowN(ctx, time.Now(), []byte("k"), 1); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("limiter past deadline: %v", err)
	}
}
