//go:build linux

package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The TLS generator (LoadConfig.TLS). crypto/tls runs its record layer on
// a blocking net.Conn, which the epoll loops cannot drive, so each
// connection here is two goroutines: a writer that encodes and writes the
// requests handed to it, and a reader that matches the answers, in order,
// to the requests the writer wrote, checks and times them and, in a closed
// loop, hands the writer the next request. In an open loop one scheduler
// goroutine hands the due sends round-robin to the connections. The
// connections record into a few shards, each a tally behind a lock, so the
// histograms stay few whatever the number of connections; collect merges
// them as it merges the event loops'.
//
// The handshake mode (LoadConfig.Handshakes) is Conns workers, each a
// goroutine that dials, handshakes, sends one request, checks the answer
// and closes, again and again.

const (
	// tlsReadBufferBytes is a reader's buffer beyond one response; a TLS
	// record carries at most 16 KiB.
	tlsReadBufferBytes = 64 << 10
	// tlsSpinNanos: an open-loop send due sooner than this is waited for
	// by yielding rather than by a timer, which would wake it later.
	tlsSpinNanos = int64(50 * time.Microsecond)
)

// handshakeReasons name the handshake mode's failures
// (LoadResult.HandshakeFailures).
var handshakeReasons = [...]string{"refused", "reset", "timeout", "peer_closed", "bad_certificate", "alert", "not_tls", "mismatch", "other"}

// handshakeTally is what the handshake mode counts beside a tally, over
// the measured window.
type handshakeTally struct {
	hist                *hdrhistogram.Histogram // dial to handshake done
	handshakes, resumed int64
	failures            [len(handshakeReasons)]int64
}

// tlsShard is a tally shared by some of the TLS connections or handshake
// workers.
type tlsShard struct {
	mu sync.Mutex
	tally
	hs handshakeTally
}

// tlsRun is one run of the TLS generator.
type tlsRun struct {
	cfg     *LoadConfig
	tls     *tls.Config
	dialer  net.Dialer
	filler  []byte
	maxResp int

	base                  time.Time
	start, warmEnd, end   int64
	ctx                   context.Context // ends when the run stops
	cancel                context.CancelFunc
	stopping              atomic.Bool
	shards                []*tlsShard
	established, unfinish atomic.Int64

	stateOnce            sync.Once
	version, cipherSuite string
}

// now returns monotonic nanoseconds since the run's base.
func (r *tlsRun) now() int64 { return int64(time.Since(r.base)) }

