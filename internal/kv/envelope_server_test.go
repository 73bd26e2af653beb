package kv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/client"
	"github.com/sluicenet/sluice/protocol/envelope"
)

// envClient writes request frames and reads reply frames on one
// connection.
type envClient struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dialEnvelope(t *testing.T, s *Server) *envClient {
	c := dial(t, s)
	return &envClient{t: t, c: c, r: bufio.NewReader(c)}
}

func (ec *envClient) send(rs ...req) {
	ec.t.Helper()
	var b []byte
	for _, r := range rs {
		b = append(b, r.frame(ec.t)...)
	}
	if _, err := ec.c.Write(b); err != nil {
		ec.t.Fatal(err)
	}
}

// next reads one reply frame.
func (ec *envClient) next() envelope.Message {
	ec.t.Helper()
	var hdr [envelope.LengthFieldBytes]byte
	if _, err := io.ReadFull(ec.r, hdr[:]); err != nil {
		ec.t.Fatalf("reading a reply: %v", err)
	}
	n := int(hdr[0])<<24 | int(hdr[1])<<16 | int(hdr[2])<<8 | int(hdr[3])
	frame := make([]byte, envelope.LengthFieldBytes+n)
	copy(frame, hdr[:])
	if _, err := io.ReadFull(ec.r, frame[envelope.LengthFieldBytes:]); err != nil {
		ec.t.Fatalf("reading a reply: %v", err)
	}
	var m envelope.Message
	if err := envelope.Parse(frame, &m); err != nil {
		ec.t.Fatalf("reply does not parse: %v", err)
	}
	return m
}

func (ec *envClient) call(r req) envelope.Message {
	ec.t.Helper()
	ec.send(r)
	m := ec.next()
	if m.RequestID != r.id {
		ec.t.Fatalf("reply to %d, want %d", m.RequestID, r.id)
	}
	return m
}

func summary(m envelope.Message) reply {
	_, has := m.RetryAfter()
	return reply{typ: m.Type, status: m.Status, payload: string(m.Payload), replayed: m.Flags&envelope.FlagReplayed != 0, retryAfter: has}
}

func envOptions(o Options) Options {
	o.Proto = ProtoEnvelope
	return o
}

// TestEnvelopeServerIdempotentIncr: INCR retried with the same key
// increments once; the same key with another payload is a conflict.
func TestEnvelopeServerIdempotentIncr(t *testing.T) {
	s := startServer(t, envOptions(Options{}))
	ec := dialEnvelope(t, s)
	incr := func(id uint64, key, counter string) reply {
		return summary(ec.call(req{id: id, method: "INCR", payload: []byte(counter), key: key}))
	}
	if got := incr(1, "k1", "n"); got != ok("1") {
		t.Fatalf("first INCR: %+v", got)
	}
	for id := uint64(2); id <= 4; id++ {
		if got := incr(id, "k1", "n"); got != (reply{typ: envelope.TypeResponse, payload: "1", replayed: true}) {
			t.Fatalf("retry %d: %+v, want a replayed 1", id, got)
		}
	}
	if got := incr(5, "k1", "other"); got != rejected(envelope.StatusConflict, reasonMismatch, false) {
		t.Fatalf("same key, other payload: %+v", got)
	}
	if got := incr(6, "k2", "n"); got != ok("2") {
		t.Fatalf("new key: %+v", got)
	}
	if st := s.Envelope.Stats(); st.Effects != 2 || st.Replays != 3 {
		t.Fatalf("stats %+v: want 2 effects and 3 replays", st)
	}
}

// concurrentDuplicates sends the same keyed INCR from n connections to the
// servers at once, then retries every conflict after its retry-after until
// each caller has an answer. Every answer must be "1": the handler ran once.
func concurrentDuplicates(t *testing.T, servers []*Server, n int) {
	t.Helper()
	var wg sync.WaitGroup
	answers := make([]string, n)
	conflicts := make([]int, n)
	for i := range n {
		ec := dialEnvelope(t, servers[i%len(servers)])
		wg.Add(1)
		go func() {
			defer wg.Done()
			for attempt := range 200 { // a safety net: 200 waits of 50 ms against the original's 100 ms
				ec.send(req{id: uint64(attempt), method: "INCR", payload: []byte("n"), key: "dup-key"})
				m := ec.next()
				ra, _ := m.RetryAfter()
				switch {
				case m.Type == envelope.TypeResponse && m.Status == envelope.StatusOK:
					answers[i] = string(m.Payload)
					return
				case m.Type == envelope.TypeReject && m.Status == envelope.StatusConflict && ra > 0:
					conflicts[i]++
					time.Sleep(min(ra, 50*time.Millisecond))
				default:
					answers[i] = fmt.Sprintf("unexpected %+v", summary(m))
					return
				}
			}
			answers[i] = "gave up"
		}()
	}
	wg.Wait()
	var effects uint64
	total := 0
	for _, s := range servers {
		effects += s.Envelope.Stats().Effects
	}
	for i, a := range answers {
		if a != "1" {
			t.Errorf("caller %d: %s, want 1", i, a)
		}
		total += conflicts[i]
	}
	if effects != 1 {
		t.Fatalf("the handler ran %d times for one idempotency key, want once", effects)
	}
	if total == 0 {
		t.Log("no duplicate overlapped the original (allowed, but the in-progress path went untested this run)")
	}
}

