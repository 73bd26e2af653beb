package server

import (
	"math"
	"net"
	"testing"
	"time"
)

// TestHistIndex: every finite bucket's bound is the largest value its slot
// takes, the next value goes to the next slot, and Engine.Histograms
// reports exactly those bounds in base units.
func TestHistIndex(t *testing.T) {
	e, err := New(Config{Loops: 1}, HandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(t.Context())
	h := e.Histograms()
	got := [numHists]Histogram{h.LoopTurnSeconds, h.LoopLagSeconds, h.EventsPerTurn, h.OutQueueBytes, h.RequestSeconds}
	for k, lay := range histLayouts {
		if lay.buckets+1 > histSlots {
			t.Fatalf("kind %d: %d buckets need more than %d slots", k, lay.buckets, histSlots)
		}
		if idx := histIndex(0, lay.shift, lay.buckets); idx != 0 {
			t.Errorf("kind %d: 0 in slot %d", k, idx)
		}
		if idx := histIndex(math.MaxUint64, lay.shift, lay.buckets); idx != lay.buckets {
			t.Errorf("kind %d: MaxUint64 in slot %d, want overflow %d", k, idx, lay.buckets)
		}
		hk := got[k]
		if len(hk.Buckets) != lay.buckets || len(hk.Counts) != lay.buckets+1 {
			t.Fatalf("kind %d: %d bounds, %d counts; want %d, %d", k, len(hk.Buckets), len(hk.Counts), lay.buckets, lay.buckets+1)
		}
		for i := 0; i < lay.buckets; i++ {
			le := uint64(1)<<(lay.shift+uint(i)) - 1
			if idx := histIndex(le, lay.shift, lay.buckets); idx != i {
				t.Errorf("kind %d: bound %d in slot %d, want %d", k, le, idx, i)
			}
			if idx := histIndex(le+1, lay.shift, lay.buckets); idx != i+1 {
				t.Errorf("kind %d: %d in slot %d, want %d", k, le+1, idx, i+1)
			}
			if want := float64(le) * lay.unit; hk.Buckets[i] != want {
				t.Errorf("kind %d bucket %d: bound %v, want %v", k, i, hk.Buckets[i], want)
			}
			if i > 0 && hk.Buckets[i] <= hk.Buckets[i-1] {
				t.Errorf("kind %d: bounds not increasing at %d", k, i)
			}
		}
		if hk.Count() != 0 || hk.Sum != 0 {
			t.Errorf("kind %d: %d observations before the engine ran", k, hk.Count())
		}
	}
	if b := h.EventsPerTurn.Buckets; b[0] != 0 || b[1] != 1 || b[2] != 3 {
		t.Errorf("events bounds start %v, want 0 1 3", b[:3])
	}
}

// TestHistAdd: a weighted observation counts w in one slot and v*w in the
// sum, marks the slot dirty, and publishing stores exactly the dirty slots.
func TestHistAdd(t *testing.T) {
	l := &loop{}
	l.hists.own[hRequest].add(histIndex(3000, durShift, durBuckets), 3000, 5)
	l.hists.own[hRequest].add(histIndex(3000, durShift, durBuckets), 3000, 1)
	l.hists.own[hRequest].add(histIndex(100, durShift, durBuckets), 100, 2)
	h := &l.hists.own[hRequest]
	if h.counts[2] != 6 || h.counts[0] != 2 || h.sum != 6*3000+200 {
		t.Fatalf("counts %v sum %d", h.counts[:4], h.sum)
	}
	if h.dirty != 1<<0|1<<2 {
		t.Fatalf("dirty %b", h.dirty)
	}
	l.hists.publish()
	p := &l.hists.pub[hRequest]
	if p.counts[0].Load() != 2 || p.counts[2].Load() != 6 || p.sum.Load() != 18200 || h.dirty != 0 {
		t.Fatalf("published %d %d sum %d, dirty %b", p.counts[0].Load(), p.counts[2].Load(), p.sum.Load(), h.dirty)
	}
	for k := range l.hists.pub {
		if k != hRequest && l.hists.pub[k].sum.Load() != 0 {
			t.Errorf("kind %d published without observations", k)
		}
	}
}

// TestHistogramsUnderLoad drives a real loop over loopback (2 connections,
// 40 rounds of 16 pipelined 64-byte frames each) and checks the histograms
// against the counters and the wall clock: one turn-duration and one
// events observation per turn, events summing to Stats.Events, one
// request observation per frame, one out-queue observation per flush whose
// depths add up to at least the bytes written, and durations whose sums
// fit in the elapsed time (turns and lags are disjoint intervals of one
// loop's time).
func TestHistogramsUnderLoad(t *testing.T) {
	const conns, rounds, depth, size = 2, 40, 16, 64
	t0 := time.Now()
	e := start(t, Config{Loops: 1, Codec: protocolLength()}, echoHandlerAlloc)
	out := pipelined(depth, size)
	clients := make([]net.Conn, conns)
	for i := range clients {
		clients[i] = dial(t, e)
		clients[i].SetDeadline(time.Now().Add(30 * time.Second))
	}
	roundTrips(t, clients, out, rounds)
	const frames = conns * rounds * depth
	var s Stats
	var h EngineHistograms
	waitUntil(t, 5*time.Second, "histograms in step with the counters", func() bool {
		s = e.Stats()
		h = e.Histograms()
		// quiet: the loop sleeps, all published; on io_uring bytes out are
		// counted when a send's completion is reaped, a turn after the send
		return s.Frames == frames && s.BytesOut == uint64(frames*(size+4)) && s == e.Stats() &&
			h.LoopTurnSeconds.Count() == s.Turns && h.RequestSeconds.Count() == s.Frames
	})
	elapsed := time.Since(t0).Seconds()
	t.Logf("turns %d, frames %d, flushes %d, events %d over %.3fs", s.Turns, s.Frames, s.Flushes, s.Events, elapsed)
	for _, x := range []struct {
		name string
		h    Histogram
	}{
		{"turn", h.LoopTurnSeconds}, {"lag", h.LoopLagSeconds}, {"events", h.EventsPerTurn},
		{"outq", h.OutQueueBytes}, {"request", h.RequestSeconds},
	} {
		n := x.h.Count()
		t.Logf("%-7s count %5d sum %.6g mean %.3g", x.name, n, x.h.Sum, x.h.Sum/float64(max(n, 1)))
		if n == 0 {
			t.Errorf("%s: no observations", x.name)
		}
	}
	if n := h.EventsPerTurn.Count(); n != s.Turns {
		t.Errorf("events per turn: %d observations, %d turns", n, s.Turns)
	}
	if sum := h.EventsPerTurn.Sum; sum != float64(s.Events) {
		t.Errorf("events per turn sum %v, Stats.Events %d", sum, s.Events)
	}
	if n := h.LoopLagSeconds.Count(); n == 0 || n > s.Turns {
		t.Errorf("lag: %d observations for %d turns", n, s.Turns)
	}
	if n := h.OutQueueBytes.Count(); n != s.Flushes {
		t.Errorf("out-queue depth: %d observations, %d flushes", n, s.Flushes)
	}
	if want := uint64(frames * (size + 4)); s.BytesOut != want || h.OutQueueBytes.Sum < float64(want) {
		t.Errorf("out-queue depth sum %v, bytes out %d, want at least %d", h.OutQueueBytes.Sum, s.BytesOut, want)
	}
	// one round of one connection is depth*(size+4) = 1088 bytes; two
	// connections' replies never sit in one out-queue
	for i, b := range h.OutQueueBytes.Buckets {
		if b >= 2048 && h.OutQueueBytes.Counts[i+1] != 0 {
			t.Errorf("out-queue depth above %v bytes: %v", b, h.OutQueueBytes.Counts)
			break
		}
	}
	for _, x := range []struct {
		name string
		h    Histogram
	}{{"turn", h.LoopTurnSeconds}, {"lag", h.LoopLagSeconds}} {
		if x.h.Sum <= 0 && x.name == "turn" || x.h.Sum > elapsed {
			t.Errorf("%s durations sum to %.6fs in %.6fs", x.name, x.h.Sum, elapsed)
		}
	}
	// every request observation is the duration of its turn
	if r := h.RequestSeconds; r.Sum <= 0 || r.Sum > float64(frames)*elapsed || r.Sum/float64(frames) > h.LoopTurnSeconds.Sum {
		t.Errorf("request sum %.6fs for %d frames, turns sum %.6fs", r.Sum, frames, h.LoopTurnSeconds.Sum)
	}
}

// BenchmarkHistTurn is the histograms' cost per loop turn as the echo
// path pays it: the wait and turn observations with the extra clock read,
// two out-queue observations (two flushes) and the publish of what
// changed.
func BenchmarkHistTurn(b *testing.B) {
	e, err := New(Config{Loops: 1}, HandlerFuncs{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Shutdown(b.Context())
	l := e.loops[0]
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		prev := l.now
		l.now = e.clock()
		l.observeWait(2+i&3, prev)
		l.hists.observeOutQueue(1088)
		l.hists.observeOutQueue(1088 + i&1023)
		l.st[cFrames] += 32
		l.observeTurn(e.clock())
		l.hists.publish()
	}
}
