package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/admission/shed"
	"github.com/sluicenet/sluice/protocol"
)

// newAdmitter builds an Admitter for tests, failing the test on error.
func newAdmitter(t testing.TB, cfg admission.Config) *admission.Admitter {
	t.Helper()
	a, err := admission.NewAdmitter(cfg)
	if err != nil {
		t.Fatalf("NewAdmitter: %v", err)
	}
	return a
}

// lineConn is a client of the line codec.
type lineConn struct {
	net.Conn
	r *bufio.Reader
}

func dialLine(t testing.TB, addr string, local net.IP) *lineConn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if local != nil {
		d.LocalAddr = &net.TCPAddr{IP: local}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %v: %v", local, err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return &lineConn{Conn: c, r: bufio.NewReader(c)}
}

func (c *lineConn) line(t testing.TB) string {
	t.Helper()
	s, err := c.r.ReadString('\n')
	if err != nil {
		t.Fatalf("read: %v (got %q)", err, s)
	}
	return strings.TrimSuffix(s, "\n")
}

// TestPolicyGateFlood: a connection flood past the policy's connection
// budget closes the gate (the rest waits in the kernel backlog, which Stats
// shows through TCP_INFO), the gate stays closed above the low watermark and
// through the dwell (no flapping: the transitions are counted), reopens
// below it, and every connection is served in the end.
func TestPolicyGateFlood(t *testing.T) {
	const budget, total = 20, 36 // the backlog left after the first wave stays under the budget
	adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1,
		Gate:           admission.GateConfig{Watermark: admission.Watermark{High: 1, Low: 0.5, MinDwell: 200 * time.Millisecond}},
		SampleInterval: time.Millisecond,
	})
	h := newTestHandler()
	e := start(t, Config{Loops: 2, Codec: protocol.Delimited{}, MaxAcceptPerTurn: 1, Backlog: 128, MaxConns: budget,
		Admission: AdmissionPolicy{Admitter: adm}}, h)
	var clients []*lineConn
	for i := 0; i < total; i++ {
		clients = append(clients, dialLine(t, e.Addr().String(), nil))
		time.Sleep(time.Millisecond) // a fast flood, not one burst: the policy samples every millisecond
	}
	s := waitStats(t, e, "gate closed and backlog seen", func(s Stats) bool {
		return !s.GateOpen && s.Admission.Gate.State == admission.GateClosed &&
			s.Admission.AcceptQueueDepth == int64(total)-int64(s.Accepted)
	})
	accepted := s.Accepted
	t.Logf("accepted %d of %d, backlog %d/%d, pressure %.2f", accepted, total,
		s.Admission.AcceptQueueDepth, s.Admission.AcceptQueueLimit, s.Admission.Gate.Pressure)
	if accepted < budget || accepted >= total {
		t.Fatalf("accepted %d with a budget of %d and %d dialled", accepted, budget, total)
	}
	if s.Admission.AcceptQueueLimit < 128 {
		t.Errorf("accept queue limit %d, want the backlog (128 per socket)", s.Admission.AcceptQueueLimit)
	}
	// every client says hello; the accepted ones answer while the gate is
	// closed, the others wait in the backlog
	served := make([]bool, total)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, c := range clients {
		fmt.Fprintf(c, "hello %d\n", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(time.Now().Add(time.Second))
			if got, err := c.r.ReadString('\n'); err == nil && got == fmt.Sprintf("hello %d\n", i) {
				mu.Lock()
				served[i] = true
				mu.Unlock()
			}
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
		}()
	}
	wg.Wait()
	open := 0
	for _, v := range served {
		if v {
			open++
		}
	}
	if open != int(accepted) {
		t.Fatalf("%d clients answered, %d accepted", open, accepted)
	}
	// close accepted connections down to just above the low watermark: the
	// gate stays closed, through more than one dwell
	for i, c := range clients {
		if open == budget/2+1 {
			break
		}
		if served[i] {
			c.Close()
			open--
		}
	}
	time.Sleep(400 * time.Millisecond)
	s = e.Stats()
	if s.GateOpen || s.Admission.Gate.Transitions != 1 || s.Accepted != accepted {
		t.Fatalf("above the low watermark: gate open %v, policy transitions %d, accepted %d (was %d); want closed, 1, unchanged",
			s.GateOpen, s.Admission.Gate.Transitions, s.Accepted, accepted)
	}
	// close the rest: below the low watermark, after the dwell, the gate
	// opens and the backlog is served (its hello answered)
	var late []int
	for i, c := range clients {
		if served[i] {
			c.Close()
		} else {
			late = append(late, i)
		}
	}
	for _, i := range late {
		want := fmt.Sprintf("hello %d", i)
		if got := clients[i].line(t); got != want {
			t.Fatalf("late client %d: %q, want %q", i, got, want)
		}
	}
	s = waitStats(t, e, "all accepted", func(s Stats) bool { return s.Accepted == total })
	g := s.Admission.Gate
	t.Logf("policy gate: %d transitions (%d closes, %d opens); engine gate %d transitions", g.Transitions, g.Closes, g.Opens, s.GateTransitions)
	// closed once at the flood, opened once when the first wave left; the
	// backlog (at most 16 connections) cannot push the pressure to 1 again,
	// so no more transitions: no flapping.
	if g.Closes != 1 || g.Opens != 1 || g.Transitions != 2 {
		t.Errorf("policy gate transitions %+v; want exactly one close and one open", g)
	}
}

