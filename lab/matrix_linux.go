//go:build linux

package lab

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/sluicenet/sluice/internal/procstat"
)

// matrix is the state of one Matrix call. It runs its servers and the
// generator through an overload whose scratch report shares the matrix
// report's command lines.
type matrix struct {
	*overload
	cfg MatrixConfig
	rep *MatrixReport
	// purpose starts the report's keys of the server command lines
	// (empty: "matrix").
	purpose string
	// refuseShare starts the sluice servers with the admin endpoint and
	// reads RefuseShareMetric in their hammer runs (Hammer); every run
	// has the endpoint so that a server's command line is the same in all.
	refuseShare bool
}

// Matrix runs the overload matrix cfg describes and returns the report.
// Servers run as processes pinned to cfg.ServerCPUs, fresh for every run,
// and the generator pinned to cfg.ClientCPUs, as in Overload.
//
// With prev (a saved report, possibly of an interrupted matrix) it runs
// prev's configuration and only the blocks prev does not have; cfg gives
// where and how to run (module, binaries, progress, checkpoint) and may
// raise the rounds. A block interrupted by ctx is left out of the report,
// so that resuming runs it whole.
func Matrix(ctx context.Context, cfg MatrixConfig, prev *MatrixReport) (*MatrixReport, error) {
	rep := &MatrixReport{Started: time.Now(), Machine: ReadMachine(), Commands: map[string]string{}}
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
	m := &matrix{cfg: cfg, rep: rep, overload: &overload{
		cfg: OverloadConfig{ModuleDir: cfg.ModuleDir, SluiceDir: cfg.SluiceDir, GoCmd: cfg.GoCmd, BenchBin: cfg.BenchBin, BenchEnv: cfg.BenchEnv,
			ServerCPUs: cfg.ServerCPUs, ClientCPUs: cfg.ClientCPUs, ClientProcs: cfg.ClientProcs, ShedArgs: cfg.ShedArgs, TightShedArgs: cfg.TightShedArgs,
			QueuedBudgetBytes: 16 << 20, Progress: cfg.Progress},
		rep: &OverloadReport{Commands: rep.Commands},
	}}
	cleanup, err := m.build(ctx)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	plan := pendingBlocks(cfg.Plan(), rep.Runs)
	t0 := time.Now()
	for i, b := range plan {
		if ctx.Err() != nil {
			break
		}
		eta := ""
		if i > 0 {
			eta = ", " + estimate(plan, i, cfg, time.Since(t0))
		}
		m.progress("matrix block %d/%d: round %d/%d, %s, %d connections, work %v%s", i+1, len(plan), b.Round, cfg.Rounds, b.Mode, b.Conns, b.Work, eta)
		runs := m.block(ctx, b)
		if ctx.Err() != nil {
			break
		}
		rep.Runs = append(rep.Runs, runs...)
		rep.Notes = append(rep.Notes, m.overload.rep.Notes...)
		m.overload.rep.Notes = nil
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

// block runs one block: every server's capacity, then every server's
// reference run, then every factor for every server, so that the servers
// alternate in each phase.
func (m *matrix) block(ctx context.Context, b MatrixBlock) []MatrixRun {
	c := m.cfg
	var runs []MatrixRun
	capacity := map[string]float64{}
	for _, s := range b.Servers {
		r := m.capacity(ctx, b, s)
		if r.Load != nil && r.Error == "" {
			capacity[s] = r.Load.MsgsPerSec
		}
		runs = append(runs, r)
	}
	for _, s := range b.Servers {
		runs = append(runs, m.open(ctx, b, s, KindReference, c.RefFraction, capacity[s]))
	}
	for _, f := range c.Factors {
		for _, s := range b.Servers {
			runs = append(runs, m.open(ctx, b, s, KindOverload, f, capacity[s]))
		}
	}
	return runs
}

// capacity measures srv's capacity in a closed loop: the sluice servers
// without shedding (shedding in a closed loop measures the shedding).
func (m *matrix) capacity(ctx context.Context, b MatrixBlock, srv string) MatrixRun {
	c := m.cfg
	inFlight := capacityInFlight(b.Work, b.Conns)
	expect := float64(len(c.ServerCPUs)) / b.Work.Seconds()
	s := loadSpec{Conns: b.Conns, InFlight: inFlight, Size: c.Size, Warmup: c.Warmup,
		Duration: window(c.Duration, c.MinSamples, expect), Timeout: responseTimeout(b.Work, inFlight*b.Conns)}
	as := srv
	if isSluice(srv) {
		as = ServerSluiceNoShed
	}
	r := MatrixRun{Round: b.Round, Mode: b.Mode, Conns: b.Conns, Work: b.Work, Server: srv, Kind: KindCapacity, InFlight: inFlight}
	m.run(ctx, b, as, s, &r)
	return r
}

// open runs srv in an open loop at factor times its capacity this round.
// A reference run expects to serve its whole rate, an overload run about
// the capacity; each window is long enough for MinSamples of them.
func (m *matrix) open(ctx context.Context, b MatrixBlock, srv, kind string, factor, capacity float64) MatrixRun {
	c := m.cfg
	r := MatrixRun{Round: b.Round, Mode: b.Mode, Conns: b.Conns, Work: b.Work, Server: srv, Kind: kind, Factor: factor}
	if capacity <= 0 {
		r.Error = "no capacity measured this round"
		m.progress("  %-20s %-9s %4.1f× skipped: %s", srv, kind, factor, r.Error)
		return r
	}
	r.RatePerSec = math.Round(factor * capacity)
	s := loadSpec{Conns: b.Conns, Size: c.Size, Rate: r.RatePerSec, Warmup: c.Warmup,
		Duration: window(c.Duration, c.MinSamples, min(r.RatePerSec, capacity))}
	m.run(ctx, b, srv, s, &r)
	return r
}

// run starts srv (as) for block b, runs the generator as s describes,
// reads the server's peak memory and stops it, filling r.
func (m *matrix) run(ctx context.Context, b MatrixBlock, as string, s loadSpec, r *MatrixRun) {
	if err := ctx.Err(); err != nil {
		r.Error = err.Error()
		return
	}
	r.WindowSec = s.Duration.Seconds()
	r.TimeoutSec = s.Timeout.Seconds()
	if s.Timeout == 0 {
		r.TimeoutSec = responseTimeout(0, 0).Seconds()
	}
	var extra []string
	if b.Mode == ModePool && isSluice(as) {
		extra = []string{"-work-mode", ModePool}
	}
	admin := m.refuseShare && isSluice(as)
	if admin {
		extra = append(extra, "-admin-addr", "127.0.0.1:0")
	}
	purpose := m.purpose
	if purpose == "" {
		purpose = "matrix"
	}
	note := func(text string) {
		m.overload.rep.Notes = append(m.overload.rep.Notes, fmt.Sprintf("%s %s %d conns %v %s: %s", r.Server, b.Mode, b.Conns, b.Work, r.Kind, text))
	}
	p, err := m.server(purpose+" "+b.Mode, as, b.Work, extra...)
	if err != nil {
		r.Error = err.Error()
		m.progress("  %-20s %-9s failed: %v", r.Server, r.Kind, err)
		return
	}
	var share *shareSampler
	if admin && r.Kind == KindHammer {
		if addr, aerr := adminAddr(p); aerr != nil {
			note("no " + RefuseShareMetric + ": " + truncate(aerr.Error(), 200))
		} else {
			share = sampleRefuseShare(addr, s.Warmup)
		}
	}
	u0, s0, uerr := readUserSys(p.Pid)
	res, err := m.runLoad(ctx, p, s)
	if share != nil {
		var serr error
		if r.RefuseShare, serr = share.finish(s.Duration); serr != nil {
			note(serr.Error())
		}
	}
	if u1, s1, uerr1 := readUserSys(p.Pid); uerr == nil && uerr1 == nil {
		r.ServerSysShare = sysShare(u0, s0, u1, s1)
	}
	if hwm, herr := procstat.ReadPeakRSSKiB(p.Pid); herr == nil {
		r.PeakRSSKiB = hwm
	}
	if text := p.stop(serverStopTimeout); text != "" {
		note(text)
	}
	r.Load = brief(res)
	if err != nil {
		r.Error = err.Error()
	}
	r.account()
	what := r.Kind
	switch r.Kind {
	case KindCapacity:
	case KindHammer:
		what = fmt.Sprintf("%s %d×%d", r.Kind, r.Conns, r.InFlight)
	default:
		what = fmt.Sprintf("%s %.1f×", r.Kind, r.Factor)
	}
	answered := ""
	if r.Kind != KindCapacity && !r.Answered {
		answered = fmt.Sprintf(", %d unanswered", r.Unanswered)
	}
	refusing := ""
	if rs := r.RefuseShare; rs != nil {
		refusing = fmt.Sprintf(", refusing %.0f%% of busy (max %.0f%%, %d readings)", 100*rs.Mean, 100*rs.Max, rs.Samples)
	}
	m.progress("  %-20s %-15s %s%s, window %v, peak RSS %d KiB%s", r.Server, what, loadLine(res, err), answered, s.Duration, r.PeakRSSKiB, refusing)
}