// loadTLS is Load for a configuration with TLS set (defaults applied and
// validated).
func loadTLS(ctx context.Context, cfg LoadConfig) (*LoadResult, error) {
	_, family, err := resolveSockaddr(cfg.Addr)
	if err != nil {
		return nil, err
	}
	if _, err := localSockaddr(cfg.LocalAddr, family); err != nil {
		return nil, err
	}
	r := &tlsRun{cfg: &cfg, tls: cfg.TLS.Clone(), filler: newFiller(cfg.Size.Max), maxResp: cfg.Codec.maxResponseBytes(cfg.Size.Max)}
	if r.tls.ServerName == "" {
		r.tls.ServerName, _, _ = net.SplitHostPort(cfg.Addr)
	}
	if cfg.LocalAddr != "" {
		r.dialer.LocalAddr = &net.TCPAddr{IP: net.ParseIP(cfg.LocalAddr)}
	}
	n := max(1, min(cfg.Conns, runtime.GOMAXPROCS(0)))
	for range n {
		r.shards = append(r.shards, &tlsShard{tally: newTally(), hs: handshakeTally{hist: NewLatencyHistogram()}})
	}

	var conns []*tlsConn
	dialFail := &dialFailure{}
	if !cfg.Handshakes {
		conns = r.dialAll(ctx, dialFail)
		if len(conns) == 0 {
			return nil, fmt.Errorf("%w: %d attempts to %s: %v", ErrNoConnections, cfg.Conns, cfg.Addr, dialFail.firstErr)
		}
	}

	r.base = time.Now()
	r.start = int64(time.Millisecond)
	r.warmEnd = r.start + int64(cfg.Warmup)
	r.end = r.warmEnd + int64(cfg.Duration)
	r.ctx, r.cancel = context.WithCancel(ctx)
	defer r.cancel()

	var wg sync.WaitGroup
	sched := newTally()
	switch {
	case cfg.Handshakes:
		for i := range cfg.Conns {
			wg.Go(func() { r.handshaker(r.shards[i%len(r.shards)], uint64(i)) })
		}
	default:
		for _, c := range conns {
			c.start(&wg)
		}
		if cfg.OpenLoop() {
			wg.Go(func() { r.schedule(conns, &sched) })
		}
	}
	progDone := make(chan struct{})
	var progWG sync.WaitGroup
	if cfg.Progress != nil {
		progWG.Go(func() { progressLoop(cfg.Progress, r.base, r.warmEnd, r.end, r.progress, progDone) })
	}

	before, after := r.timeline(ctx)
	r.stopping.Store(true)
	r.cancel()
	for _, c := range conns {
		c.close()
	}
	wg.Wait()
	close(progDone)
	progWG.Wait()

	tallies := []*tally{&sched}
	for _, sh := range r.shards {
		tallies = append(tallies, &sh.tally)
	}
	connsOpen := len(conns)
	if cfg.Handshakes {
		connsOpen = int(r.established.Load())
	}
	res := collect(&cfg, tallies, connsOpen, r.unfinish.Load(), dialFail)
	res.TLSVersion, res.TLSCipherSuite = r.version, r.cipherSuite
	if cfg.Handshakes {
		r.handshakeResult(res)
	}
	if before.at.IsZero() || after.at.IsZero() {
		return res, fmt.Errorf("sluice: bench: run stopped before its measured window ended: %w", context.Cause(ctx))
	}
	fillUsage(res, &cfg, before, after)
	return res, ctx.Err()
}

// timeline waits for the measured window, reading the counters at its
// start and end; a sample is zero when ctx ended first.
func (r *tlsRun) timeline(ctx context.Context) (before, after windowSample) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	until := func(at int64) bool {
		t.Reset(time.Duration(at - r.now()))
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !until(r.warmEnd) {
		return
	}
	before = takeSample(r.cfg.ServerPID)
	if !until(r.end) {
		return
	}
	after = takeSample(r.cfg.ServerPID)
	return
}

// progress is progressLoop's sample of the shards.
func (r *tlsRun) progress() (msgs, errs, p99 int64) {
	for _, sh := range r.shards {
		sh.mu.Lock()
		msgs += sh.allMsgs
		errs += sh.errs.total()
		p99 = max(p99, sh.hist.ValueAtQuantile(99))
		sh.mu.Unlock()
	}
	return msgs, errs, p99
}

// dial connects and completes a TLS handshake within ConnectTimeout.
func (r *tlsRun) dial(ctx context.Context) (*tls.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.ConnectTimeout)
	defer cancel()
	nc, err := r.dialer.DialContext(ctx, "tcp", r.cfg.Addr)
	if err != nil {
		return nil, err
	}
	tc := tls.Client(nc, r.tls)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = nc.Close()
		return nil, err
	}
	r.stateOnce.Do(func() {
		st := tc.ConnectionState()
		r.version, r.cipherSuite = tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite)
	})
	return tc, nil
}

// dialAll opens Conns connections, dialWindow at a time, and counts the
// failures.
func (r *tlsRun) dialAll(ctx context.Context, fail *dialFailure) []*tlsConn {
	var mu sync.Mutex
	conns := make([]*tlsConn, 0, r.cfg.Conns)
	sem := make(chan struct{}, dialWindow)
	var wg sync.WaitGroup
	for i := 0; i < r.cfg.Conns && ctx.Err() == nil; i++ {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			tc, err := r.dial(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fail.add(err)
				return
			}
			conns = append(conns, r.newConn(tc, len(conns)))
		})
	}
	wg.Wait()
	return conns
}