// TestNoisyNeighbour: one tenant (127.0.0.2) floods far past its quota and
// is refused in protocol with reason "tenant" and an exact retry-after,
// while another tenant's requests (127.0.0.1) are all served with low
// latency on the same loop.
func TestNoisyNeighbour(t *testing.T) {
	tl, err := admission.NewTenantLimiter(admission.TenantConfig{
		Quota: admission.Quota{Count: 200, Per: time.Second, Burst: 20}})
	if err != nil {
		t.Fatal(err)
	}
	adm := newAdmitter(t, admission.Config{Tenants: tl, MemoryLimitBytes: -1})
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{}, Admission: AdmissionPolicy{Admitter: adm}}, newTestHandler())
	noisy := dialLine(t, e.Addr().String(), net.IPv4(127, 0, 0, 2))
	quiet := dialLine(t, e.Addr().String(), net.IPv4(127, 0, 0, 1))

	const flood = 5000
	var echoed, rejected atomic.Int64
	var minRetry atomic.Int64
	minRetry.Store(int64(time.Hour))
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the flood, pipelined
		defer wg.Done()
		w := bufio.NewWriter(noisy)
		for i := 0; i < flood; i++ {
			fmt.Fprintf(w, "n%d\n", i)
		}
		w.Flush()
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < flood; i++ {
			s, err := noisy.r.ReadString('\n')
			if err != nil {
				t.Errorf("noisy read %d: %v", i, err)
				return
			}
			s = strings.TrimSuffix(s, "\n")
			if reason, retry, ok := protocol.ParseRejectText([]byte(s)); ok {
				if reason != "tenant" || retry <= 0 {
					t.Errorf("reject %q: reason %q retry %v", s, reason, retry)
				}
				rejected.Add(1)
				if int64(retry) < minRetry.Load() {
					minRetry.Store(int64(retry))
				}
				continue
			}
			if s != fmt.Sprintf("n%d", i) {
				t.Errorf("noisy reply %d: %q", i, s)
				return
			}
			echoed.Add(1)
		}
	}()
	var worst time.Duration
	for i := 0; i < 20; i++ {
		t0 := time.Now()
		fmt.Fprintf(quiet, "q%d\n", i)
		if got := quiet.line(t); got != fmt.Sprintf("q%d", i) {
			t.Fatalf("quiet request %d: %q", i, got)
		}
		worst = max(worst, time.Since(t0))
		time.Sleep(10 * time.Millisecond)
	}
	wg.Wait()
	t.Logf("noisy: %d echoed, %d rejected (min retry-after %v); quiet: worst latency %v",
		echoed.Load(), rejected.Load(), time.Duration(minRetry.Load()), worst)
	if rejected.Load() < flood/2 || echoed.Load() < 20 {
		t.Errorf("noisy tenant: %d echoed, %d rejected of %d", echoed.Load(), rejected.Load(), flood)
	}
	// The quiet tenant's latency is a performance figure (logged above, and
	// measured by the lab); what this test holds is that every one of its
	// requests was served beside the flood, none refused for the noisy
	// tenant's quota.
	s := waitStats(t, e, "rejects counted", func(s Stats) bool {
		return s.Admission.Rejects[admission.ReasonTenant] == uint64(rejected.Load())
	})
	if s.Admission.Policy.Decisions[admission.ReasonTenant] != uint64(rejected.Load()) {
		t.Errorf("admitter counted %d tenant refusals, engine %d", s.Admission.Policy.Decisions[admission.ReasonTenant], rejected.Load())
	}
}

// TestQueuedBytesBudget: peers that send far more than they read cannot
// take the engine's queued bytes much past the policy's global budget: at
// the cap their frames are refused and a connection with output pending
// stops being read, while a well-behaved connection keeps being served.
func TestQueuedBytesBudget(t *testing.T) {
	const budget = 1 << 20
	const peers = 24 // × the per-connection high watermark (128 KiB) = 3 MiB without the budget
	adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1,
		SampleInterval: time.Millisecond,
	})
	e := start(t, Config{Loops: 1, Codec: protocol.LengthPrefixed{}, WriteStallTimeout: -1, IdleTimeout: -1,
		MaxQueuedBytes: budget, Admission: AdmissionPolicy{Admitter: adm}}, newTestHandler())
	var conns []net.Conn
	for i := 0; i < peers; i++ {
		c, err := dialSmallWindow(e.Addr().String(), 4096)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	var maxQueued atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	frame := binary.BigEndian.AppendUint32(nil, 4092)
	frame = append(frame, bytes.Repeat([]byte("x"), 4092)...)
	chunk := bytes.Repeat(frame, 16) // 64 KiB of frames
	var sent atomic.Int64
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
				n, _ := c.Write(chunk)
				sent.Add(int64(n))
			}
		}()
	}
	good := dial(t, e)
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		s := e.Stats()
		if q := s.QueuedOutBytes + s.QueuedInBytes; q > maxQueued.Load() {
			maxQueued.Store(q)
		}
		time.Sleep(time.Millisecond)
	}
	// a reading connection is still served (its frames may be refused with
	// "global" while the budget is spent: either answer is a reply)
	good.SetDeadline(time.Now().Add(5 * time.Second))
	good.Write(append(binary.BigEndian.AppendUint32(nil, 16), bytes.Repeat([]byte("y"), 16)...))
	var hdr [4]byte
	if _, err := io.ReadFull(good, hdr[:]); err != nil {
		t.Fatalf("well-behaved connection: %v", err)
	}
	close(stop)
	wg.Wait()
	s := e.Stats()
	t.Logf("peers sent %d MiB; max queued %d KiB against a budget of %d KiB; %d frames refused for global, %d pauses",
		sent.Load()>>20, maxQueued.Load()>>10, budget>>10, s.Admission.Rejects[admission.ReasonGlobal], s.Pauses)
	if sent.Load() < 4*budget {
		t.Errorf("peers sent only %d bytes", sent.Load())
	}
	// the budget, plus a small read (4 KiB in, 4 KiB out) per connection
	// whose queue was empty in the turn that crossed it
	if limit := int64(budget + peers*8<<10); maxQueued.Load() > limit {
		t.Errorf("queued bytes reached %d, budget %d (limit %d)", maxQueued.Load(), budget, limit)
	}
}

