package server

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/protocol"
)

// idemPolicy is a policy whose idempotency key is a line's text before
// '=' (the payload is the whole line), with an in-memory store.
func idemPolicy(t *testing.T) (AdmissionPolicy, *admission.MemoryStore) {
	t.Helper()
	store, err := admission.NewMemoryStore(admission.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	adm := newAdmitter(t, admission.Config{Idempotency: store, MemoryLimitBytes: -1})
	return AdmissionPolicy{Admitter: adm, Classify: func(_ *Conn, frame []byte, f *admission.Frame) {
		if i := bytes.IndexByte(frame, '='); i > 0 {
			f.IdempotencyKey, f.Payload = frame[:i], frame
		}
	}}, store
}

// finishClaim records reply as the outcome of claim for frame's key.
func finishClaim(t *testing.T, store admission.Store, frame []byte, claim admission.Claim, reply []byte) {
	key := frame[:bytes.IndexByte(frame, '=')]
	if err := store.Finish(context.Background(), time.Now(), key, claim.Token, 0, reply); err != nil {
		t.Errorf("Finish: %v", err)
	}
}

// TestIdempotencyInline: the policy claims each keyed frame; the handler
// finishes the claim with its reply (Conn.FrameClaim); a retry of the same
// request is answered with the stored reply without running the handler;
// the same key with another payload is refused ("mismatch"), and a retry
// while the first is still unfinished is refused ("in_progress").
func TestIdempotencyInline(t *testing.T) {
	pol, store := idemPolicy(t)
	var ran atomic.Int32
	h := newTestHandler()
	h.frame = func(c *Conn, frame []byte) Action {
		ran.Add(1)
		reply := append([]byte("ran "), frame...)
		claim, ok := c.FrameClaim()
		if ok && claim.State == admission.ClaimNew && !bytes.HasPrefix(frame, []byte("slow")) {
			framed := protocol.Delimited{}.AppendEncode(nil, reply)
			finishClaim(t, store, frame, claim, framed)
		}
		c.WriteFrame(reply)
		return None
	}
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{}, Admission: pol}, h)
	c := dialLine(t, e.Addr().String(), nil)
	ask := func(line string) string { fmt.Fprintf(c, "%s\n", line); return c.line(t) }
	if got := ask("k1=a"); got != "ran k1=a" {
		t.Fatalf("first: %q", got)
	}
	if got := ask("k1=a"); got != "ran k1=a" || ran.Load() != 1 {
		t.Fatalf("retry: %q after %d runs, want the stored reply and 1 run", got, ran.Load())
	}
	if reason, _, ok := protocol.ParseRejectText([]byte(ask("k1=b"))); !ok || reason != protocol.ReasonMismatch {
		t.Errorf("same key, other payload: want a %s reject", protocol.ReasonMismatch)
	}
	if got := ask("slow=x"); got != "ran slow=x" { // runs, never finishes its claim
		t.Fatalf("slow: %q", got)
	}
	if reason, retry, ok := protocol.ParseRejectText([]byte(ask("slow=x"))); !ok || reason != protocol.ReasonInProgress || retry <= 0 {
		t.Errorf("retry while in progress: want an %s reject with a retry-after", protocol.ReasonInProgress)
	}
	if got := ask("plain"); got != "ran plain" { // no key: no claim
		t.Fatalf("unkeyed: %q", got)
	}
	if n := ran.Load(); n != 3 {
		t.Errorf("handler ran %d times, want 3", n)
	}
}

// idemPoolHandler finishes its claims from the pool (FrameClaimFrom).
type idemPoolHandler struct {
	t     *testing.T
	store admission.Store
	ran   atomic.Int32
	gate  chan struct{} // a frame "hold=..." waits for it
}

func (h *idemPoolHandler) ServeFrame(ctx context.Context, c *Conn, frame []byte) Action {
	h.ran.Add(1)
	if bytes.HasPrefix(frame, []byte("hold")) {
		<-h.gate
	}
	reply := append([]byte("ran "), frame...)
	if claim, ok := FrameClaimFrom(ctx); ok {
		finishClaim(h.t, h.store, frame, claim, protocol.Delimited{}.AppendEncode(nil, reply))
	}
	c.WriteFrame(reply)
	return None
}

// TestIdempotencyPool: a pooled handler gets the claim through its
// context and finishes it; a retry is answered from the store; a frame the
// pool refuses (queue full) has its claim abandoned, so that its retry
// runs.
func TestIdempotencyPool(t *testing.T) {
	pol, store := idemPolicy(t)
	ph := &idemPoolHandler{t: t, store: store, gate: make(chan struct{})}
	// Unordered: a retry with the same key arrives while the first runs
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{}, Admission: pol,
		Pool: PoolConfig{Handler: ph, Workers: 1, QueueLen: 1, Unordered: true}}, newTestHandler())
	c := dialLine(t, e.Addr().String(), nil)
	ask := func(line string) string { fmt.Fprintf(c, "%s\n", line); return c.line(t) }
	if got := ask("p1=a"); got != "ran p1=a" {
		t.Fatalf("first: %q", got)
	}
	if got := ask("p1=a"); got != "ran p1=a" || ph.ran.Load() != 1 {
		t.Fatalf("retry: %q after %d runs, want the stored reply and 1 run", got, ph.ran.Load())
	}
	// the worker holds "hold", the queue's one slot takes "q1", "q2" is refused
	fmt.Fprint(c, "hold=1\n")
	waitUntil(t, 5*time.Second, "the worker to take hold", func() bool { return ph.ran.Load() == 2 })
	fmt.Fprint(c, "q1=1\nq2=1\n")
	if reason, _, ok := protocol.ParseRejectText([]byte(c.line(t))); !ok || reason != admission.ReasonQueue.String() {
		t.Fatalf("third frame: want a queue reject")
	}
	close(ph.gate)
	if got := c.line(t); got != "ran hold=1" {
		t.Fatalf("hold: %q", got)
	}
	if got := c.line(t); got != "ran q1=1" {
		t.Fatalf("q1: %q", got)
	}
	if got := ask("q2=1"); got != "ran q2=1" { // abandoned: runs now
		t.Fatalf("retry of the refused frame: %q, want it to run", got)
	}
}
