//go:build linux

package lab

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// hammer is the state of one Hammer call: it runs its servers and the
// generator through a matrix (and its overload) whose scratch report
// shares the hammer report's command lines; hcfg is the call's
// configuration.
type hammer struct {
	*matrix
	hcfg HammerConfig
}

// Hammer runs the hammer cells cfg describes and returns the report. Every
// block (a round's work mode, shape and work) runs sluice-noshed in a
// closed loop of the shape (the capacity), then each server's reference
// (an open loop over the shape's connections at RefFraction of that
// capacity), then each server in the closed loop: the hammer. Servers run
// pinned to cfg.ServerCPUs, fresh for every run, the generator to
// cfg.ClientCPUs (one process per CPU unless ClientProcs says otherwise),
// as in Matrix. The sluice servers run with cmd/echo's admin endpoint, and
// their hammer runs read RefuseShareMetric from it every RefuseShareEvery
// (MatrixRun.RefuseShare; a failed read goes into the report's notes).
//
// With prev (a saved report, possibly of an interrupted run) it runs
// prev's configuration and only the blocks prev lacks, as Matrix does.
func Hammer(ctx context.Context, cfg HammerConfig, prev *HammerReport) (*HammerReport, error) {
	rep := &HammerReport{Started: time.Now(), Machine: ReadMachine(), Commands: map[string]string{}}
	if prev != nil {
		run := cfg
		cfg = prev.Config
		cfg.ModuleDir, cfg.SluiceDir, cfg.GoCmd, cfg.BenchBin, cfg.BenchEnv = run.ModuleDir, run.SluiceDir, run.GoCmd, run.BenchBin, run.BenchEnv
		cfg.Progress, cfg.Checkpoint = run.Progress, run.Checkpoint
		cfg.Rounds = max(cfg.Rounds, run.Rounds)
		rep.Started, rep.Machine = prev.Started, prev.Machine
		rep.Runs = append(rep.Runs, prev.Runs...)
		rep.Notes = append(rep.Notes, prev.Notes...)
		for k, v := range prev.Commands {
			rep.Commands[k] = v
		}
	}
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkCPUs(&CompareConfig{ServerCPUs: cfg.ServerCPUs, ClientCPUs: cfg.ClientCPUs}); err != nil {
		return nil, err
	}
	rep.Config = cfg
	raiseFileLimit()
	h := &hammer{hcfg: cfg, matrix: &matrix{
		purpose:     "hammer",
		refuseShare: true,
		cfg:         MatrixConfig{Size: cfg.Size, Warmup: cfg.Warmup, Duration: cfg.Duration, MinSamples: cfg.MinSamples, ServerCPUs: cfg.ServerCPUs},
		overload: &overload{
			cfg: OverloadConfig{ModuleDir: cfg.ModuleDir, SluiceDir: cfg.SluiceDir, GoCmd: cfg.GoCmd, BenchBin: cfg.BenchBin, BenchEnv: cfg.BenchEnv,
				ServerCPUs: cfg.ServerCPUs, ClientCPUs: cfg.ClientCPUs, ClientProcs: cfg.ClientProcs, ShedArgs: cfg.ShedArgs,
				TightShedArgs: cfg.TightShedArgs, QueuedBudgetBytes: 16 << 20, Progress: cfg.Progress},
			rep: &OverloadReport{Commands: rep.Commands},
		}}}
	cleanup, err := h.build(ctx)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	h.progress("hammer: the generator as %s; the servers on CPUs %v", generatorText(cfg.ClientCPUs, cfg.ClientProcs), cfg.ServerCPUs)
	plan := pendingHammerBlocks(cfg.Plan(), rep.Runs)
	t0 := time.Now()
	var all time.Duration
	for _, b := range plan {
		all += hammerBlockTime(b, cfg)
	}
	var past time.Duration
	for i, b := range plan {
		if ctx.Err() != nil {
			break
		}
		eta := ""
		if past > 0 {
			left := time.Duration(float64(time.Since(t0)) * float64(all-past) / float64(past))
			eta = fmt.Sprintf(", about %v left", left.Round(time.Second))
		}
		h.progress("hammer block %d/%d: round %d/%d, %s, %s, work %v%s", i+1, len(plan), b.Round, cfg.Rounds, b.Mode, b.Shape, b.Work, eta)
		runs := h.block(ctx, b)
		if ctx.Err() != nil {
			break
		}
		past += hammerBlockTime(b, cfg)
		rep.Runs = append(rep.Runs, runs...)
		rep.Notes = append(rep.Notes, h.overload.rep.Notes...)
		h.overload.rep.Notes = nil
		rep.Finished = time.Now()
		rep.Summarize()
		if cfg.Checkpoint != nil {
			cfg.Checkpoint(rep)
		}
	}
	rep.Machine.LoadAvgEnd = ReadLoadAvg()
	rep.Finished = time.Now()
	rep.Summarize()
	return rep, ctx.Err()
}