// tlsConn is one connection of the TLS closed or open loop.
type tlsConn struct {
	run   *tlsRun
	shard *tlsShard
	tc    *tls.Conn
	rng   uint64
	// next holds the requests the writer is to write, in order; pending
	// the ones it took, in the order written, for the reader. Each holds
	// up to InFlight: a connection never has more outstanding, so sends
	// on them never block.
	next, pending chan request
	// outstanding counts the open loop's requests handed to the
	// connection and not yet answered.
	outstanding atomic.Int64
	dead        atomic.Bool
	gone        chan struct{} // closed when the connection is closed
	closeOnce   sync.Once
	errMu       sync.Mutex
	err         error // guarded by errMu: the failure, nil when the run ended it
	writerDone  chan struct{}
}

func (r *tlsRun) newConn(tc *tls.Conn, i int) *tlsConn {
	return &tlsConn{
		run: r, shard: r.shards[i%len(r.shards)], tc: tc,
		rng:        r.cfg.Seed*0x9e3779b97f4a7c15 + uint64(i)*0xbf58476d1ce4e5b9 + 1,
		next:       make(chan request, r.cfg.InFlight),
		pending:    make(chan request, r.cfg.InFlight),
		gone:       make(chan struct{}),
		writerDone: make(chan struct{}),
	}
}

// start starts the connection's goroutines; a closed loop's first
// requests are due now.
func (c *tlsConn) start(wg *sync.WaitGroup) {
	if !c.run.cfg.OpenLoop() {
		now := c.run.now()
		for range c.run.cfg.InFlight {
			c.next <- request{intendedNanos: now, size: c.run.cfg.Size.draw(&c.rng)}
		}
	}
	wg.Go(c.writeLoop)
	wg.Go(c.readLoop)
}

// close closes the connection, once.
func (c *tlsConn) close() {
	c.closeOnce.Do(func() {
		c.dead.Store(true)
		close(c.gone)
		_ = c.tc.Close()
	})
}

// fail records err as the connection's failure, unless the run has ended
// (its own close is no failure), and closes it.
func (c *tlsConn) fail(err error) {
	if c.run.stopping.Load() {
		return
	}
	c.errMu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.errMu.Unlock()
	c.close()
}

// writeLoop writes what next hands it, coalescing the requests waiting
// there into one write of up to maxOutBatchBytes.
func (c *tlsConn) writeLoop() {
	defer close(c.writerDone)
	r := c.run
	out := make([]byte, 0, max(r.cfg.Codec.WireBytes(r.cfg.Size.Max), min(r.cfg.InFlight*r.cfg.Codec.WireBytes(r.cfg.Size.Max), maxOutBatchBytes)))
	var seq uint64
	for {
		var req request
		select {
		case req = <-c.next:
		case <-c.gone:
			return
		}
		out = out[:0]
		for more := true; more; {
			c.pending <- req
			out = appendRequest(out, r.cfg.Codec, seq, int(req.size), r.filler)
			seq++
			more = false
			if len(out) < maxOutBatchBytes {
				select {
				case req = <-c.next:
					more = true
				default:
				}
			}
		}
		_ = c.tc.SetWriteDeadline(time.Now().Add(r.cfg.ResponseTimeout))
		if _, err := c.tc.Write(out); err != nil {
			c.fail(err)
			return
		}
	}
}

// readState is what the reader keeps between reads.
type readState struct {
	q       inflight // requests written (or being written), oldest first
	raw     rawAccount
	seqRecv uint64
	have    int // unparsed bytes at the start of the buffer
}

// drain moves the requests the writer has taken into the reader's queue.
func (c *tlsConn) drain(q *inflight) {
	for {
		select {
		case req := <-c.pending:
			q.push(req)
		default:
			return
		}
	}
}