// TestRejectsWellFormed: refusals reach the client as replies in its own
// protocol, with the reason and retry-after, and the connection keeps
// working afterwards: length-prefixed and line frames carry
// "-REJECT reason ms".
func TestRejectsWellFormed(t *testing.T) {
	tl, err := admission.NewTenantLimiter(admission.TenantConfig{
		Quota: admission.Quota{Count: 10, Per: time.Second, Burst: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, codec := range []protocol.Codec{protocol.LengthPrefixed{}, protocol.Delimited{}} {
		t.Run(fmt.Sprintf("%T", codec), func(t *testing.T) {
			adm := newAdmitter(t, admission.Config{Tenants: tl, MemoryLimitBytes: -1})
			e := start(t, Config{Loops: 1, Codec: codec, Admission: AdmissionPolicy{Admitter: adm,
				// each connection is its own tenant, so the subtests do not share a quota
				TenantKey: func(dst []byte, peer netip.AddrPort, _ []byte) []byte {
					return binary.BigEndian.AppendUint16(dst, peer.Port())
				}}}, newTestHandler())
			c := dial(t, e)
			c.SetDeadline(time.Now().Add(5 * time.Second))
			r := bufio.NewReader(c)
			send := func(msg string) { c.Write(codec.AppendEncode(nil, []byte(msg))) }
			recv := func() string {
				if _, ok := codec.(protocol.LengthPrefixed); ok {
					var hdr [4]byte
					if _, err := io.ReadFull(r, hdr[:]); err != nil {
						t.Fatalf("read: %v", err)
					}
					b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
					if _, err := io.ReadFull(r, b); err != nil {
						t.Fatalf("read: %v", err)
					}
					return string(b)
				}
				line, err := r.ReadString('\n')
				if err != nil {
					t.Fatalf("read: %v", err)
				}
				return strings.TrimSuffix(line, "\n")
			}
			send("one")
			send("two") // over the burst of 1: refused
			if got := recv(); got != "one" {
				t.Fatalf("first reply %q", got)
			}
			got := recv()
			reason, retry, ok := protocol.ParseRejectText([]byte(got))
			if !ok || reason != "tenant" || retry <= 0 || retry > 100*time.Millisecond {
				t.Fatalf("second reply %q: want a tenant reject with retry-after in (0, 100ms]", got)
			}
			time.Sleep(retry)
			send("three") // the connection still works, and the quota has refilled
			if got := recv(); got != "three" {
				t.Fatalf("after the retry-after: %q", got)
			}
		})
	}
}

// TestFramesPerTurn: a pipelined burst far above MaxFramesPerTurn is
// served in order across turns, the rest waiting in the connection's input.
func TestFramesPerTurn(t *testing.T) {
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{}, MaxFramesPerTurn: 16}, newTestHandler())
	c := dial(t, e)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var req bytes.Buffer
	const n = 3000
	for i := 0; i < n; i++ {
		fmt.Fprintf(&req, "%d\n", i)
	}
	go c.Write(req.Bytes())
	r := bufio.NewReader(c)
	for i := 0; i < n; i++ {
		s, err := r.ReadString('\n')
		if err != nil || s != fmt.Sprintf("%d\n", i) {
			t.Fatalf("reply %d: %q, %v", i, s, err)
		}
	}
	// counters are published at the end of a turn, and the last replies
	// may leave (flushEarly) before the turn that decoded them ends
	s := waitStats(t, e, "frame budget spent and every frame counted", func(s Stats) bool { return s.FrameBudgetSpent > 0 && s.Frames >= n })
	if s.Frames != n {
		t.Errorf("frames %d, want %d", s.Frames, n)
	}
	t.Logf("%d frames, frame budget spent %d times, %d turns", s.Frames, s.FrameBudgetSpent, s.Turns)
}

// TestShedOnQueueDelay: with a slow inline handler and a standing queue,
// CoDel on the loop (alone: MaxQueueDelay Off) refuses frames that waited too long (reason "codel")
// with cheap rejects, so the frames it does serve wait little.
func TestShedOnQueueDelay(t *testing.T) {
	adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1,
		CoDel: &admission.CoDelConfig{Target: 2 * time.Millisecond, Interval: 20 * time.Millisecond}})
	h := newTestHandler()
	h.frame = func(c *Conn, frame []byte) Action {
		busyFor(200 * time.Microsecond)
		c.WriteFrame(frame)
		return None
	}
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{}, MaxFramesPerTurn: 8,
		Admission: AdmissionPolicy{Admitter: adm, MaxQueueDelay: Off}}, h) // CoDel alone, not the derived caps
	const conns, per = 8, 400 // 3,200 frames × 200µs = 640 ms of work, sent at once
	var wg sync.WaitGroup
	var served, shed atomic.Int64
	for i := 0; i < conns; i++ {
		c := dialLine(t, e.Addr().String(), nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var req bytes.Buffer
			for j := 0; j < per; j++ {
				fmt.Fprintf(&req, "%d\n", j)
			}
			c.Write(req.Bytes())
			for j := 0; j < per; j++ {
				s := c.line(t)
				if reason, _, ok := protocol.ParseRejectText([]byte(s)); ok {
					if reason != "codel" {
						t.Errorf("reject reason %q", reason)
					}
					shed.Add(1)
				} else if s != fmt.Sprint(j) {
					t.Errorf("reply %q, want %d", s, j)
					return
				} else {
					served.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("served %d, shed %d (codel)", served.Load(), shed.Load())
	if shed.Load() == 0 || served.Load() == 0 {
		t.Errorf("served %d, shed %d: want both", served.Load(), shed.Load())
	}
}

// poolHandler sleeps for the frame's first byte × 10 ms ('0'..'9'), waits
// for release to be closed when it is set, then echoes; it records the
// deadline it saw.
type poolHandler struct {
	deadlines chan time.Duration
	release   chan struct{}
	started   chan string // if set, each frame as a worker starts it (buffered: never blocks the worker)
}

func (h *poolHandler) ServeFrame(ctx context.Context, c *Conn, frame []byte) Action {
	if h.started != nil {
		select {
		case h.started <- string(frame):
		default:
		}
	}
	if d, ok := ctx.Deadline(); ok && h.deadlines != nil {
		select {
		case h.deadlines <- time.Until(d):
		default:
		}
	}
	if len(frame) > 0 && frame[0] >= '0' && frame[0] <= '9' {
		select {
		case <-time.After(time.Duration(frame[0]-'0') * 10 * time.Millisecond):
		case <-ctx.Done():
			return None
		}
	}
	if h.release != nil {
		select {
		case <-h.release:
		case <-ctx.Done():
			return None
		}
	}
	if err := c.WriteFrame(frame); err != nil {
		c.CloseWithError(err)
	}
	return None
}

// TestPoolEcho: blocking frames run on workers and reply through the inbox;
// the context carries the request deadline; a peer that half-closes after
// sending still gets every reply before the connection closes.
func TestPoolEcho(t *testing.T) {
	ph := &poolHandler{deadlines: make(chan time.Duration, 64)}
	h := newTestHandler()
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{},
		Pool: PoolConfig{Handler: ph, Workers: 1, RequestTimeout: 3 * time.Second}}, h)
	c := dial(t, e)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("1a\n1b\n1c\n"))
	c.CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "1a\n1b\n1c\n" {
		t.Fatalf("replies %q, %v", got, err)
	}
	sc := h.nextOpen(t)
	if cause := h.closeOf(t, sc, 5*time.Second); !errors.Is(cause, ErrPeerClosed) {
		t.Errorf("close cause %v", cause)
	}
	d := <-ph.deadlines
	if d <= 2*time.Second || d > 3*time.Second {
		t.Errorf("deadline in %v, want about 3s", d)
	}
	// a worker counts a task served before its loop hears of it (through
	// the inbox) and publishes the in-flight count: wait for both, and a
	// count that never returns to zero fails the wait
	waitStats(t, e, "3 served and nothing in flight", func(s Stats) bool {
		return s.Admission.Pool.Served == 3 && s.Admission.InflightReqs == 0
	})
}

// TestPoolQueueFull: a full queue refuses at once with reason "queue"; the
// connection keeps working.
func TestPoolQueueFull(t *testing.T) {
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{},
		Pool: PoolConfig{Handler: &poolHandler{}, Workers: 1, QueueLen: 2, Unordered: true}}, newTestHandler())
	c := dial(t, e)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	// one running (50ms), two queued, the rest refused
	c.Write([]byte("5a\n"))
	waitStats(t, e, "one running", func(s Stats) bool { return s.Admission.Pool.Running == 1 })
	c.Write([]byte("5b\n5c\n5d\n5e\n"))
	r := bufio.NewReader(c)
	var replies, rejects int
	for i := 0; i < 5; i++ {
		s, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if reason, _, ok := protocol.ParseRejectText([]byte(strings.TrimSpace(s))); ok {
			if reason != "queue" {
				t.Errorf("reason %q", reason)
			}
			rejects++
		} else {
			replies++
		}
	}
	if replies != 3 || rejects != 2 {
		t.Errorf("%d replies, %d rejects; want 3 and 2", replies, rejects)
	}
	c.Write([]byte("0z\n"))
	if s, err := r.ReadString('\n'); err != nil || s != "0z\n" {
		t.Fatalf("after the rejects: %q, %v", s, err)
	}
	waitStats(t, e, "queue rejects counted", func(s Stats) bool { return s.Admission.Rejects[admission.ReasonQueue] == 2 })
}