// TestEnvelopeServerConcurrentDuplicates: concurrent duplicates, with a
// slow dependency so they overlap, run the handler once (memory store).
func TestEnvelopeServerConcurrentDuplicates(t *testing.T) {
	s := startServer(t, envOptions(Options{DepLatency: 100 * time.Millisecond}))
	concurrentDuplicates(t, []*Server{s}, 8)
}

// TestEnvelopeServerRedisDuplicates: the same with the Redis store and two
// servers sharing it, as two processes of a fleet would.
func TestEnvelopeServerRedisDuplicates(t *testing.T) {
	rs := startRedis(t)
	o := envOptions(Options{Idempotency: IdempotencyRedis, RedisAddr: rs.addr, DepLatency: 100 * time.Millisecond})
	a, b := startServer(t, o), startServer(t, o)
	concurrentDuplicates(t, []*Server{a, b}, 8)
	// without a dependency, keyed INCRs still go through Redis (in the pool)
	ec := dialEnvelope(t, startServer(t, envOptions(Options{Idempotency: IdempotencyRedis, RedisAddr: rs.addr})))
	for i, want := range []reply{ok("1"), {typ: envelope.TypeResponse, payload: "1", replayed: true}} {
		if got := summary(ec.call(req{id: uint64(i), method: "INCR", payload: []byte("m"), key: "redis-k"})); got != want {
			t.Fatalf("redis keyed INCR %d: %+v, want %+v", i, got, want)
		}
	}
	if got := summary(ec.call(req{id: 9, method: "INCR", payload: []byte("z"), key: "redis-k"})); got != rejected(envelope.StatusConflict, reasonMismatch, false) {
		t.Fatalf("redis key reuse: %+v", got)
	}
}

// TestEnvelopeServerSlowDependency: a mutation waiting on a slow
// dependency does not hold up other connections' requests: 20 PINGs on
// another connection of the same loop finish before the PUT can (it takes
// at least the dependency's latency, so PINGs held up by it could not).
// That bound is the point of the test; whether this machine can resolve it
// is judged from a reference measured here first, 20 PINGs with nothing
// else in flight: a machine on which they alone take a quarter of the
// latency cannot tell held-up PINGs from slow ones, and the order is not
// asserted there. (The latency stays 1 s: the server bounds a worker
// request without a deadline by its 2 s op timeout.)
func TestEnvelopeServerSlowDependency(t *testing.T) {
	const latency = time.Second
	pings := func(ec *envClient) time.Duration {
		t.Helper()
		begin := time.Now()
		for i := range 20 {
			if got := summary(ec.call(req{id: uint64(10 + i), method: "PING"})); got != ok("PONG") {
				t.Fatalf("PING: %+v", got)
			}
		}
		return time.Since(begin)
	}
	s := startServer(t, envOptions(Options{DepLatency: latency, Engine: serverLoops(1)}))
	slow, fast := dialEnvelope(t, s), dialEnvelope(t, s)
	pings(fast) // warm: the connection, the loop, the code
	reference := pings(fast)
	start := time.Now()
	slow.send(req{id: 1, method: "PUT", payload: AppendPut(nil, []byte("k"), []byte("v"))})
	fastDone := pings(fast)
	m := slow.next()
	slowDone := time.Since(start)
	if summary(m) != ok("") {
		t.Fatalf("PUT: %+v", summary(m))
	}
	if slowDone < latency {
		t.Fatalf("the PUT took %v, less than the dependency's %v", slowDone, latency)
	}
	t.Logf("20 PINGs on another connection in %v (%v alone) while the PUT took %v (one loop)", fastDone, reference, slowDone)
	if fastDone >= latency {
		if 4*reference >= latency {
			t.Skipf("20 PINGs alone took %v here, too slow to tell PINGs held up by the %v dependency from slow ones", reference, latency)
		}
		t.Fatalf("20 PINGs took %v (%v alone) with the PUT in flight: held up by its %v dependency", fastDone, reference, latency)
	}
}