// readLoop reads and checks the answers until the connection fails or the
// run ends, then counts what was left unanswered.
func (c *tlsConn) readLoop() {
	r := c.run
	buf := make([]byte, tlsReadBufferBytes+r.maxResp)
	st := readState{q: newInflight(r.cfg.InFlight)}
	respTimeout := int64(r.cfg.ResponseTimeout)
	var err error
	for err == nil {
		c.drain(&st.q)
		deadline := r.now() + respTimeout
		if st.q.len() > 0 {
			deadline = st.q.at(0).intendedNanos + respTimeout
		}
		_ = c.tc.SetReadDeadline(r.base.Add(time.Duration(deadline)))
		n, rerr := c.tc.Read(buf[st.have:])
		now := r.now()
		if n > 0 {
			c.shard.mu.Lock()
			err = c.consume(buf, n, now, &st)
			c.shard.mu.Unlock()
		}
		switch {
		case err != nil || rerr == nil:
		case isTimeout(rerr) && !r.stopping.Load():
			// A read deadline leaves a tls.Conn usable: fail only when the
			// oldest request has waited too long.
			c.drain(&st.q)
			if st.q.len() > 0 && now-st.q.at(0).intendedNanos > respTimeout {
				err = ErrResponseTimeout
			}
		case errors.Is(rerr, io.EOF):
			err = errPeerClosed
		default:
			err = rerr
		}
	}
	c.fail(err)
	<-c.writerDone
	c.drain(&st.q)
	c.errMu.Lock()
	ferr := c.err
	c.errMu.Unlock()
	if ferr != nil {
		c.shard.mu.Lock()
		c.shard.failed(ferr, int64(st.q.len()))
		c.shard.mu.Unlock()
	} else {
		r.unfinish.Add(int64(st.q.len()))
	}
}

// consume checks the n bytes just read after st.have unparsed ones in buf
// and completes the requests they answer. The shard's lock is held.
func (c *tlsConn) consume(buf []byte, n int, now int64, st *readState) error {
	r := c.run
	codec := r.cfg.Codec
	if codec == CodecRaw {
		data := buf[:n]
		if !bytesAreFiller(data, r.filler) {
			return fmt.Errorf("%w: echoed bytes differ from the request's", ErrMismatch)
		}
		c.drain(&st.q)
		k, err := st.raw.take(n, &st.q)
		if err != nil {
			return err
		}
		for range k {
			req, _ := st.q.pop()
			c.answered(req, -1, now)
		}
		return nil
	}
	data := buf[:st.have+n]
	p := 0
	for {
		payload, m, err := nextResponse(codec, data[p:])
		if err != nil {
			return err
		}
		if m == 0 {
			break
		}
		if st.q.len() == 0 {
			c.drain(&st.q)
			if st.q.len() == 0 {
				return fmt.Errorf("%w: response without a request", ErrMismatch)
			}
		}
		req, _ := st.q.pop()
		k, err := responseReject(codec, payload)
		if err != nil {
			return err
		}
		if k < 0 {
			if err := checkResponse(codec, payload, st.seqRecv, int(req.size), r.filler); err != nil {
				return err
			}
		}
		st.seqRecv++
		c.answered(req, k, now)
		p += m
	}
	rest := len(data) - p
	if rest > r.maxResp {
		return fmt.Errorf("%w: %d bytes without a complete response", ErrMismatch, rest)
	}
	st.have = copy(buf, data[p:])
	return nil
}

// answered records the answer to req read at now (a refusal with reason
// index k >= 0) and, in a closed loop, hands the writer the next request.
func (c *tlsConn) answered(req request, k int, now int64) {
	r := c.run
	if k >= 0 {
		c.shard.rejectedAt(req, k, now, r.warmEnd, r.end)
	} else {
		c.shard.completed(req, now, r.warmEnd, r.end)
	}
	if r.cfg.OpenLoop() {
		c.outstanding.Add(-1)
	} else if now < r.end {
		c.next <- request{intendedNanos: now, size: r.cfg.Size.draw(&c.rng)}
	}
}

