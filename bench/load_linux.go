//go:build linux

package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/sluicenet/sluice/internal/human"
	"github.com/sluicenet/sluice/internal/procstat"
	"golang.org/x/sys/unix"
)

// windowSample is a reading of the counters at one end of the measured window.
type windowSample struct {
	at     time.Time
	client procstat.ProcCounters
	server procstat.ProcCounters
	cores  map[int]procstat.CoreTicks
	errs   []error
}

// takeSample reads the counters, the process ones around the clock reading
// so that a preemption while sampling skews the window as little as possible.
func takeSample(serverPID int) windowSample {
	var s windowSample
	var err error
	if s.cores, err = procstat.ReadCoreTicks(); err != nil {
		s.errs = append(s.errs, err)
	}
	if serverPID > 0 {
		if s.server, err = procstat.ReadProcCounters(serverPID); err != nil {
			s.errs = append(s.errs, err)
		}
	}
	s.at = time.Now()
	if s.client, err = procstat.ReadProcCounters(os.Getpid()); err != nil {
		s.errs = append(s.errs, err)
	}
	return s
}

// Load runs one load test as cfg describes and returns what it measured. It
// dials every connection first, then runs the warm-up and the measured window
// on cfg.Workers event loops, or, with cfg.TLS, on goroutines speaking TLS
// (and with cfg.Handshakes, measures handshakes). Failures of individual connections are counted in
// the result, not returned; the error is for a run that could not happen at
// all (bad configuration, no connection).
func Load(ctx context.Context, cfg LoadConfig) (*LoadResult, error) {
	cfg = cfg.withDefaults(runtime.GOMAXPROCS(0))
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.TLS != nil {
		return loadTLS(ctx, cfg)
	}
	sa, family, err := resolveSockaddr(cfg.Addr)
	if err != nil {
		return nil, err
	}
	local, err := localSockaddr(cfg.LocalAddr, family)
	if err != nil {
		return nil, err
	}
	fds, dialFail, err := dialAll(ctx, sa, local, family, cfg.Conns, cfg.ConnectTimeout)
	if err != nil {
		closeAll(fds)
		return nil, err
	}
	if len(fds) == 0 {
		return nil, fmt.Errorf("%w: %d attempts to %s: %v", ErrNoConnections, cfg.Conns, cfg.Addr, dialFail.firstErr)
	}

	workers, err := newWorkers(&cfg, fds)
	for _, w := range workers {
		if w != nil && cfg.Reconnect && !cfg.OpenLoop() {
			w.redial = &redialer{sa: sa, local: local, family: family, timeout: cfg.ConnectTimeout}
		}
	}
	if err != nil {
		for _, w := range workers {
			if w != nil {
				w.closeConns()
			}
		}
		return nil, err
	}

	var stop atomic.Bool
	base := time.Now()
	start := int64(time.Since(base)) + int64(time.Millisecond)
	warmEnd := start + int64(cfg.Warmup)
	end := warmEnd + int64(cfg.Duration)
	var before, after windowSample
	for i, w := range workers {
		w.base, w.startNanos, w.warmEnd, w.endNanos, w.stop = base, start, warmEnd, end, &stop
		if cfg.OpenLoop() {
			// Each loop offers its share of the rate, in proportion to its
			// connections, phase-shifted so the loops interleave.
			rate := cfg.RatePerSec * float64(len(w.conns)) / float64(len(fds))
			offset := int64(float64(i) * 1e9 / cfg.RatePerSec)
			w.sched = NewOpenSchedule(start+offset, rate)
			w.sched.StopAt(end)
		}
		w.progressP99 = cfg.Progress != nil
	}
	workers[0].windowStart = func() { before = takeSample(cfg.ServerPID) }
	workers[0].windowEnd = func() { after = takeSample(cfg.ServerPID) }

	var wg sync.WaitGroup
	done := make(chan struct{})
	for _, w := range workers {
		wg.Add(1)
		go func() { defer wg.Done(); w.run() }()
	}
	go func() {
		select {
		case <-ctx.Done():
			stop.Store(true)
		case <-done:
		}
	}()
	var progWG sync.WaitGroup
	if cfg.Progress != nil {
		progWG.Add(1)
		sample := func() (msgs, errs, p99 int64) {
			for _, w := range workers {
				msgs += w.progMsgs.Load()
				errs += w.progErrs.Load()
				p99 = max(p99, w.progP99.Load())
			}
			return msgs, errs, p99
		}
		go func() { defer progWG.Done(); progressLoop(cfg.Progress, base, warmEnd, end, sample, done) }()
	}
	wg.Wait()
	close(done)
	progWG.Wait()

	var unfinished int64
	tallies := make([]*tally, len(workers))
	for i, w := range workers {
		unfinished += w.closeConns()
		tallies[i] = &w.tally
	}
	res := collect(&cfg, tallies, len(fds), unfinished, dialFail)
	if before.at.IsZero() || after.at.IsZero() {
		return res, fmt.Errorf("sluice: bench: run stopped before its measured window ended: %w", context.Cause(ctx))
	}
	fillUsage(res, &cfg, before, after)
	return res, ctx.Err()
}