// TestEnvelopeServerDeadlines: a request whose deadline already passed is
// a timeout at once; one whose deadline passes while it waits for a worker
// is a timeout when the worker picks it up.
func TestEnvelopeServerDeadlines(t *testing.T) {
	s := startServer(t, envOptions(Options{DepLatency: 300 * time.Millisecond, Workers: 1, MaxQueueWait: 10 * time.Second}))
	ec := dialEnvelope(t, s)
	if got := summary(ec.call(req{id: 1, method: "GET", payload: []byte("k"), zero: true})); got != rejected(envelope.StatusTimeout, reasonExpired, false) {
		t.Fatalf("expired GET: %+v", got)
	}
	if got := summary(ec.call(req{id: 2, method: "INCR", payload: []byte("k"), deadline: time.Now().Add(-time.Second)})); got != rejected(envelope.StatusTimeout, reasonExpired, false) {
		t.Fatalf("expired INCR: %+v", got)
	}
	put := AppendPut(nil, []byte("k"), []byte("v"))
	ec.send(req{id: 3, method: "PUT", payload: put}, req{id: 4, method: "PUT", payload: put, timeout: 100 * time.Millisecond})
	got := map[uint64]reply{}
	for range 2 {
		m := ec.next()
		got[m.RequestID] = summary(m)
	}
	if got[3] != ok("") || got[4] != rejected(envelope.StatusTimeout, reasonExpired, false) {
		t.Fatalf("PUT then a PUT queued past its deadline: %+v", got)
	}
	// the dependency's own call is bounded by the deadline
	if got := summary(ec.call(req{id: 5, method: "PUT", payload: put, timeout: 150 * time.Millisecond})); got != rejected(envelope.StatusTimeout, reasonDepTimeout, false) {
		t.Fatalf("PUT with a deadline shorter than the dependency: %+v", got)
	}
}

// TestEnvelopeServerQueueFull: with one worker and a queue of one, a burst
// of slow mutations gets StatusUnavailable with retry-after for all but
// the two the pool can hold.
func TestEnvelopeServerQueueFull(t *testing.T) {
	s := startServer(t, envOptions(Options{DepLatency: 200 * time.Millisecond, Workers: 1, QueueLen: 1, MaxQueueWait: 10 * time.Second}))
	ec := dialEnvelope(t, s)
	put := AppendPut(nil, []byte("k"), []byte("v"))
	const burst = 6
	var rs []req
	for i := range burst {
		rs = append(rs, req{id: uint64(i), method: "PUT", payload: put})
	}
	ec.send(rs...)
	oks, full := 0, 0
	for range burst {
		m := ec.next()
		ra, _ := m.RetryAfter()
		switch r := summary(m); {
		case r == ok(""):
			oks++
		case r == rejected(envelope.StatusUnavailable, reasonQueueFull, true) && ra == DefaultBusyRetryAfter:
			full++
		default:
			t.Fatalf("reply %d: %+v retry-after %v", m.RequestID, r, ra)
		}
	}
	if oks < 1 || oks > 2 || oks+full != burst {
		t.Fatalf("%d ok and %d queue-full rejects of %d, want 1 or 2 ok and the rest rejected", oks, full, burst)
	}
	if st := s.Envelope.Stats(); st.QueueFull != uint64(full) {
		t.Fatalf("QueueFull counter %d, want %d", st.QueueFull, full)
	}
}

// TestEnvelopeServerAdmissionReject: a tenant over quota gets a reject
// with status too many requests and the limiter's retry-after.
func TestEnvelopeServerAdmissionReject(t *testing.T) {
	s := startServer(t, envOptions(Options{TenantQuota: &admission.Quota{Count: 1, Per: time.Hour, Burst: 1}}))
	ec := dialEnvelope(t, s)
	if got := summary(ec.call(req{id: 1, method: "PING"})); got != ok("PONG") {
		t.Fatalf("first: %+v", got)
	}
	m := ec.call(req{id: 2, method: "PING"})
	ra, _ := m.RetryAfter()
	if got := summary(m); got != rejected(envelope.StatusTooManyRequests, "tenant", true) || ra < 59*time.Minute {
		t.Fatalf("over quota: %+v retry-after %v", got, ra)
	}
}

// TestEnvelopeServerClient: the client package end to end, its generated
// idempotency key reused across its retries, and an explicit key replayed.
func TestEnvelopeServerClient(t *testing.T) {
	s := startServer(t, envOptions(Options{}))
	c, err := client.New(client.Config{Addr: s.Addr().String(), Conns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Call(ctx, "PUT", AppendPut(nil, []byte("greeting"), []byte("hello"))); err != nil {
		t.Fatal(err)
	}
	v, err := c.Call(ctx, "GET", []byte("greeting"))
	if err != nil || string(v) != "hello" {
		t.Fatalf("GET: %q %v", v, err)
	}
	for i, wantReplayed := range []bool{false, true, true} {
		r, err := c.Do(ctx, &client.Request{Method: "INCR", Payload: []byte("hits"), IdempotencyKey: "client-key"})
		if err != nil || string(r.Payload) != "1" || r.Replayed != wantReplayed {
			t.Fatalf("INCR %d: %+v %v, want 1 replayed=%v", i, r, err, wantReplayed)
		}
	}
	_, err = c.Call(ctx, "GET", []byte("nope"))
	var se *client.StatusError
	if !errors.As(err, &se) || se.Status != envelope.StatusBadRequest {
		t.Fatalf("GET of a missing key: %v, want a bad-request StatusError", err)
	}
}