// bytesAreFiller reports whether data is all filler bytes.
func bytesAreFiller(data, filler []byte) bool {
	for len(data) > 0 {
		k := min(len(data), len(filler))
		if !bytes.Equal(data[:k], filler[:k]) {
			return false
		}
		data = data[k:]
	}
	return true
}

// schedule is the open loop: it hands the sends due round-robin to the
// connections, as issueDue does for an event loop, and counts them in t.
func (r *tlsRun) schedule(conns []*tlsConn, t *tally) {
	s := NewOpenSchedule(r.start, r.cfg.RatePerSec)
	s.StopAt(r.end)
	rng := r.cfg.Seed*0x9e3779b97f4a7c15 + 1
	lateTol := int64(r.cfg.LateTolerance)
	rr := 0
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for !r.stopping.Load() {
		now := r.now()
		first, n := s.Take(now)
		for k := first; k < first+n; k++ {
			at := s.Intended(k)
			c := conns[rr]
			rr = (rr + 1) % len(conns)
			counted := t.sendIssued(at, now, r.warmEnd, r.end, lateTol)
			if c.dead.Load() || c.outstanding.Load() >= int64(r.cfg.InFlight) {
				if counted {
					t.missed++
				}
				continue
			}
			c.outstanding.Add(1)
			c.next <- request{intendedNanos: at, size: r.cfg.Size.draw(&rng)}
		}
		next := s.Next()
		if next == math.MaxInt64 {
			return
		}
		wait := next - r.now()
		if wait < tlsSpinNanos {
			runtime.Gosched()
			continue
		}
		timer.Reset(time.Duration(wait))
		select {
		case <-timer.C:
		case <-r.ctx.Done():
		}
	}
	t.untakenMissed(&s, r.now(), r.warmEnd, r.end)
}

// handshaker is one worker of the handshake mode: dial, handshake, one
// request, close, until the run ends.
func (r *tlsRun) handshaker(sh *tlsShard, id uint64) {
	rng := r.cfg.Seed*0x9e3779b97f4a7c15 + id*0xbf58476d1ce4e5b9 + 1
	out := make([]byte, 0, r.cfg.Codec.WireBytes(r.cfg.Size.Max))
	buf := make([]byte, r.maxResp+1)
	for !r.stopping.Load() {
		size := r.cfg.Size.draw(&rng)
		t0 := r.now()
		tc, err := r.dial(r.ctx)
		if err != nil {
			r.cycleFailed(sh, err, false)
			continue
		}
		r.established.Add(1)
		tHS := r.now()
		resumed := tc.ConnectionState().DidResume
		k, err := r.oneRequest(tc, size, out, buf)
		tEnd := r.now()
		_ = tc.Close()
		if err != nil {
			r.cycleFailed(sh, err, true)
			continue
		}
		req := request{intendedNanos: tHS, size: size}
		sh.mu.Lock()
		if k >= 0 {
			sh.rejectedAt(req, k, tEnd, r.warmEnd, r.end)
		} else {
			sh.completed(req, tEnd, r.warmEnd, r.end)
		}
		if tEnd >= r.warmEnd && tEnd < r.end {
			sh.hs.handshakes++
			if resumed {
				sh.hs.resumed++
			}
			recordNanos(sh.hs.hist, tHS-t0)
		}
		sh.mu.Unlock()
	}
}

