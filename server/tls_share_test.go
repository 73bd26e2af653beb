package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestHandshakeShareBudget: the share's arithmetic. Without established
// traffic nothing is charged and nothing waits; with it, a step that
// overlapped a loop with work is charged, one that did not is free, and
// once the budget is spent the next step waits (here: until its context
// ends) and the wait is counted.
func TestHandshakeShareBudget(t *testing.T) {
	e := &Engine{start: time.Now()} // no loops: loopsBusy is false
	e.tls.initShare(0.1, 1)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	s := &e.tls.share
	full := s.budget
	if full != shareBurst {
		t.Fatalf("budget starts at %d, want %d", full, shareBurst)
	}
	e.chargeShare(e.clock()-int64(10*time.Millisecond), true)
	if s.budget != full {
		t.Errorf("charged %d without established traffic", full-s.budget)
	}
	e.tls.estAt.Store(e.clock())
	e.tls.estShare.Store(math.Float64bits(1)) // every read of the loops an established connection's
	e.chargeShare(e.clock()-int64(10*time.Millisecond), false)
	if s.budget != full {
		t.Errorf("charged %d for a step no loop wanted the core for", full-s.budget)
	}
	if err := e.waitShare(done); err != nil {
		t.Errorf("waitShare with the budget full = %v", err)
	}
	e.chargeShare(e.clock()-int64(10*time.Millisecond), true)
	if s.budget > full-int64(7*time.Millisecond) {
		t.Errorf("budget %d after a 10 ms step overlapping a busy loop, want at most %d", s.budget, full-int64(7*time.Millisecond))
	}
	if err := e.waitShare(done); !errors.Is(err, context.Canceled) {
		t.Errorf("waitShare with the budget spent = %v, want the context's error", err)
	}
	e.tls.estAt.Store(e.clock() - estWindow)
	if err := e.waitShare(done); err != nil {
		t.Errorf("waitShare once established traffic stopped = %v", err)
	}
	var st Stats
	e.tlsStats(&st)
	if st.TLSShareWait <= 0 {
		t.Errorf("TLSShareWait = %v after a wait", st.TLSShareWait)
	}
}

// TestTLSHandshakeShare: with a share so small that handshakes overlapping
// the loop soon spend it, handshakes that arrive while an established
// connection (its handshake estWindow old) keeps its loop busy come to
// wait (TLSShareWait grows) while the connection's echoes all come back;
// once it stops, they all complete.
func TestTLSHandshakeShare(t *testing.T) {
	ca := tlsCA(t)
	e := start(t, Config{Loops: 1, Codec: protocolLength(), TLS: ca.server(), HandshakeCPUs: 1,
		HandshakeShare: 1e-6, TLSHandshakeTimeout: time.Minute}, newTestHandler())
	good, err := tls.Dial("tcp", e.Addr().String(), ca.client())
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	stop := make(chan struct{})
	echoes := make(chan int, 1)
	go func() {
		msg := pipelined(4, 100)
		back := make([]byte, len(msg))
		n := 0
		defer func() { echoes <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			good.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := good.Write(msg); err != nil {
				t.Error(err)
				return
			}
			if _, err := io.ReadFull(good, back); err != nil || !bytes.Equal(back, msg) {
				t.Errorf("echo %d beside the handshakes: %v", n, err)
				return
			}
			n++
		}
	}()
	// the echoing connection counts as established once its handshake is
	// estWindow old: then the loop publishes its reads as such
	if !poll(10*time.Second, func() bool { return e.tls.estAt.Load() > 0 }) {
		t.Fatal("the echoing connection's reads never counted as established")
	}
	// sixteen clients handshake one after another until handshakes wait
	// (a fast machine may fit the first ones in the share's burst)
	const clients, most = 16, 4096
	var wg sync.WaitGroup
	var dialed, completed atomic.Int64
	var waited atomic.Bool
	errs := make(chan error, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := &tls.Dialer{Config: ca.client()}
			for !waited.Load() && dialed.Add(1) <= most {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				c, err := d.DialContext(ctx, "tcp", e.Addr().String())
				cancel()
				if err != nil {
					errs <- err
					return
				}
				completed.Add(1)
				c.Close()
			}
		}()
	}
	waitStats(t, e, "handshakes waiting for their share", func(s Stats) bool { return s.TLSShareWait > 0 })
	waited.Store(true)
	close(stop)
	n := <-echoes
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("handshake after the established traffic stopped: %v", err)
	}
	handshakes := uint64(completed.Load())
	s := waitStats(t, e, "every handshake done", func(s Stats) bool { return s.TLSHandshakes == handshakes+1 })
	t.Logf("%d echoes beside %d handshakes; they waited %v for the share in all", n, handshakes, s.TLSShareWait)
}

// TestNoteEstablished: a loop publishes established connections' share of
// its TLS reads since its last publication, at most once a millisecond,
// and nothing while only young connections (the handshakes' own) read.
func TestNoteEstablished(t *testing.T) {
	e := &Engine{start: time.Now()}
	e.tls.initShare(0.1, 1)
	l := &loop{e: e}
	ms := int64(time.Millisecond)
	l.tlsReads = 10
	l.noteEstablished(2 * ms)
	if at := e.tls.estAt.Load(); at != -estWindow {
		t.Errorf("published at %d after reads of young connections only", at)
	}
	l.tlsReads, l.tlsEstReads = 20, 5
	l.noteEstablished(2*ms + ms/2)
	if at := e.tls.estAt.Load(); at != -estWindow {
		t.Errorf("published at %d within a millisecond of the last publication", at)
	}
	l.noteEstablished(4 * ms)
	if at, sh := e.tls.estAt.Load(), math.Float64frombits(e.tls.estShare.Load()); at != 4*ms || sh != 0.5 {
		t.Errorf("published at %d share %v, want %d and 0.5 (5 of the 10 reads since)", at, sh, 4*ms)
	}
}