// TestPoolCoDel: under a standing queue the pool sheds with reason
// "codel", cheaply, and every frame is answered.
func TestPoolCoDel(t *testing.T) {
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{},
		Pool: PoolConfig{Handler: &poolHandler{}, Workers: 1, QueueLen: 512, Unordered: true, // one connection fills the queue
			CoDel: &admission.CoDelConfig{Target: 2 * time.Millisecond, Interval: 20 * time.Millisecond}}}, newTestHandler())
	c := dial(t, e)
	c.SetDeadline(time.Now().Add(20 * time.Second))
	t0 := time.Now()
	served, shed := poolBurst(t, c)
	t.Logf("served %d, shed %d in %v", served, shed, time.Since(t0))
	if shed == 0 || served == 0 {
		t.Errorf("served %d, shed %d: want both", served, shed)
	}
}

// poolBurst offers c 200 frames of 10 ms each at once (2 s of service
// without shedding) and counts the answers: served, or refused with reason
// "codel" (any other reason is an error).
func poolBurst(t *testing.T, c net.Conn) (served, shed int) {
	t.Helper()
	const n = 200 // 200 × 10 ms of service offered at once: 2 s without shedding
	var req bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&req, "1-%d\n", i)
	}
	c.Write(req.Bytes())
	r := bufio.NewReader(c)
	for i := 0; i < n; i++ {
		s, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if reason, _, ok := protocol.ParseRejectText([]byte(strings.TrimSpace(s))); ok {
			if reason != "codel" {
				t.Errorf("reason %q", reason)
			}
			shed++
		} else {
			served++
		}
	}
	return served, shed
}

// barePool returns a pool with CoDel cd and no workers, for take to be
// called directly, and its engine's clock reading.
func barePool(t *testing.T, cd *admission.CoDelConfig) (*pool, int64) {
	t.Helper()
	e := &Engine{start: time.Now()}
	e.cfg.Pool = PoolConfig{Handler: &poolHandler{}, QueueLen: 8, CoDel: cd}
	e.cfg.Pool = e.cfg.Pool.withDefaults()
	p, err := newPool(e)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.cancel)
	return p, e.clock()
}

// queueTasks appends tasks to p's queue as submit would, as normal frames.
func queueTasks(p *pool, tasks ...poolTask) {
	queueClass(p, admission.PriorityNormal, tasks...)
}

// queueClass appends tasks of priority prio to p's queue as submit would.
func queueClass(p *pool, prio admission.Priority, tasks ...poolTask) {
	r := &p.rings[prio]
	if r.q == nil {
		r.q = make([]poolTask, p.cfg.QueueLen)
	}
	for _, tk := range tasks {
		tk.prio = prio
		r.push(tk)
		p.n++
	}
}

// overloadCoDel has p's CoDel see an interval whose minimum sojourn
// (30 ms) is above its target, ending before now.
func overloadCoDel(t *testing.T, p *pool, now int64) {
	t.Helper()
	ms := int64(time.Millisecond)
	p.codel.Dequeue(p.e.timeAt(now-60*ms), p.e.timeAt(now-90*ms))
	p.codel.Dequeue(p.e.timeAt(now-40*ms), p.e.timeAt(now-70*ms))
	if !p.codel.ServeNewestFirst() {
		t.Fatal("CoDel not overloaded")
	}
}

// TestPoolNewestFirst: while CoDel reports a standing queue, a worker takes
// the newest frame; otherwise the oldest.
func TestPoolNewestFirst(t *testing.T) {
	cd := &admission.CoDelConfig{Target: time.Millisecond, Interval: 10 * time.Millisecond}
	p, now := barePool(t, cd)
	queueTasks(p, poolTask{fd: 1, enq: now}, poolTask{fd: 2, enq: now})
	if tk, _, _ := p.take(); tk.fd != 1 {
		t.Fatalf("not overloaded: took %d, want the oldest (1)", tk.fd)
	}
	// a fresh pool whose CoDel saw an interval with a minimum sojourn (30 ms)
	// above the target
	p, now = barePool(t, cd)
	overloadCoDel(t, p, now)
	now = p.e.clock()
	queueTasks(p, poolTask{fd: 1, enq: now}, poolTask{fd: 2, enq: now}, poolTask{fd: 3, enq: now})
	for _, want := range []int32{3, 2, 1} {
		if tk, _, _ := p.take(); tk.fd != want {
			t.Fatalf("overloaded: took %d, want the newest (%d)", tk.fd, want)
		}
	}
}