// oneRequest sends one request of size bytes on tc and reads and checks
// its answer: k is the refusal's reason index, or -1 for an echo.
func (r *tlsRun) oneRequest(tc *tls.Conn, size int32, out, buf []byte) (k int, err error) {
	stop := context.AfterFunc(r.ctx, func() { _ = tc.NetConn().Close() })
	defer stop()
	_ = tc.SetDeadline(time.Now().Add(r.cfg.ResponseTimeout))
	out = appendRequest(out[:0], r.cfg.Codec, 0, int(size), r.filler)
	if _, err := tc.Write(out); err != nil {
		return -1, err
	}
	codec := r.cfg.Codec
	have := 0
	for {
		n, rerr := tc.Read(buf[have:])
		have += n
		if codec == CodecRaw {
			switch {
			case have > int(size) || !bytesAreFiller(buf[:have], r.filler):
				return -1, fmt.Errorf("%w: echoed bytes differ from the request's", ErrMismatch)
			case have == int(size):
				return -1, nil
			}
		} else {
			payload, m, err := nextResponse(codec, buf[:have])
			if err != nil {
				return -1, err
			}
			if m > 0 {
				if m != have {
					return -1, fmt.Errorf("%w: %d bytes after the response", ErrMismatch, have-m)
				}
				if k, err := responseReject(codec, payload); err != nil || k >= 0 {
					return k, err
				}
				return -1, checkResponse(codec, payload, 0, int(size), r.filler)
			}
		}
		switch {
		case rerr != nil && errors.Is(rerr, io.EOF):
			return -1, errPeerClosed
		case rerr != nil:
			return -1, rerr
		case have == len(buf):
			return -1, fmt.Errorf("%w: %d bytes without a complete response", ErrMismatch, have)
		}
	}
}

// cycleFailed counts a failed cycle of the handshake mode, unless the
// run's end interrupted it; established tells whether its handshake had
// completed.
func (r *tlsRun) cycleFailed(sh *tlsShard, err error, established bool) {
	if r.stopping.Load() {
		return
	}
	now := r.now()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.countError(err)
	if established {
		sh.lost++
	}
	if now >= r.warmEnd && now < r.end {
		sh.hs.failures[handshakeReason(err)]++
	}
}

// handshakeResult adds the handshake mode's counts to res.
func (r *tlsRun) handshakeResult(res *LoadResult) {
	res.Mode = "handshakes"
	hists := make([]*hdrhistogram.Histogram, 0, len(r.shards))
	var failures [len(handshakeReasons)]int64
	for _, sh := range r.shards {
		res.Handshakes += sh.hs.handshakes
		res.Resumed += sh.hs.resumed
		hists = append(hists, sh.hs.hist)
		for i, v := range sh.hs.failures {
			failures[i] += v
		}
	}
	res.HandshakesPerSec = float64(res.Handshakes) / res.WindowSec
	if res.Handshakes > 0 {
		res.ResumedShare = float64(res.Resumed) / float64(res.Handshakes)
	}
	h := MergeHistograms(hists...)
	hl := Summarize(h)
	res.HandshakeLatency = &hl
	if enc, err := EncodeHistogram(h); err == nil {
		res.HandshakeHistogramV2 = enc
	}
	res.HandshakeFailures = map[string]int64{}
	for i, v := range failures {
		if v > 0 {
			res.HandshakeFailures[handshakeReasons[i]] = v
		}
	}
}

// handshakeReason returns the index in handshakeReasons of a failed
// cycle's error.
func handshakeReason(err error) int {
	name := tlsFailure(err)
	if name == "" {
		switch classify(err) {
		case ErrRefused:
			name = "refused"
		case ErrReset:
			name = "reset"
		case ErrTimeout:
			name = "timeout"
		case ErrRejected:
			name = "peer_closed"
		case ErrMismatched:
			name = "mismatch"
		default:
			name = "other"
		}
	}
	for i, n := range handshakeReasons {
		if n == name {
			return i
		}
	}
	return len(handshakeReasons) - 1
}

// tlsFailure names a TLS handshake's own failure: bad_certificate (the
// server's certificate did not verify), alert (the server sent one),
// not_tls (the server's answer is not a TLS record), or "" for any other
// error.
func tlsFailure(err error) string {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		header   tls.RecordHeaderError
		alert    tls.AlertError
		op       *net.OpError
	)
	switch {
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid):
		return "bad_certificate"
	case errors.As(err, &header):
		return "not_tls"
	case errors.As(err, &alert), errors.As(err, &op) && op.Op == "remote error":
		return "alert"
	}
	return ""
}

// isTimeout reports a deadline that passed.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