// newWorkers spreads fds round-robin over cfg.Workers event loops.
func newWorkers(cfg *LoadConfig, fds []int) ([]*worker, error) {
	nw := min(cfg.Workers, len(fds))
	maxWire := cfg.Codec.WireBytes(cfg.Size.Max)
	maxResp := cfg.Codec.maxResponseBytes(cfg.Size.Max)
	outCap := max(maxWire, min(cfg.InFlight*maxWire, maxOutBatchBytes))
	filler := newFiller(cfg.Size.Max)
	workers := make([]*worker, nw)
	for i := range workers {
		epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			closeAll(fds)
			return workers, os.NewSyscallError("epoll_create1", err)
		}
		workers[i] = &worker{
			id:           i,
			codec:        cfg.Codec,
			size:         cfg.Size,
			closed:       !cfg.OpenLoop(),
			inFlight:     cfg.InFlight,
			epfd:         epfd,
			events:       make([]unix.EpollEvent, maxEventsPerWait),
			rbuf:         make([]byte, readBufferBytes+maxResp),
			filler:       filler,
			rng:          cfg.Seed*0x9e3779b97f4a7c15 + uint64(i)*0xbf58476d1ce4e5b9 + 1,
			lateTolNanos: int64(cfg.LateTolerance),
			respTimeout:  int64(cfg.ResponseTimeout),
			tally:        newTally(),
		}
	}
	for i, fd := range fds {
		w := workers[i%nw]
		c := &conn{fd: fd, idx: int32(len(w.conns)), q: newInflight(cfg.InFlight), out: make([]byte, 0, outCap)}
		if cfg.Codec != CodecRaw {
			c.tail = make([]byte, 0, maxResp)
		}
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(len(w.conns))}
		if err := unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			closeAll(fds[i:])
			return workers, os.NewSyscallError("epoll_ctl", err)
		}
		w.conns = append(w.conns, c)
	}
	return workers, nil
}

// collect merges the tallies' counters and histograms into a result;
// unfinished is the requests written and unanswered when the run ended.
func collect(cfg *LoadConfig, tallies []*tally, connsOpen int, unfinished int64, dialFail *dialFailure) *LoadResult {
	res := &LoadResult{Config: *cfg, Mode: "closed", WindowSec: cfg.Duration.Seconds(), ConnsOpen: connsOpen, Unfinished: unfinished}
	if cfg.OpenLoop() {
		res.Mode = "open"
		res.OfferedPerSec = cfg.RatePerSec
	}
	var errs errorCounts
	errs.add(&dialFail.errs)
	hists := make([]*hdrhistogram.Histogram, 0, len(tallies))
	lags := make([]*hdrhistogram.Histogram, 0, len(tallies))
	rejs := make([]*hdrhistogram.Histogram, 0, len(tallies))
	var rejects rejectCounts
	firstErr := dialFail.firstErr
	for _, w := range tallies {
		res.Msgs += w.msgs
		res.PayloadBytes += w.payloadBytes
		res.Intended += w.intended
		res.Late += w.late
		res.Missed += w.missed
		res.Dropped += w.dropped
		res.ConnsLost += w.lost
		res.GoAways += w.goAways
		res.Reconnects += w.reconnects
		errs.add(&w.errs)
		hists = append(hists, w.hist)
		lags = append(lags, w.lagHist)
		rejs = append(rejs, w.rejHist)
		for i, v := range w.rejects {
			rejects[i] += v
			res.Rejected += v
		}
		if firstErr == nil {
			firstErr = w.firstErr
		}
	}
	h := MergeHistograms(hists...)
	res.Latency = Summarize(h)
	if enc, err := EncodeHistogram(h); err == nil {
		res.HistogramV2 = enc
	}
	if cfg.OpenLoop() {
		lag := Summarize(MergeHistograms(lags...))
		res.SendLag = &lag
	}
	if res.Rejected > 0 {
		res.Rejects = rejects.asMap()
		res.RejectedPerSec = float64(res.Rejected) / res.WindowSec
		rh := MergeHistograms(rejs...)
		rl := Summarize(rh)
		res.RejectLatency = &rl
		if enc, err := EncodeHistogram(rh); err == nil {
			res.RejectHistogramV2 = enc
		}
	}
	res.MsgsPerSec = float64(res.Msgs) / res.WindowSec
	res.MBPerSec = float64(res.PayloadBytes) / res.WindowSec / 1e6
	res.Errors = errs.asMap()
	if firstErr != nil {
		res.FirstError = firstErr.Error()
	}
	return res
}