// block runs one block: the capacity, every server's reference, then
// every server under the hammer.
func (h *hammer) block(ctx context.Context, b HammerBlock) []HammerRun {
	c := h.hcfg
	mb := MatrixBlock{Round: b.Round, Mode: b.Mode, Conns: b.Shape.Conns, Work: b.Work}
	wrap := func(r MatrixRun) HammerRun { return HammerRun{MatrixRun: r, Shape: b.Shape} }
	capRun := h.closedLoop(ctx, mb, b.Shape, ServerSluiceNoShed, KindCapacity)
	runs := []HammerRun{wrap(capRun)}
	capacity := 0.0
	if capRun.Load != nil && capRun.Error == "" {
		capacity = capRun.Load.MsgsPerSec
	}
	if !c.NoReference {
		for _, s := range b.Servers {
			runs = append(runs, wrap(h.open(ctx, mb, s, KindReference, c.RefFraction, capacity)))
		}
	}
	for _, s := range b.Servers {
		runs = append(runs, wrap(h.closedLoop(ctx, mb, b.Shape, s, KindHammer)))
	}
	return runs
}

// closedLoop runs srv (sluice-noshed for the capacity) in a closed loop of
// shape, its window long enough for MinSamples requests at the nominal
// capacity, its response timeout above the queue the shape can build.
func (h *hammer) closedLoop(ctx context.Context, mb MatrixBlock, shape HammerShape, srv, kind string) MatrixRun {
	c := h.hcfg
	expect := float64(len(c.ServerCPUs)) / mb.Work.Seconds()
	s := loadSpec{Conns: shape.Conns, InFlight: shape.InFlight, Size: c.Size, Warmup: c.Warmup,
		Duration: window(c.Duration, c.MinSamples, expect), Timeout: responseTimeout(mb.Work, shape.Conns*shape.InFlight),
		Reconnect: c.Reconnect}
	r := MatrixRun{Round: mb.Round, Mode: mb.Mode, Conns: shape.Conns, Work: mb.Work, Server: srv, Kind: kind, InFlight: shape.InFlight}
	h.run(ctx, mb, srv, s, &r)
	return r
}

// readRefuseShare reads RefuseShareMetric from the server's admin endpoint
// (cmd/echo -admin-addr) at addr.
func readRefuseShare(addr string) (float64, error) {
	resp, err := adminClient.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("sluice: bench: /metrics: %s: %s", resp.Status, truncate(strings.TrimSpace(string(body)), 120))
	}
	return promGauge(string(body), RefuseShareMetric)
}

// shareSampler reads RefuseShareMetric every RefuseShareEvery, timing
// each reading, until finish.
type shareSampler struct {
	stop chan struct{}
	done chan struct{}
	// Written by the sampling goroutine until done is closed.
	at     []time.Time
	shares []float64
	fails  int
	err    error // the first failed read
}

// sampleRefuseShare starts reading RefuseShareMetric from the admin
// endpoint at addr after delay (the generator's warm-up: the readings
// before the window are left out anyway).
func sampleRefuseShare(addr string, delay time.Duration) *shareSampler {
	s := &shareSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		wait := time.NewTimer(delay)
		defer wait.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-wait.C:
			}
			v, err := readRefuseShare(addr)
			switch {
			case err == nil:
				s.at, s.shares = append(s.at, time.Now()), append(s.shares, v)
			case s.err == nil:
				s.fails, s.err = 1, err
			default:
				s.fails++
			}
			wait.Reset(RefuseShareEvery)
		}
	}()
	return s
}

// finish stops the readings and aggregates those of the last window (the
// generator's measured window, which ends as it exits). The error reports
// failed reads, or a window without a reading; the figure stands if any
// reading succeeded.
func (s *shareSampler) finish(window time.Duration) (*RefuseShare, error) {
	close(s.stop)
	<-s.done
	from := time.Now().Add(-window)
	var in []float64
	for i, t := range s.at {
		if !t.Before(from) {
			in = append(in, s.shares[i])
		}
	}
	var err error
	switch {
	case s.err != nil:
		err = fmt.Errorf("%d of %d reads of %s failed: %w", s.fails, s.fails+len(s.shares), RefuseShareMetric, s.err)
	case len(in) == 0:
		err = fmt.Errorf("no reading of %s in the %v window", RefuseShareMetric, window)
	}
	return refuseShareOf(in), err
}