// TestPoolShutdownDrains: Shutdown lets queued and running frames finish
// and reply before connections close.
func TestPoolShutdownDrains(t *testing.T) {
	e, err := New(Config{Loops: 1, Codec: protocol.Delimited{},
		Pool: PoolConfig{Handler: &poolHandler{}, Workers: 2, Unordered: true}}, newTestHandler())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", e.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("9a\n9b\n9c\n9d\n"))
	waitStats(t, e, "in flight", func(s Stats) bool { return s.Admission.InflightReqs == 4 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	got, _ := io.ReadAll(c)
	if len(got) != len("9a\n9b\n9c\n9d\n") {
		t.Fatalf("replies before the close: %q", got)
	}
}

// childPolicy is the admission policy of the "emfile-policy" child.
func childPolicy() (AdmissionPolicy, error) {
	adm, err := admission.NewAdmitter(admission.Config{MemoryLimitBytes: -1,
		Gate: admission.GateConfig{FDPause: 100 * time.Millisecond}})
	return AdmissionPolicy{Admitter: adm}, err
}

// TestEMFILEAdmission: with an admission policy, EMFILE under a lowered
// RLIMIT_NOFILE (in a child process) pauses the policy's gate for its
// FDPause, every loop's listener leaves epoll, CPU stays low, and the
// waiting connections are served once fds are free.
func TestEMFILEPolicy(t *testing.T) {
	began := time.Now()
	ch := startChild(t, "emfile-policy")
	const total = 10
	conns := dialN(t, ch.addr, total)
	var r0 childReport
	waitUntil(t, 10*time.Second, "policy gate paused", func() bool {
		r0 = ch.report(t, "")
		return r0.Stats.Admission.Gate.Pauses > 0
	})
	accepted := r0.Stats.Accepted
	if accepted >= total {
		t.Fatalf("accepted %d of %d under the lowered limit", accepted, total)
	}
	if accepted == 0 { // seen once on a heavily loaded machine; the pause is what matters
		t.Logf("accepted 0 of %d before the gate paused", total)
	}
	t0 := time.Now()
	time.Sleep(time.Second)
	r1 := ch.report(t, "")
	window, life := time.Since(t0), time.Since(began) // measured: a loaded machine sleeps longer
	cpu := time.Duration(r1.CPUNanos - r0.CPUNanos)
	g := r1.Stats.Admission.Gate
	t.Logf("over %v at EMFILE: child CPU %v; policy gate %+v; engine accept pauses %d", window, cpu, g, r1.Stats.AcceptPauses)
	if cpu > window/4 { // a spinning loop would burn the whole window
		t.Errorf("child used %v CPU in %v at EMFILE", cpu, window)
	}
	// each pause ends after 100 ms and the next accept fails again: a
	// bounded number of pauses in the child's life, not a spin
	if g.Pauses > uint64(2*life/(100*time.Millisecond))+5 {
		t.Errorf("%d policy pauses in about %v", g.Pauses, life)
	}
	serveWaiting(t, conns, int(accepted)) // a batch of one when none got in before the pause
	r2 := waitReport(t, ch, "gate open and all accepted", func(r childReport) bool {
		return r.Stats.Accepted >= total && r.Stats.Admission.Gate.State == admission.GateOpen
	})
	if r2.Stats.Admission.Gate.Opens == 0 {
		t.Errorf("policy gate never reopened: %+v", r2.Stats.Admission.Gate)
	}
}

// waitReport polls the child until cond holds.
func waitReport(t *testing.T, ch *child, what string, cond func(childReport) bool) childReport {
	t.Helper()
	var r childReport
	waitUntil(t, 10*time.Second, what, func() bool {
		r = ch.report(t, "")
		return cond(r)
	})
	return r
}

// TestBacklogReject: with RejectBacklogAbove, a gate closed at its budget
// whose accept queue fills switches to GateRejecting: new connections are
// accepted and answered at once with a reject and a close, instead of
// waiting in (or being dropped by) the kernel's queue.
func TestBacklogReject(t *testing.T) {
	adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1,
		Gate:           admission.GateConfig{Watermark: admission.Watermark{High: 1, Low: 0.5, MinDwell: time.Second}, RejectBacklogAbove: 0.25},
		SampleInterval: time.Millisecond,
	})
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{}, MaxConns: 2, MaxConnsLow: 1, Backlog: 8,
		Admission: AdmissionPolicy{Admitter: adm}}, newTestHandler())
	for i := 0; i < 2; i++ {
		c := dialLine(t, e.Addr().String(), nil)
		fmt.Fprintf(c, "hi\n")
		if got := c.line(t); got != "hi" {
			t.Fatalf("served connection %d: %q", i, got)
		}
	}
	waitStats(t, e, "gate closed", func(s Stats) bool { return !s.GateOpen })
	var rejected, waiting int
	for i := 0; i < 12; i++ {
		c := dialLine(t, e.Addr().String(), nil)
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		line, err := c.r.ReadString('\n')
		switch reason, retry, ok := protocol.ParseRejectText([]byte(strings.TrimSuffix(line, "\n"))); {
		case err == nil && ok && reason == "global" && retry > 0:
			rejected++
			if _, err := c.r.ReadString('\n'); err != io.EOF {
				t.Errorf("after the reject: %v, want end of file", err)
			}
		case err != nil:
			waiting++ // in the kernel's queue, below the reject threshold
		default:
			t.Fatalf("connection %d: %q", i, line)
		}
	}
	// a connection that gave up waiting may still be rejected afterwards
	s := waitStats(t, e, "backlog rejects counted", func(s Stats) bool { return s.Admission.BacklogRejects >= uint64(rejected) })
	t.Logf("rejected %d, waiting %d; policy gate %+v", rejected, waiting, s.Admission.Gate)
	if rejected == 0 || s.Admission.Gate.Rejecting == 0 {
		t.Errorf("no connection rejected while the accept queue was full")
	}
	if s.Accepted != 2 || s.ConnsOpen != 2 {
		t.Errorf("accepted %d, open %d; want the budget (2)", s.Accepted, s.ConnsOpen)
	}
}