// fillUsage turns the two window samples into per-process and per-core costs.
func fillUsage(res *LoadResult, cfg *LoadConfig, before, after windowSample) {
	wall := after.at.Sub(before.at).Seconds()
	if wall <= 0 {
		return
	}
	usage := func(pid int, b, a procstat.ProcCounters) *ProcUsage {
		u := &ProcUsage{PID: pid, RSSKiB: a.RSSKiB, SyscallsPerMsg: -1, ReadSyscalls: -1, WriteSyscalls: -1}
		u.CPUSec = float64(a.CPUTicks-b.CPUTicks) / procstat.ClockTicksPerSec
		u.Util = u.CPUSec / wall
		if res.Msgs > 0 {
			u.CPUMicrosPerMsg = u.CPUSec * 1e6 / float64(res.Msgs) * (res.WindowSec / wall)
		}
		if a.ReadSyscalls >= 0 && b.ReadSyscalls >= 0 {
			u.ReadSyscalls = a.ReadSyscalls - b.ReadSyscalls
			u.WriteSyscalls = a.WriteSyscalls - b.WriteSyscalls
			if res.Msgs > 0 {
				u.SyscallsPerMsg = float64(u.ReadSyscalls+u.WriteSyscalls) / float64(res.Msgs) * (res.WindowSec / wall)
			}
		}
		return u
	}
	res.Client = usage(os.Getpid(), before.client, after.client)
	res.Client.CPUs, _ = procstat.AvailableCPUs()
	roles := map[int]string{}
	for _, c := range res.Client.CPUs {
		roles[c] = "client"
	}
	if cfg.ServerPID > 0 {
		res.Server = usage(cfg.ServerPID, before.server, after.server)
		res.Server.CPUs, _ = procstat.ProcessCPUs(cfg.ServerPID)
		for _, c := range res.Server.CPUs {
			if roles[c] == "client" {
				roles[c] = "both"
			} else {
				roles[c] = "server"
			}
		}
	}
	cpus := make([]int, 0, len(roles))
	for c := range roles {
		cpus = append(cpus, c)
	}
	sort.Ints(cpus)
	for _, c := range cpus {
		b, okB := before.cores[c]
		a, okA := after.cores[c]
		if !okA || !okB {
			continue
		}
		cu := CoreUsage{CPU: c, Role: roles[c]}
		// A core's own total (idle included) is the elapsed time as that core
		// counted it, immune to this process being preempted while sampling.
		if total := a.Total - b.Total; total > 0 {
			cu.Busy = float64(a.Busy-b.Busy) / float64(total)
			cu.Steal = float64(a.Steal-b.Steal) / float64(total)
		}
		if res.Msgs > 0 {
			cu.MicrosPerMsg = float64(a.Busy-b.Busy) / procstat.ClockTicksPerSec * 1e6 / float64(res.Msgs) * (res.WindowSec / wall)
		}
		res.Cores = append(res.Cores, cu)
	}
}

// progressLoop writes a progress line about once a second until done:
// sample returns the messages answered and the failures so far (warm-up
// included) and the latest p99 in nanoseconds (0: none yet).
func progressLoop(out io.Writer, base time.Time, warmEnd, end int64, sample func() (msgs, errs, p99 int64), done <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var lastMsgs int64
	last := time.Now()
	for {
		select {
		case <-done:
			_, _ = fmt.Fprintf(out, "\r\033[K")
			return
		case now := <-t.C:
			msgs, errs, p99 := sample()
			rate := float64(msgs-lastMsgs) / now.Sub(last).Seconds()
			lastMsgs, last = msgs, now
			el := now.Sub(base)
			phase := "measuring"
			if int64(el) < warmEnd {
				phase = "warm-up"
			}
			p99Text := "–" // nothing measured yet (warm-up)
			if p99 > 0 {
				p99Text = human.Micros(float64(p99) / 1e3)
			}
			_, _ = fmt.Fprintf(out, "\r\033[K%5.1fs/%.0fs %-9s %s msg/s  p99 %s  errors %d",
				el.Seconds(), time.Duration(end).Seconds(), phase, human.Rate(rate), p99Text, errs)
		}
	}
}
