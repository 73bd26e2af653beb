package shed

import (
	"testing"
	"time"
)

// TestHold: the short hold, the long one, and a long hold that gathered a
// batch is over.
func TestHold(t *testing.T) {
	short, long := DerivedRejectFlush, LongHold
	for i, tc := range []struct {
		onLong bool
		held   int32
		want   int64
	}{
		{false, 1, short},
		{false, RejectBatch, short},
		{true, 1, long},
		{true, RejectBatch - 1, long},
		{true, RejectBatch, 0},
	} {
		if got := Hold(short, long, tc.onLong, tc.held); got != tc.want {
			t.Errorf("%d: Hold(long %v, held %d) = %d, want %d", i, tc.onLong, tc.held, got, tc.want)
		}
	}
	if !PeerWaits(1, 0, long) || !PeerWaits(3, long/2+1, long) || PeerWaits(3, long/2, long) {
		t.Error("PeerWaits: one refusal held, or quiet for the second half")
	}
}

// TestPace: the average time between frames, by reads, and the sparse
// judgement.
func TestPace(t *testing.T) {
	ms := int64(time.Millisecond)
	var p Pace
	p.Read(100 * ms) // the first read sets the clock
	if p.Sparse() {
		t.Fatal("sparse with no measurement")
	}
	p.Frame()
	p.Frame()
	p.Read(120 * ms) // two frames in 20 ms: 10 ms apart
	if p.gap != 10*ms || !p.Sparse() || p.BatchDue(0) != 10*ms*RejectBatch {
		t.Fatalf("gap %d sparse %v", p.gap, p.Sparse())
	}
	for i := 0; i < 4; i++ {
		p.Frame()
	}
	p.Read(124 * ms) // 1 ms apart: the average moves a quarter of the way
	if want := 10*ms + (ms-10*ms)/4; p.gap != want {
		t.Errorf("gap %d, want %d", p.gap, want)
	}
	for i := 0; i < 20; i++ {
		for j := 0; j < 10; j++ {
			p.Frame()
		}
		p.Read(124*ms + int64(i+1)*ms) // 0.1 ms apart
	}
	if p.Sparse() {
		t.Errorf("dense connection (gap %v) judged sparse", time.Duration(p.gap))
	}
}

// TestLight: a connection is light when its pace is at least
// LightShares fair shares apart (service × active connections), and
// never without a measurement of either.
func TestLight(t *testing.T) {
	us := int64(time.Microsecond)
	for _, tc := range []struct {
		name    string
		service int64
		active  int32
		gap     int64 // the connection's measured pace; 0: none
		light   bool
	}{
		{"no service measured", 0, 64, 50_000 * us, false},
		{"no active connections", 200 * us, 0, 50_000 * us, false},
		{"no pace measured", 200 * us, 64, 0, false},
		{"20/s among 65 at 200 µs", 200 * us, 65, 50_000 * us, true},
		{"at its fair share only", 200 * us, 65, 13_000 * us, false},
		{"exactly half its share", 200 * us, 65, 26_000 * us, true},
		{"dense", 200 * us, 65, 400 * us, false},
		{"5,000 connections: a share is 2 s", 200 * us, 5000, 50_000 * us, false},
	} {
		p := Pace{gap: tc.gap}
		if got := p.Light(LightGap(tc.service, tc.active)); got != tc.light {
			t.Errorf("%s: light %v, want %v (gap %d)", tc.name, got, tc.light, LightGap(tc.service, tc.active))
		}
	}
}

// TestLightUnmeasured: with no pace yet, a read's only frame is light
// in the connection's first read, or when the read comes at least the
// light gap after the previous one; a second frame in the read, a read
// sooner, or no light gap is not. Two reads at one clock reading fold
// nothing into the pace.
func TestLightUnmeasured(t *testing.T) {
	ms := int64(time.Millisecond)
	var p Pace
	p.Frame()
	if !p.LightUnmeasured(100*ms, 10*ms) || p.LightUnmeasured(100*ms, 0) {
		t.Fatal("first read's only frame: want light with a light gap, not without")
	}
	p.Frame()
	if p.LightUnmeasured(100*ms, 10*ms) {
		t.Fatal("a second frame in the first read judged light")
	}
	p.Read(100 * ms)
	p.Read(100 * ms) // same turn: nothing folded, the frames wait for the next read
	if p.gap != 0 || p.frames != 0 || p.readAt != 100*ms {
		t.Fatalf("after the first reads: gap %d frames %d readAt %d", p.gap, p.frames, p.readAt)
	}
	p.Frame()
	if !p.LightUnmeasured(120*ms, 10*ms) || p.LightUnmeasured(105*ms, 10*ms) {
		t.Fatal("second read: light 20 ms after the first, not 5 ms after")
	}
	p.Read(120 * ms)
	if p.gap != 20*ms || p.LightUnmeasured(200*ms, 10*ms) {
		t.Fatalf("measured pace %d: LightUnmeasured must defer to it", p.gap)
	}
}

// TestLightRead: a read's only frame a light gap or more after the
// previous read shows a light pace, measured pace or not; a read sooner,
// a second frame, the first read (nothing to measure from) or no light gap
// does not.
func TestLightRead(t *testing.T) {
	ms := int64(time.Millisecond)
	var p Pace
	p.Frame()
	if p.LightRead(100*ms, 10*ms) {
		t.Fatal("the first read judged by a gap it does not have")
	}
	p.Read(100 * ms)
	p.Frame()
	p.Read(101 * ms) // a measured pace of 1 ms
	p.Frame()
	if !p.LightRead(111*ms, 10*ms) || !p.LightRead(110*ms, 9*ms) || p.LightRead(110*ms, 0) {
		t.Fatal("one frame 10 ms after the last read: want light for a 10 ms gap, not without a gap")
	}
	if p.LightRead(105*ms, 10*ms) {
		t.Fatal("one frame 4 ms after the last read judged light for a 10 ms gap")
	}
	p.Frame()
	if p.LightRead(200*ms, 10*ms) {
		t.Fatal("a read of two frames judged light")
	}
}

// TestPredictedLong: frames ahead and one in service, over the workers,
// plus its own service, against the limit; an empty queue takes a frame.
func TestPredictedLong(t *testing.T) {
	us := int64(time.Microsecond)
	cases := []struct {
		ahead, workers int
		svc, limit     int64
		want           bool
	}{
		{0, 1, 1000 * us, 1, false},       // an empty queue takes the frame
		{1, 1, 200 * us, 600 * us, false}, // (1+1)·200 + 200 = 600, not more
		{1, 1, 200 * us, 599 * us, true},
		{3, 4, 200 * us, 400 * us, false}, // 4·200 + 800 = 1600 = 400·4
		{4, 4, 200 * us, 400 * us, true},
	}
	for i, tc := range cases {
		if got := PredictedLong(tc.ahead, tc.workers, tc.svc, tc.limit); got != tc.want {
			t.Errorf("%d: PredictedLong(%d, %d, %d, %d) = %v, want %v", i, tc.ahead, tc.workers, tc.svc, tc.limit, got, tc.want)
		}
	}
}