// allocPolicy is an admission policy with every per-frame step on: a tenant
// quota that admits everything, CoDel on queueing delay, the queueing-delay
// cap, per-connection pipelining.
func allocPolicy(t testing.TB) AdmissionPolicy {
	tl, err := admission.NewTenantLimiter(admission.TenantConfig{Quota: admission.Quota{Count: 1 << 29, Per: time.Second, Burst: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	adm := newAdmitter(t, admission.Config{Tenants: tl, Conn: admission.ConnBudgets{MaxPipelinedReqs: 64},
		MemoryLimitBytes: -1,
		CoDel:            &admission.CoDelConfig{}})
	return AdmissionPolicy{Admitter: adm, MaxQueueDelay: time.Second}
}

// TestEchoZeroAllocsAdmission: the echo path with the admission policy on
// (global flags, GCRA tenant charge, connection queue, CoDel with a clock
// read per frame) allocates nothing in the steady state.
func TestEchoZeroAllocsPolicy(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's bookkeeping allocates")
	}
	e := start(t, Config{Loops: 1, Codec: codecByName(t, "length", 0), MaxQueuedBytes: 1 << 30, Admission: allocPolicy(t)}, echoHandlerAlloc)
	round, _, _ := echoRounds(t, e)
	if a := testing.AllocsPerRun(500, round); a != 0 {
		t.Errorf("%.2f allocations per round trip of 16 messages with the policy on, want 0", a)
	}
	if s := e.Stats(); s.Rejects != 0 || s.Admission.Policy.Decisions[admission.ReasonNone] == 0 {
		t.Errorf("rejects %d, admitted %d", s.Rejects, s.Admission.Policy.Decisions[admission.ReasonNone])
	}
}

// BenchmarkEchoPolicy is BenchmarkEcho's one-connection case with the
// admission policy on, for the per-frame cost of admission.
func BenchmarkEchoPolicy(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "policy=off"
		if on {
			name = "policy=on"
		}
		b.Run(name, func(b *testing.B) {
			cfg := Config{Loops: 1, Codec: protocolLength()}
			if on { // a fresh Admitter per engine: Shutdown leaves one draining
				cfg.Admission, cfg.MaxQueuedBytes = allocPolicy(b), 1<<30
			}
			e := start(b, cfg, echoHandlerAlloc)
			c := dial(b, e)
			const depth, size = 16, 64
			out := pipelined(depth, size)
			in := make([]byte, len(out))
			b.ReportAllocs()
			b.SetBytes(size)
			b.ResetTimer()
			for r := 0; r < (b.N+depth-1)/depth; r++ {
				if _, err := c.Write(out); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestPoolOrdered: with several workers and frames that take different
// times (the slow ones first), a connection's pipelined replies leave in
// request order by default, while two connections are served at once;
// with Unordered they come back in the order the workers finish.
func TestPoolOrdered(t *testing.T) {
	const req = "3a\n0b\n2c\n0d\n1e\n0f\n"
	for _, unordered := range []bool{false, true} {
		t.Run(map[bool]string{false: "ordered", true: "unordered"}[unordered], func(t *testing.T) {
			ph := &poolHandler{started: make(chan string, 16)}
			e := start(t, Config{Loops: 1, Codec: protocol.Delimited{},
				Pool: PoolConfig{Handler: ph, Workers: 4, Unordered: unordered}}, newTestHandler())
			a, b := dial(t, e), dial(t, e)
			for _, c := range []net.Conn{a, b} {
				c.SetDeadline(time.Now().Add(10 * time.Second))
			}
			t0 := time.Now()
			a.Write([]byte(req))
			b.Write([]byte("3x\n"))
			got := make([]byte, len(req))
			if _, err := io.ReadFull(a, got); err != nil {
				t.Fatal(err)
			}
			bGot := make([]byte, 3)
			if _, err := io.ReadFull(b, bGot); err != nil || string(bGot) != "3x\n" {
				t.Fatalf("b: %q, %v", bGot, err)
			}
			took := time.Since(t0)
			if !unordered {
				if string(got) != req {
					t.Fatalf("replies %q, want them in request order %q", got, req)
				}
				// a's frames one after the other (60 ms of sleeps: never
				// sooner), b's beside them: b's frame started before a's last
				if took < 60*time.Millisecond {
					t.Errorf("took %v, less than a's frames one after the other", took)
				}
				var order []string
				for len(ph.started) > 0 {
					order = append(order, <-ph.started)
				}
				if i, j := slices.Index(order, "3x"), slices.Index(order, "0f"); i < 0 || j < 0 || i > j {
					t.Errorf("frames started in the order %q: want b's 3x beside a's, before a's last", order)
				}
				return
			}
			if string(got) == req {
				t.Errorf("unordered: replies came back in request order %q; want the fast ones first", got)
			}
			if lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n"); len(lines) != 6 {
				t.Errorf("unordered: %d replies %q", len(lines), got)
			}
		})
	}
}

// TestPoolNewestFirstExpiresOldest: while CoDel reports a standing queue,
// the oldest frame is taken first once it has waited past CoDel's
// threshold (twice the target), and refused (adaptive LIFO's short
// timeout), before the newest is served.
func TestPoolNewestFirstExpiresOldest(t *testing.T) {
	p, now := barePool(t, &admission.CoDelConfig{Target: time.Millisecond, Interval: 10 * time.Millisecond})
	overloadCoDel(t, p, now)
	ms := int64(time.Millisecond)
	queueTasks(p, poolTask{fd: 1, enq: now - 50*ms}, poolTask{fd: 2, enq: now}, poolTask{fd: 3, enq: now})
	tk, v, _ := p.take()
	if tk.fd != 1 || v.Admit || v.Reason != admission.ReasonCoDel {
		t.Fatalf("took %d (admit %v, reason %v), want the stale oldest (1) refused for codel", tk.fd, v.Admit, v.Reason)
	}
	if tk, v, _ = p.take(); tk.fd != 3 || !v.Admit {
		t.Fatalf("took %d (admit %v), want the newest (3) admitted", tk.fd, v.Admit)
	}
}

// TestPoolOrderedSheds: the ordered pool under a standing queue (one
// worker, 10 ms per frame, four connections offering 40 frames each at
// once: 1.6 s of work) refuses frames for codel instead of serving them
// all, answers every frame once and in request order, and its backlog
// count (connections holding input behind a frame in the pool) returns to
// zero once they are done.
func TestPoolOrderedSheds(t *testing.T) {
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{},
		Pool: PoolConfig{Handler: &poolHandler{}, Workers: 1,
			CoDel: &admission.CoDelConfig{Target: 2 * time.Millisecond, Interval: 20 * time.Millisecond}}}, newTestHandler())
	const conns, n = 4, 40
	var wg sync.WaitGroup
	var served, shed atomic.Int64
	t0 := time.Now()
	for k := 0; k < conns; k++ {
		c := dial(t, e)
		c.SetDeadline(time.Now().Add(20 * time.Second))
		var req bytes.Buffer
		for i := 0; i < n; i++ {
			fmt.Fprintf(&req, "1-%d\n", i)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Write(req.Bytes())
			r := bufio.NewReader(c)
			last := -1
			for i := 0; i < n; i++ {
				s, err := r.ReadString('\n')
				if err != nil {
					t.Errorf("answer %d: %v", i, err)
					return
				}
				s = strings.TrimSpace(s)
				if reason, _, ok := protocol.ParseRejectText([]byte(s)); ok {
					if reason != "codel" {
						t.Errorf("reason %q", reason)
					}
					shed.Add(1)
					continue
				}
				var j int
				if _, err := fmt.Sscanf(s, "1-%d", &j); err != nil || j <= last {
					t.Errorf("answer %d: %q after frame %d: out of order or unknown", i, s, last)
				}
				last = j
				served.Add(1)
			}
		}()
	}
	wg.Wait()
	t.Logf("served %d, shed %d in %v", served.Load(), shed.Load(), time.Since(t0))
	if served.Load() == 0 || shed.Load() == 0 || served.Load()+shed.Load() != conns*n {
		t.Errorf("served %d, shed %d of %d: want both, every frame answered once", served.Load(), shed.Load(), conns*n)
	}
	if served.Load() >= conns*n/2 { // 1.6 s of work against a 2 ms target: most frames wait far past it
		t.Errorf("served %d of %d: the standing queue was not shed", served.Load(), conns*n)
	}
	waitUntil(t, 5*time.Second, "pool backlog back to zero", func() bool { return e.pool.backlog.Load() == 0 })
}

// TestPoolLongCap: with a derived CoDel target the pool refuses a frame
// that waited past the long cap (8 × the pool's C) with
// reason queue, though CoDel has not judged the queue overloaded, and
// admits a fresh one; with a fixed target it has no long cap, and before
// the pool has served a frame neither (TestPoolFirstFrameNoLongCap).
func TestPoolLongCap(t *testing.T) {
	for _, derived := range []bool{true, false} {
		cd := &admission.CoDelConfig{Interval: 100 * time.Millisecond}
		if !derived {
			cd.Target = 750 * time.Microsecond // what the derived one starts at
		}
		p, now := barePool(t, cd)
		if derived { // as after serving frames of 100 µs: C at the floor (0.7 ms), long cap 8·C
			p.caps.Observe(int64(100 * time.Microsecond))
			p.deriveLocked()
		}
		ms := int64(time.Millisecond)
		queueTasks(p, poolTask{fd: 1, enq: now - 50*ms}, poolTask{fd: 2, enq: now})
		tk, v, _ := p.take()
		if p.codel.Overloaded() {
			t.Fatal("CoDel judged one sojourn overloaded")
		}
		switch {
		case tk.fd != 1:
			t.Fatalf("derived %v: took %d, want the oldest (1)", derived, tk.fd)
		case derived && (v.Admit || v.Reason != admission.ReasonQueue):
			t.Errorf("derived: 50 ms in the queue against a long cap of %v: admit %v, reason %v; want refused for queue", time.Duration(p.capLong()), v.Admit, v.Reason)
		case !derived && !v.Admit:
			t.Errorf("fixed target: refused (%v) without a standing queue", v.Reason)
		}
		if tk, v, _ = p.take(); tk.fd != 2 || !v.Admit {
			t.Errorf("derived %v: took %d (admit %v), want the fresh frame (2) admitted", derived, tk.fd, v.Admit)
		}
	}
}

// TestPoolFirstFrameNoLongCap: before the pool has served a frame (no
// service time measured) a frame that waited through a long start-up
// stall is not refused for the long cap.
func TestPoolFirstFrameNoLongCap(t *testing.T) {
	p, now := barePool(t, &admission.CoDelConfig{Interval: 100 * time.Millisecond})
	queueTasks(p, poolTask{fd: 1, enq: now - int64(200*time.Millisecond)})
	if tk, v, _ := p.take(); tk.fd != 1 || !v.Admit {
		t.Errorf("took %d (admit %v, reason %v), want the first frame admitted", tk.fd, v.Admit, v.Reason)
	}
}

// TestPoolPredictedWait: with a derived target, a frame whose time in the
// pool would pass the pool's cap C (twice the target) by Little's law, its
// wait (the frames queued ahead of it and one in service, times the
// service time, over the workers) plus its own service, is refused at
// submit (predictedLong); an empty queue always takes one; a fixed
// target, or no service time yet, predicts nothing. A frame held on its
// loop past C gives way to a newer one of its connection (heldLong).
func TestPoolPredictedWait(t *testing.T) {
	p, now := barePool(t, &admission.CoDelConfig{Interval: 100 * time.Millisecond})
	p.cfg.Workers = 1
	if p.predictedLong(admission.PriorityNormal) {
		t.Fatal("predicted a long wait before any frame was served")
	}
	// Frames of S = C/5, C at the floor: with one worker a frame's time in
	// the pool is (n+1)·S + S behind n queued frames and one in service.
	svc := shed.PoolMinCap / 5
	p.caps.Observe(svc)
	p.deriveLocked()
	if c := int64(p.shedAfter()); c != shed.PoolMinCap {
		t.Fatalf("C %v for S %v, want the floor %v", time.Duration(c), time.Duration(svc), time.Duration(shed.PoolMinCap))
	}
	for n := int64(0); n <= 6; n++ {
		want := n > 0 && (n+1)*svc+svc > shed.PoolMinCap // in the pool against C: from n = 4 on
		if got := p.predictedLong(admission.PriorityNormal); got != want {
			t.Errorf("%d queued of C/5, one worker: predictedLong %v, want %v", n, got, want)
		}
		queueTasks(p, poolTask{fd: int32(n), enq: now})
	}
	p.cfg.Workers = 2 // twice the workers: the same queue waits half as long
	if p.predictedLong(admission.PriorityNormal) {
		t.Errorf("7 queued of C/5 over 2 workers (0.8·C of wait, C in the pool) predicted past C")
	}
	queueTasks(p, poolTask{fd: 7, enq: now})
	if !p.predictedLong(admission.PriorityNormal) {
		t.Errorf("8 queued of C/5 over 2 workers (0.9·C of wait, 1.1·C in the pool) not predicted past C")
	}
	// A frame held on its loop past C yields to a newer one (heldLong).
	lo, hi := shed.PoolMinCap*14/15, shed.PoolMinCap*16/15
	if p.heldLong(lo) || !p.heldLong(hi) {
		t.Errorf("heldLong at %v %v, at %v %v; want false, true (C = %v)", time.Duration(lo), p.heldLong(lo), time.Duration(hi), p.heldLong(hi), time.Duration(shed.PoolMinCap))
	}
	fixed, _ := barePool(t, &admission.CoDelConfig{Target: 750 * time.Microsecond, Interval: 100 * time.Millisecond})
	fixed.caps.Observe(int64(time.Millisecond))
	queueTasks(fixed, poolTask{fd: 1}, poolTask{fd: 2}, poolTask{fd: 3})
	if fixed.predictedLong(admission.PriorityNormal) || fixed.heldLong(int64(time.Second)) {
		t.Error("a fixed target predicted a long wait, or judged a held frame")
	}
}

// TestPoolRejectFlushDelay: a loop whose worker pool derives its CoDel
// target holds refusals back (RejectFlushDelay's 10 ms default), as a loop
// with the derived queueing-delay cap does; with a fixed pool target, or
// Off, it writes them at once.
func TestPoolRejectFlushDelay(t *testing.T) {
	stageOf := func(pool *admission.CoDelConfig, rfd time.Duration) *stage {
		t.Helper()
		adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1})
		e, err := New(Config{Loops: 1, Codec: protocol.Delimited{},
			Admission: AdmissionPolicy{Admitter: adm, RejectFlushDelay: rfd},
			Pool:      PoolConfig{Handler: &poolHandler{}, CoDel: pool}}, HandlerFuncs{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.pool.cancel)
		return loopStage(e)
	}
	if s := stageOf(&admission.CoDelConfig{}, 0); s.rejDelay != shed.DerivedRejectFlush || !s.perConn {
		t.Errorf("derived pool target: rejDelay %v perConn %v, want %v and per-connection state",
			time.Duration(s.rejDelay), s.perConn, time.Duration(shed.DerivedRejectFlush))
	}
	if s := stageOf(&admission.CoDelConfig{}, 30*time.Millisecond); s.rejDelay != int64(30*time.Millisecond) ||
		s.lazy[0].hold != s.rejDelay || s.lazy[1].hold != s.rejDelay {
		t.Errorf("RejectFlushDelay 30ms: reads deferred %v, refusals held %v or %v, want 30ms for all",
			time.Duration(s.rejDelay), time.Duration(s.lazy[0].hold), time.Duration(s.lazy[1].hold))
	}
	if s := stageOf(&admission.CoDelConfig{Target: time.Millisecond}, 0); s.rejDelay != 0 {
		t.Errorf("fixed pool target: rejDelay %v, want 0", time.Duration(s.rejDelay))
	}
	if s := stageOf(&admission.CoDelConfig{}, Off); s.rejDelay != 0 {
		t.Errorf("Off: rejDelay %v, want 0", time.Duration(s.rejDelay))
	}
}

// TestPoolPriorities: with a derived target the pool serves the most
// urgent class first and caps each class as the loop does: under a
// standing queue a critical frame is refused only past the long cap, a
// best-effort one past C/2, a normal one past C; a frame's predicted wait
// counts only its class and the more urgent ones, against its own cap; a
// less urgent frame past its cap is taken first, to be refused, rather
// than left waiting behind the more urgent ones.
func TestPoolPriorities(t *testing.T) {
	crit, norm, be := admission.PriorityCritical, admission.PriorityNormal, admission.PriorityBestEffort
	derivedPool := func() (*pool, int64) {
		p, _ := barePool(t, &admission.CoDelConfig{Interval: 10 * time.Millisecond})
		p.cfg.Workers = 1
		p.caps.Observe(shed.PoolMinCap / 5) // C at its floor, the long cap 8·C
		p.deriveLocked()
		return p, p.e.clock()
	}
	p, now := derivedPool()
	queueClass(p, be, poolTask{fd: 1, enq: now})
	queueClass(p, norm, poolTask{fd: 2, enq: now})
	queueClass(p, crit, poolTask{fd: 3, enq: now})
	for _, want := range []int32{3, 2, 1} {
		if tk, v, _ := p.take(); tk.fd != want || !v.Admit {
			t.Fatalf("took %d (admit %v), want %d: the most urgent class first", tk.fd, v.Admit, want)
		}
	}

	p, now = derivedPool()
	c := int64(p.shedAfter())
	capLong := p.capLong()
	overloadCoDel(t, p, now)
	now = p.e.clock()
	for _, tc := range []struct {
		prio  admission.Priority
		wait  int64
		admit bool
	}{
		{crit, 2 * c, true},        // past C, within the long cap
		{crit, capLong + c, false}, // past the long cap
		{norm, c / 2, true},
		{norm, 2 * c, false}, // past C
		{be, c / 4, true},
		{be, c * 3 / 4, false}, // past C/2
		{norm, capLong + c, false},
		{be, capLong + c, false},
		{be, 0, true},
	} {
		if v := p.judge(now, now-tc.wait, tc.prio); v.Admit != tc.admit {
			t.Errorf("%v frame that waited %v under a standing queue (C %v, long cap %v): admit %v, want %v",
				tc.prio, time.Duration(tc.wait), time.Duration(c), time.Duration(capLong), v.Admit, tc.admit)
		}
		if p.stale(tc.wait, tc.prio) == tc.admit {
			t.Errorf("%v frame that waited %v: stale %v, want %v", tc.prio, time.Duration(tc.wait), !tc.admit, !tc.admit)
		}
	}

	// predicted waits: S = C/5 and one worker, so a frame's time in the
	// pool behind n frames ahead is (n+1)·S + S
	p, now = derivedPool()
	queueClass(p, norm, poolTask{fd: 1, enq: now}, poolTask{fd: 2, enq: now}, poolTask{fd: 3, enq: now}, poolTask{fd: 4, enq: now})
	if !p.predictedLong(norm) {
		t.Error("normal frame behind 4 normal ones (6·S against C = 5·S) not predicted past C")
	}
	if p.predictedLong(crit) {
		t.Error("critical frame predicted past its cap behind normal frames only")
	}
	p, now = derivedPool()
	queueClass(p, norm, poolTask{fd: 1, enq: now})
	if !p.predictedLong(be) {
		t.Error("best-effort frame behind a normal one (3·S against C/2) not predicted past its cap")
	}
	if p.predictedLong(norm) {
		t.Error("normal frame behind a normal one (3·S against C = 5·S) predicted past C")
	}
	queueClass(p, be, poolTask{fd: 2, enq: now}, poolTask{fd: 3, enq: now}, poolTask{fd: 4, enq: now}, poolTask{fd: 5, enq: now})
	if p.predictedLong(norm) {
		t.Error("normal frame predicted past C behind best-effort frames, which it goes before")
	}

	// a best-effort frame past C/2 behind a normal one is taken first, and refused
	p, now = derivedPool()
	overloadCoDel(t, p, now)
	now = p.e.clock()
	queueClass(p, norm, poolTask{fd: 1, enq: now})
	queueClass(p, be, poolTask{fd: 2, enq: now - c})
	if tk, v, _ := p.take(); tk.fd != 2 || v.Admit {
		t.Errorf("took %d (admit %v), want the stale best-effort frame (2) refused", tk.fd, v.Admit)
	}
	if tk, v, _ := p.take(); tk.fd != 1 || !v.Admit {
		t.Errorf("took %d (admit %v), want the normal frame (1) admitted", tk.fd, v.Admit)
	}
}

// spinPoolHandler burns work of CPU per frame on a worker, then echoes it.
type spinPoolHandler struct{ work time.Duration }

func (h spinPoolHandler) ServeFrame(_ context.Context, c *Conn, frame []byte) Action {
	busyFor(h.work)
	c.WriteFrame(frame)
	return None
}

// TestPoolCriticalFirst: the worker pool under overload, with a derived
// CoDel target and Classify, serves a critical connection within capacity
// while two best-effort ones offer four times it; every frame is answered,
// and the pool counts its refusals by priority. Served alike, the critical
// frames would get about the best-effort ones' share (20-25% at 5x by
// hand).
func TestPoolCriticalFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("1 s of load")
	}
	adm := newAdmitter(t, admission.Config{MemoryLimitBytes: -1})
	classify := func(_ *Conn, frame []byte, f *admission.Frame) {
		if bytes.HasPrefix(frame, []byte("c")) {
			f.Priority = admission.PriorityCritical
		} else {
			f.Priority = admission.PriorityBestEffort
		}
	}
	e := start(t, Config{Loops: 1, Codec: protocol.Delimited{},
		Admission: AdmissionPolicy{Admitter: adm, Classify: classify},
		Pool:      PoolConfig{Handler: spinPoolHandler{500 * time.Microsecond}, Workers: 1, QueueLen: 64, CoDel: &admission.CoDelConfig{}}},
		newTestHandler()) // capacity about 2,000 frames/s
	const run = time.Second
	type client struct {
		frame                 string
		every                 time.Duration
		sent, served, refused atomic.Int64
	}
	clients := []*client{
		{frame: "c\n", every: 2500 * time.Microsecond}, // 400/s
		{frame: "b\n", every: 250 * time.Microsecond},  // 4,000/s each
		{frame: "b\n", every: 250 * time.Microsecond},
	}
	stop := time.Now().Add(run)
	var wg sync.WaitGroup
	for i, cl := range clients {
		c := dialLine(t, e.Addr().String(), nil)
		c.SetDeadline(time.Now().Add(run + 10*time.Second))
		wg.Add(2)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(cl.every)
			defer tick.Stop()
			for time.Now().Before(stop) {
				<-tick.C
				if _, err := c.Write([]byte(cl.frame)); err != nil {
					t.Error(err)
					break
				}
				cl.sent.Add(1)
			}
			doneSending(&cl.sent)
		}()
		go func() {
			defer wg.Done()
			readAnswers(t, fmt.Sprintf("client %d", i), c, &cl.sent, &cl.served, &cl.refused)
		}()
	}
	wg.Wait()
	share := func(cl *client) float64 {
		return float64(cl.served.Load()) / float64(max(1, cl.served.Load()+cl.refused.Load()))
	}
	crit, be := share(clients[0]), (share(clients[1])+share(clients[2]))/2
	ps := e.Stats().Admission.Pool
	t.Logf("critical served %.0f%% of %d, best-effort %.0f%%; pool refusals by reason %v, by priority %v",
		100*crit, clients[0].served.Load()+clients[0].refused.Load(), 100*be, ps.Rejects, ps.RejectsByPriority)
	if crit < 0.5 || crit < 3*be {
		t.Errorf("critical frames served %.0f%%, best-effort %.0f%%: want critical first", 100*crit, 100*be)
	}
	var byReason, byPrio uint64
	for _, n := range ps.Rejects {
		byReason += n
	}
	for _, n := range ps.RejectsByPriority {
		byPrio += n
	}
	if ps.RejectsByPriority[admission.PriorityBestEffort] == 0 || byPrio != byReason {
		t.Errorf("pool refusals by priority %v (%d), by reason %v (%d): want best-effort ones, the same total", ps.RejectsByPriority, byPrio, ps.Rejects, byReason)
	}
}
