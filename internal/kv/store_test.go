package kv

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"
)

const sec = int64(time.Second)

func newTestStore(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := NewStore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// storeOp is one step of a store table: an operation at time at and what
// it must return.
type storeOp struct {
	at   int64
	op   string // get, set, del, exists, incr, sweep
	key  string
	val  string
	opts SetOptions
	want string // get: value or "<nil>"; set/del/exists: "true"/"false"; incr: number; sweep: count
	err  error
}

func runStoreOps(t *testing.T, s *Store, ops []storeOp) {
	t.Helper()
	for i, o := range ops {
		var got string
		var err error
		switch o.op {
		case "get":
			v, ok := s.Get(nil, []byte(o.key), o.at, nil)
			got = string(v)
			if !ok {
				got = "<nil>"
			}
		case "set":
			var ok bool
			ok, err = s.Set([]byte(o.key), []byte(o.val), o.at, o.opts)
			got = strconv.FormatBool(ok)
		case "del":
			got = strconv.FormatBool(s.Delete([]byte(o.key), o.at))
		case "exists":
			got = strconv.FormatBool(s.Exists([]byte(o.key), o.at))
		case "incr":
			var v int64
			v, err = s.Incr([]byte(o.key), 1, o.at)
			got = strconv.FormatInt(v, 10)
		case "sweep":
			got = strconv.Itoa(s.Sweep(o.at, 0))
		default:
			t.Fatalf("step %d: unknown op %q", i, o.op)
		}
		if !errors.Is(err, o.err) || (o.err == nil && err != nil) {
			t.Fatalf("step %d %s %q at %d: err %v, want %v", i, o.op, o.key, o.at, err, o.err)
		}
		if o.err == nil && got != o.want {
			t.Fatalf("step %d %s %q at %d: got %q, want %q", i, o.op, o.key, o.at, got, o.want)
		}
	}
}

func TestStoreTable(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ops  []storeOp
	}{
		{"set get delete", Config{}, []storeOp{
			{op: "get", key: "k", want: "<nil>"},
			{op: "set", key: "k", val: "v1", want: "true"},
			{op: "get", key: "k", want: "v1"},
			{op: "exists", key: "k", want: "true"},
			{op: "set", key: "k", val: "a longer value", want: "true"},
			{op: "get", key: "k", want: "a longer value"},
			{op: "set", key: "k", val: "", want: "true"},
			{op: "get", key: "k", want: ""},
			{op: "exists", key: "k", want: "true"},
			{op: "del", key: "k", want: "true"},
			{op: "del", key: "k", want: "false"},
			{op: "exists", key: "k", want: "false"},
		}},
		{"NX and XX", Config{}, []storeOp{
			{op: "set", key: "k", val: "x", opts: SetOptions{XX: true}, want: "false"},
			{op: "get", key: "k", want: "<nil>"},
			{op: "set", key: "k", val: "a", opts: SetOptions{NX: true}, want: "true"},
			{op: "set", key: "k", val: "b", opts: SetOptions{NX: true}, want: "false"},
			{op: "get", key: "k", want: "a"},
			{op: "set", key: "k", val: "c", opts: SetOptions{XX: true}, want: "true"},
			{op: "get", key: "k", want: "c"},
		}},
		{"expiry over time", Config{}, []storeOp{
			{at: 0, op: "set", key: "k", val: "v", opts: SetOptions{ExpireAt: 10 * sec}, want: "true"},
			{at: 10*sec - 1, op: "get", key: "k", want: "v"},
			{at: 10 * sec, op: "get", key: "k", want: "<nil>"},
			{at: 10 * sec, op: "exists", key: "k", want: "false"},
			{at: 11 * sec, op: "set", key: "k", val: "w", opts: SetOptions{NX: true}, want: "true"},
			{at: 100 * sec, op: "get", key: "k", want: "w"},
		}},
		{"overwrite clears or keeps ttl", Config{}, []storeOp{
			{at: 0, op: "set", key: "k", val: "v", opts: SetOptions{ExpireAt: 5 * sec}, want: "true"},
			{at: 1 * sec, op: "set", key: "k", val: "w", opts: SetOptions{KeepTTL: true}, want: "true"},
			{at: 5 * sec, op: "get", key: "k", want: "<nil>"},
			{at: 6 * sec, op: "set", key: "k", val: "v", opts: SetOptions{ExpireAt: 10 * sec}, want: "true"},
			{at: 7 * sec, op: "set", key: "k", val: "x", want: "true"},
			{at: 20 * sec, op: "get", key: "k", want: "x"},
		}},
		{"expired key is gone for XX and delete", Config{}, []storeOp{
			{at: 0, op: "set", key: "k", val: "v", opts: SetOptions{ExpireAt: sec}, want: "true"},
			{at: 2 * sec, op: "set", key: "k", val: "w", opts: SetOptions{XX: true}, want: "false"},
			{at: 0, op: "set", key: "j", val: "v", opts: SetOptions{ExpireAt: sec}, want: "true"},
			{at: 2 * sec, op: "del", key: "j", want: "false"},
		}},
		{"incr", Config{}, []storeOp{
			{op: "incr", key: "n", want: "1"},
			{op: "incr", key: "n", want: "2"},
			{op: "get", key: "n", want: "2"},
			{op: "set", key: "n", val: "-5", want: "true"},
			{op: "incr", key: "n", want: "-4"},
			{op: "set", key: "s", val: "abc", want: "true"},
			{op: "incr", key: "s", err: ErrNotInteger},
			{op: "set", key: "s", val: "01", want: "true"},
			{op: "incr", key: "s", err: ErrNotInteger},
			{op: "set", key: "s", val: "", want: "true"},
			{op: "incr", key: "s", err: ErrNotInteger},
			{op: "set", key: "m", val: strconv.FormatInt(math.MaxInt64, 10), want: "true"},
			{op: "incr", key: "m", err: ErrOverflow},
			{op: "get", key: "m", want: strconv.FormatInt(math.MaxInt64, 10)},
			{op: "set", key: "w", val: "a wide value that is long", want: "true"},
			{op: "set", key: "w", val: "9", opts: SetOptions{KeepTTL: true}, want: "true"},
			{op: "incr", key: "w", want: "10"},
		}},
		{"incr keeps ttl and restarts after expiry", Config{}, []storeOp{
			{at: 0, op: "set", key: "n", val: "7", opts: SetOptions{ExpireAt: 5 * sec}, want: "true"},
			{at: 1 * sec, op: "incr", key: "n", want: "8"},
			{at: 5 * sec, op: "get", key: "n", want: "<nil>"},
			{at: 6 * sec, op: "incr", key: "n", want: "1"},
			{at: 100 * sec, op: "get", key: "n", want: "1"},
		}},
		{"value too large", Config{MaxValueBytes: 4}, []storeOp{
			{op: "set", key: "k", val: "1234", want: "true"},
			{op: "set", key: "k", val: "12345", err: ErrValueTooLarge},
			{op: "get", key: "k", want: "1234"},
		}},
		{"key budget", Config{MaxKeys: 2}, []storeOp{
			{op: "set", key: "a", val: "1", want: "true"},
			{op: "set", key: "b", val: "1", want: "true"},
			{op: "set", key: "c", val: "1", err: ErrStoreFull},
			{op: "incr", key: "c", err: ErrStoreFull},
			{op: "set", key: "a", val: "2", want: "true"},
			{op: "del", key: "a", want: "true"},
			{op: "set", key: "c", val: "1", want: "true"},
			{op: "get", key: "c", want: "1"},
		}},
		{"byte budget", Config{MaxBytes: 2 * (entryOverheadBytes + 1 + 10)}, []storeOp{
			{op: "set", key: "a", val: "0123456789", want: "true"},
			{op: "set", key: "b", val: "0123456789", want: "true"},
			{op: "set", key: "c", val: "", err: ErrStoreFull},
			{op: "set", key: "a", val: "0123456789abcdefghijklmnopqrstuvwxyz", err: ErrStoreFull},
			{op: "get", key: "a", want: "0123456789"},
			{op: "set", key: "a", val: "x", want: "true"},
			{op: "get", key: "a", want: "x"},
		}},
		{"sweep", Config{Shards: 1}, []storeOp{
			{at: 0, op: "set", key: "a", val: "1", opts: SetOptions{ExpireAt: sec}, want: "true"},
			{at: 0, op: "set", key: "b", val: "1", opts: SetOptions{ExpireAt: 2 * sec}, want: "true"},
			{at: 0, op: "set", key: "c", val: "1", want: "true"},
			{at: sec, op: "sweep", want: "1"},
			{at: sec, op: "sweep", want: "0"},
			{at: 3 * sec, op: "sweep", want: "1"},
			{at: 3 * sec, op: "get", key: "c", want: "1"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runStoreOps(t, newTestStore(t, tt.cfg), tt.ops)
		})
	}
}

func TestStoreAccounting(t *testing.T) {
	s := newTestStore(t, Config{})
	keys := []string{"a", "bb", "ccc"}
	for _, k := range keys {
		if _, err := s.Set([]byte(k), []byte("value"), 0, SetOptions{ExpireAt: sec}); err != nil {
			t.Fatal(err)
		}
	}
	st := s.Stats()
	want := int64(1+2+3) + 3*(5+entryOverheadBytes)
	if st.Keys != 3 || st.Bytes != want {
		t.Fatalf("after sets: %+v, want 3 keys, %d bytes", st, want)
	}
	// a shrink far below the buffer releases it; a growth charges it
	if _, err := s.Set([]byte("a"), make([]byte, 1000), 0, SetOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().Bytes; got != want+995 {
		t.Fatalf("after growth: %d bytes, want %d", got, want+995)
	}
	if _, err := s.Set([]byte("a"), []byte("v"), 0, SetOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().Bytes; got != want-4 {
		t.Fatalf("after shrink: %d bytes, want %d", got, want-4)
	}
	s.Delete([]byte("a"), 0)
	if n := s.Sweep(2*sec, 0); n != 2 {
		t.Fatalf("swept %d, want 2", n)
	}
	if st := s.Stats(); st.Keys != 0 || st.Bytes != 0 || st.Expired != 2 {
		t.Fatalf("after delete and sweep: %+v, want empty with 2 expired", st)
	}
}

func TestStoreConfigValidate(t *testing.T) {
	bad := []Config{{Shards: -1}, {Shards: maxShards + 1}, {MaxKeys: -1}, {MaxBytes: -1}, {MaxValueBytes: -1}}
	for i, c := range bad {
		if _, err := NewStore(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%d: %+v: err %v, want ErrInvalidConfig", i, c, err)
		}
	}
	s := newTestStore(t, Config{Shards: 5})
	if len(s.shards) != 8 {
		t.Fatalf("5 shards rounded to %d, want 8", len(s.shards))
	}
}

// TestStoreConcurrent hammers a few keys from several goroutines (run with
// -race): INCR must count every increment exactly once.
func TestStoreConcurrent(t *testing.T) {
	s := newTestStore(t, Config{Shards: 2})
	const workers, each = 4, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for i := range each {
				if _, err := s.Incr([]byte("n"), 1, 0); err != nil {
					t.Error(err)
					return
				}
				k := []byte(fmt.Sprintf("k%d", i%7))
				if _, err := s.Set(k, []byte(fmt.Sprintf("w%d-%d", w, i)), 0, SetOptions{}); err != nil {
					t.Error(err)
					return
				}
				buf, _ = s.Get(buf[:0], k, 0, nil)
				s.Delete([]byte("gone"), 0)
			}
		}()
	}
	wg.Wait()
	v, _ := s.Get(nil, []byte("n"), 0, nil)
	if string(v) != strconv.Itoa(workers*each) {
		t.Fatalf("n = %s, want %d", v, workers*each)
	}
}

// TestStoreZeroAlloc pins the steady paths: GET into a buffer with room,
// SET overwriting a key with a value of the same size, INCR, EXISTS, a
// missing DEL.
func TestStoreZeroAlloc(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	s := newTestStore(t, Config{})
	key, val := []byte("key:000000000000"), []byte("xxx")
	if _, err := s.Set(key, val, 0, SetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Incr([]byte("n"), 1, 0); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 64)
	cases := map[string]func(){
		"get":    func() { buf, _ = s.Get(buf[:0], key, 0, nil) },
		"set":    func() { _, _ = s.Set(key, val, 0, SetOptions{}) },
		"incr":   func() { _, _ = s.Incr([]byte("n"), 1, 0) },
		"exists": func() { s.Exists(key, 0) },
		"del":    func() { s.Delete([]byte("missing"), 0) },
	}
	for name, f := range cases {
		if n := testing.AllocsPerRun(200, f); n != 0 {
			t.Errorf("%s: %v allocs per run, want 0", name, n)
		}
	}
}

func BenchmarkStoreGet(b *testing.B) {
	s := newTestStore(b, Config{})
	key := []byte("key:000000000000")
	_, _ = s.Set(key, []byte("xxx"), 0, SetOptions{})
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = s.Get(buf[:0], key, 0, nil)
	}
}

func BenchmarkStoreSet(b *testing.B) {
	s := newTestStore(b, Config{})
	key, val := []byte("key:000000000000"), []byte("xxx")
	b.ReportAllocs()
	for b.Loop() {
		_, _ = s.Set(key, val, 0, SetOptions{})
	}
}

func BenchmarkStoreGetParallel(b *testing.B) {
	s := newTestStore(b, Config{})
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key:%012d", i))
		_, _ = s.Set(keys[i], []byte("xxx"), 0, SetOptions{})
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 0, 64)
		i := 0
		for pb.Next() {
			buf, _ = s.Get(buf[:0], keys[i&1023], 0, nil)
			i++
		}
	})
}
