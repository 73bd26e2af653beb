//go:build linux

package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicenet/sluice/bench"
	"github.com/sluicenet/sluice/internal/human"
	"github.com/sluicenet/sluice/internal/procstat"
)

// overload is the state of one Overload call.
type overload struct {
	cfg      OverloadConfig
	benchBin string
	echoBin  string
	rep      *OverloadReport
}

// Overload runs the overload measurement cfg describes and returns the
// report. Servers run as processes pinned to cfg.ServerCPUs, fresh for every
// run; the generator and the floods run pinned to cfg.ClientCPUs. Within a
// round the servers alternate, so that a drift of the (shared) machine
// affects all of them alike; the report gives medians and ranges.
func Overload(ctx context.Context, cfg OverloadConfig) (*OverloadReport, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkCPUs(&CompareConfig{ServerCPUs: cfg.ServerCPUs, ClientCPUs: cfg.ClientCPUs}); err != nil {
		return nil, err
	}
	raiseFileLimit()
	o := &overload{cfg: cfg, rep: &OverloadReport{Started: time.Now(), Machine: ReadMachine(), Config: cfg, Commands: map[string]string{}}}
	cleanup, err := o.build(ctx)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if cfg.has(PartGoodput) {
		o.goodput(ctx)
	}
	if cfg.has(PartPriorities) && ctx.Err() == nil {
		o.priorities(ctx)
	}
	if cfg.has(PartFairness) && ctx.Err() == nil {
		o.fairness(ctx)
	}
	if cfg.has(PartMemory) && ctx.Err() == nil {
		o.memory(ctx)
	}
	if cfg.has(PartGate) && ctx.Err() == nil {
		o.gate(ctx)
	}
	if cfg.has(PartBacklog) && ctx.Err() == nil {
		o.backlog(ctx)
	}
	o.rep.Machine.LoadAvgEnd = ReadLoadAvg()
	o.rep.Finished = time.Now()
	return o.rep, ctx.Err()
}

// build finds the modules and builds ./cmd/echo and, unless cfg.BenchBin
// names one, ./cmd/bench into a temporary directory, which cleanup
// removes.
func (o *overload) build(ctx context.Context) (cleanup func(), err error) {
	if err := findDir(ctx, o.cfg.GoCmd, &o.cfg.SluiceDir, SluiceDir); err != nil {
		return nil, err
	}
	if o.cfg.BenchBin == "" {
		if err := findDir(ctx, o.cfg.GoCmd, &o.cfg.ModuleDir, ModuleDir); err != nil {
			return nil, err
		}
	}
	tmp, err := os.MkdirTemp("", "sluice-overload-")
	if err != nil {
		return nil, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	o.benchBin = o.cfg.BenchBin
	if o.benchBin == "" {
		o.benchBin = filepath.Join(tmp, "bench")
		o.progress("building ./cmd/bench")
		if err := goBuild(ctx, o.cfg.GoCmd, o.cfg.ModuleDir, "./cmd/bench", o.benchBin); err != nil {
			cleanup()
			return nil, err
		}
	}
	o.echoBin = filepath.Join(tmp, "echo")
	o.progress("building ./cmd/echo")
	if err := goBuild(ctx, o.cfg.GoCmd, o.cfg.SluiceDir, "./cmd/echo", o.echoBin); err != nil {
		cleanup()
		return nil, err
	}
	return cleanup, nil
}

func (o *overload) progress(format string, args ...any) {
	if o.cfg.Progress != nil {
		fmt.Fprintf(o.cfg.Progress, format+"\n", args...)
	}
}

// server starts srv for purpose (a report key) with extra flags; work is
// the simulated work per frame.
func (o *overload) server(purpose, srv string, work time.Duration, extra ...string) (*serverProc, error) {
	loops := strconv.Itoa(len(o.cfg.ServerCPUs))
	var bin string
	var args []string
	var env []string
	switch srv {
	case ServerGnet, ServerNet:
		bin, env = o.benchBin, o.cfg.BenchEnv
		args = []string{"peer", "-kind", srv, "-codec", bench.CodecLength.String(), "-addr", "127.0.0.1:0", "-loops", loops}
	default:
		bin = o.echoBin
		args = []string{"-addr", "127.0.0.1:0", "-codec", bench.CodecLength.String(), "-loops", loops}
		if srv == ServerSluiceShedDefault {
			args = append(args, "-shed")
		}
		if srv == ServerSluiceShed {
			args = append(args, o.cfg.ShedArgs...)
		}
		if srv == ServerSluiceShedTight {
			args = append(args, o.cfg.TightShedArgs...)
		}
		if srv == ServerSluiceBudget || srv == ServerSluiceMemLimit {
			args = append(args, "-max-queued-bytes", strconv.FormatInt(o.cfg.QueuedBudgetBytes, 10))
		}
		if srv == ServerSluiceMemLimit {
			env = append(env, "GOMEMLIMIT="+strconv.FormatInt(o.cfg.MemLimitBytes, 10))
		}
	}
	if work > 0 {
		args = append(args, "-work", work.String())
	}
	args = append(args, extra...)
	name := "cmd/bench"
	if bin == o.echoBin {
		name = "cmd/echo"
	}
	key := purpose + ": " + srv
	if _, ok := o.rep.Commands[key]; !ok {
		o.rep.Commands[key] = strings.TrimSpace(strings.Join(env, " ") + " " + name + " " + strings.Join(args, " "))
	}
	return startServer(bin, args, env, len(o.cfg.ServerCPUs), o.cfg.ServerCPUs, serverStartTimeout)
}

// loadSpec is one generator run: Conns connections, open loop at Rate
// requests per second when it is positive, else closed loop with InFlight
// requests per connection; Timeout is the response timeout (0: the
// generator's default).
type loadSpec struct {
	Conns, InFlight, Size     int
	Rate                      float64
	Warmup, Duration, Timeout time.Duration
	// LocalAddr is the generator's source address (empty: the kernel's);
	// NoServerStats leaves out reading the server's CPU time (a second
	// generator at once).
	LocalAddr     string
	NoServerStats bool
	// Reconnect has a closed loop dial a connection closed with a final
	// refusal again after its retry-after (bench load -reconnect).
	Reconnect bool
}

// load runs the generator pinned to the client CPUs against p with the
// goodput part's connections, size, warm-up and window.
func (o *overload) load(ctx context.Context, p *serverProc, rate float64, closed bool) (*bench.LoadResult, error) {
	c := o.cfg
	s := loadSpec{Conns: c.Conns, Size: c.Size, Warmup: c.Warmup, Duration: c.Duration}
	if closed {
		s.InFlight = c.InFlight
	} else {
		s.Rate = rate
	}
	return o.runLoad(ctx, p, s)
}

// runLoad runs the generator pinned to the client CPUs against p as s
// describes: one process over all of them, or, with several client CPUs
// (and ClientProcs not 1), one process per CPU (SplitGenerators) started
// at once, their results merged (MergeLoadResults, its notes into the
// report's). Only the first process reads the server's usage. A run in which
// a process printed no result has none.
func (o *overload) runLoad(ctx context.Context, p *serverProc, s loadSpec) (*bench.LoadResult, error) {
	shares := SplitGenerators(s.Conns, s.Rate, o.cfg.ClientCPUs, o.cfg.ClientProcs)
	if len(shares) == 1 {
		return o.runGenerator(ctx, p, s, o.cfg.ClientCPUs, false)
	}
	results := make([]*bench.LoadResult, len(shares))
	errs := make([]error, len(shares))
	var wg sync.WaitGroup
	for i, sh := range shares {
		part := s
		part.Conns, part.Rate = sh.Conns, sh.RatePerSec
		part.NoServerStats = s.NoServerStats || i > 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = o.runGenerator(ctx, p, part, sh.CPUs, true)
			if results[i] == nil {
				errs[i] = fmt.Errorf("%w (%d of %d, CPUs %v): %w", errGeneratorFailed, i+1, len(shares), sh.CPUs, errs[i])
			}
		}()
	}
	wg.Wait()
	err := errors.Join(errs...)
	if slices.Contains(results, nil) {
		return nil, err
	}
	res, notes := MergeLoadResults(results)
	for _, n := range notes {
		o.rep.Notes = append(o.rep.Notes, "merging the generators: "+n)
	}
	return res, err
}

// runGenerator runs one generator process pinned to cpus (GOMAXPROCS
// len(cpus)) against p as s describes; split (a share of a run over
// several processes) gives its open-loop rate to the thousandth, not
// rounded to a whole request per second.
func (o *overload) runGenerator(ctx context.Context, p *serverProc, s loadSpec, cpus []int, split bool) (*bench.LoadResult, error) {
	c := o.cfg
	args := []string{"load", "-json", "-addr", p.Addr, "-codec", bench.CodecLength.String(),
		"-conns", strconv.Itoa(s.Conns), "-size", strconv.Itoa(s.Size),
		"-warmup", s.Warmup.String(), "-duration", s.Duration.String()}
	if !s.NoServerStats {
		args = append(args, "-server-pid", strconv.Itoa(p.Pid))
	}
	if s.LocalAddr != "" {
		args = append(args, "-local-addr", s.LocalAddr)
	}
	switch {
	case s.Rate > 0 && split:
		args = append(args, "-rate", strconv.FormatFloat(s.Rate, 'f', 3, 64))
	case s.Rate > 0:
		args = append(args, "-rate", strconv.FormatFloat(s.Rate, 'f', 0, 64))
	default:
		args = append(args, "-inflight", strconv.Itoa(s.InFlight))
		if s.Reconnect {
			args = append(args, "-reconnect")
		}
	}
	timeout := bench.DefaultResponseTimeout
	if s.Timeout > 0 {
		timeout = s.Timeout
		args = append(args, "-timeout", s.Timeout.String())
	}
	out, err := RunChild(ctx, o.benchBin, args, c.BenchEnv, len(cpus), cpus, s.Warmup+s.Duration+bench.DefaultConnectTimeout+timeout+30*time.Second)
	var res bench.LoadResult
	if len(out) > 0 && json.Unmarshal(out, &res) == nil {
		return &res, err
	}
	if err == nil {
		err = fmt.Errorf("sluice: bench: the generator printed no result")
	}
	return nil, err
}

// oneLoad starts srv, runs one load and stops srv.
func (o *overload) oneLoad(ctx context.Context, srv string, rate float64, closed bool, extra ...string) (*bench.LoadResult, error) {
	p, err := o.server(PartGoodput, srv, o.cfg.Work, extra...)
	if err != nil {
		return nil, err
	}
	res, err := o.load(ctx, p, rate, closed)
	if note := p.stop(serverStopTimeout); note != "" {
		o.rep.Notes = append(o.rep.Notes, srv+": "+note)
	}
	return res, err
}

// goodput measures each server's capacity (closed loop, every round), then
// its unloaded latency and its goodput at Factor × its median capacity
// (open loop, every round).
func (o *overload) goodput(ctx context.Context) {
	c := o.cfg
	cells := make([]GoodputCell, len(c.Servers))
	for i, s := range c.Servers {
		cells[i] = GoodputCell{Server: s, Runs: make([]GoodputRun, c.Rounds)}
		for r := range cells[i].Runs {
			cells[i].Runs[r].Round = r + 1
		}
	}
	// Capacity: the server with the same work and no shedding; sluice-shed
	// is measured as sluice-noshed (shedding in a closed loop measures the
	// shedding, not the capacity).
	for r := 0; r < c.Rounds && ctx.Err() == nil; r++ {
		for i, s := range c.Servers {
			as := s
			if s == ServerSluiceShed || s == ServerSluiceShedTight || s == ServerSluiceShedDefault {
				as = ServerSluiceNoShed
			}
			res, err := o.oneLoad(ctx, as, 0, true)
			run := &cells[i].Runs[r]
			run.Peak = brief(res)
			if err != nil {
				run.Error = err.Error()
			}
			o.progress("goodput round %d/%d %-13s capacity %s", r+1, c.Rounds, s, loadLine(res, err))
		}
	}
	peaks := make([]float64, len(cells))
	for i := range cells {
		cells[i].summarize()
		peaks[i] = cells[i].Peak.Median
	}
	for r := 0; r < c.Rounds && ctx.Err() == nil; r++ {
		for i, s := range c.Servers {
			run := &cells[i].Runs[r]
			if peaks[i] <= 0 {
				run.Error = "no capacity measured"
				continue
			}
			un, err := o.oneLoad(ctx, s, math.Round(c.UnloadedFraction*peaks[i]), false)
			run.Unloaded = brief(un)
			if err != nil {
				run.Error = err.Error()
			}
			o.progress("goodput round %d/%d %-13s %.1f× capacity %s", r+1, c.Rounds, s, c.UnloadedFraction, loadLine(un, err))
			ov, err := o.oneLoad(ctx, s, math.Round(c.Factor*peaks[i]), false)
			run.Overload = brief(ov)
			if err != nil {
				run.Error = err.Error()
			}
			o.progress("goodput round %d/%d %-13s %.0f× capacity %s", r+1, c.Rounds, s, c.Factor, loadLine(ov, err))
			if ov != nil {
				run.GoodputRatio = ov.MsgsPerSec / peaks[i]
				if un != nil && un.Latency.P99Micros > 0 {
					run.P99Ratio = ov.Latency.P99Micros / un.Latency.P99Micros
				}
			}
		}
	}
	for i := range cells {
		cells[i].summarize()
	}
	o.rep.Goodput = cells
}

// loadLine is a progress summary of one load run.
func loadLine(r *bench.LoadResult, err error) string {
	if r == nil {
		return fmt.Sprintf("failed: %v", err)
	}
	s := fmt.Sprintf("%s msg/s p99 %s", human.Rate(r.MsgsPerSec), human.Micros(r.Latency.P99Micros))
	if r.Rejected > 0 {
		s += fmt.Sprintf(", rejected %s/s %v", human.Rate(r.RejectedPerSec), r.Rejects)
		if rl := r.RejectLatency; rl != nil {
			s += fmt.Sprintf(" after p50 %s p99 %s", human.Micros(rl.P50Micros), human.Micros(rl.P99Micros))
		}
	}
	if r.Mode == "open" {
		s += fmt.Sprintf(", offered %s/s missed %d", human.Rate(r.OfferedPerSec), r.Missed)
	}
	if err != nil {
		s += fmt.Sprintf(" (error: %v)", err)
	}
	return s
}

// memory floods each server with peers that do not read and samples its
// resident memory.
func (o *overload) memory(ctx context.Context) {
	c := o.cfg
	cells := make([]MemoryCell, len(c.MemoryServers))
	for i, s := range c.MemoryServers {
		cells[i].Server = s
		if s == ServerSluiceBudget || s == ServerSluiceMemLimit {
			cells[i].BudgetBytes = c.QueuedBudgetBytes
		}
		if s == ServerSluiceMemLimit {
			cells[i].MemLimitBytes = c.MemLimitBytes
		}
	}
	for r := 1; r <= c.Rounds && ctx.Err() == nil; r++ {
		for i, s := range c.MemoryServers {
			run := o.memoryRun(ctx, s, r)
			cells[i].Runs = append(cells[i].Runs, run)
			o.progress("memory round %d/%d %-13s baseline %d KiB, peak %d KiB (+%d), kernel TCP +%d KiB, sent %d MiB %s",
				r, c.Rounds, s, run.BaselineRSSKiB, run.PeakRSSKiB, run.PeakRSSKiB-run.BaselineRSSKiB, run.KernelTCPKiB, run.SentMiB, run.Error)
		}
	}
	for i := range cells {
		cells[i].summarize()
	}
	o.rep.Memory = cells
}

func (o *overload) memoryRun(ctx context.Context, srv string, round int) MemoryRun {
	c := o.cfg
	run := MemoryRun{Round: round}
	var extra []string
	sluice := srv != ServerNet && srv != ServerGnet
	if sluice {
		extra = []string{"-admin-addr", "127.0.0.1:0"}
	}
	p, err := o.server(PartMemory, srv, 0, extra...)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	admin := ""
	if sluice {
		if admin, err = adminAddr(p); err != nil {
			run.Error = err.Error()
		}
	}
	defer func() {
		if note := p.stop(serverStopTimeout); note != "" {
			o.rep.Notes = append(o.rep.Notes, srv+": "+note)
		}
	}()
	time.Sleep(200 * time.Millisecond)
	base, _ := procstat.ReadProcCounters(p.Pid)
	run.BaselineRSSKiB = base.RSSKiB
	kern0 := tcpMemKiB()
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if pc, err := procstat.ReadProcCounters(p.Pid); err == nil {
				run.PeakRSSKiB = max(run.PeakRSSKiB, pc.RSSKiB)
				run.EndRSSKiB = pc.RSSKiB
			}
			if k := tcpMemKiB(); k >= 0 && kern0 >= 0 {
				run.KernelTCPKiB = max(run.KernelTCPKiB, k-kern0)
			}
			if admin != "" {
				if as, err := readAdmin(admin); err == nil {
					run.PeakQueuedKiB = max(run.PeakQueuedKiB, (as.Stats.QueuedOutBytes+as.Stats.QueuedInBytes)>>10)
				}
			}
		}
	}()
	args := []string{"peerflood", "-json", "-addr", p.Addr, "-codec", bench.CodecLength.String(),
		"-conns", strconv.Itoa(c.FloodConns), "-size", strconv.Itoa(c.FloodSize), "-duration", c.FloodDuration.String()}
	out, err := RunChild(ctx, o.benchBin, args, c.BenchEnv, len(c.ClientCPUs), c.ClientCPUs, c.FloodDuration+30*time.Second)
	close(stop)
	<-sampled
	var res PeerFloodResult
	if len(out) > 0 && json.Unmarshal(out, &res) == nil {
		run.SentMiB, run.ClosedConns = res.SentBytes>>20, res.Closed
	}
	if err != nil {
		run.Error = err.Error()
	}
	return run
}

// tcpMemKiB reads the system's TCP socket memory from /proc/net/sockstat
// ("TCP: inuse N orphan N tw N alloc N mem PAGES"); -1 when unknown.
func tcpMemKiB() int64 {
	b, err := os.ReadFile("/proc/net/sockstat")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "TCP:" {
			continue
		}
		for i := 1; i+1 < len(f); i += 2 {
			if f[i] == "mem" {
				pages, err := strconv.ParseInt(f[i+1], 10, 64)
				if err != nil {
					return -1
				}
				return pages * int64(os.Getpagesize()) >> 10
			}
		}
	}
	return -1
}

// adminStats is the part of cmd/echo's /debug/sluice the runner reads.
type adminStats struct {
	Stats struct {
		GateOpen        bool
		GateTransitions uint64
		ConnsOpen       int64
		Accepted        uint64
		QueuedOutBytes  int64
		QueuedInBytes   int64
		Admission       struct {
			Gate struct {
				State       uint32
				Transitions uint64
			}
			Rejects          []uint64
			BacklogRejects   uint64
			AcceptQueueDepth int64
		}
	} `json:"stats"`
}

var gateStateNames = []string{"open", "closed", "paused", "rejecting"}

// adminClient reads cmd/echo's admin endpoint.
var adminClient = http.Client{Timeout: time.Second}

// readAdmin fetches and decodes /debug/sluice.
func readAdmin(addr string) (*adminStats, error) {
	resp, err := adminClient.Get("http://" + addr + "/debug/sluice")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var as adminStats
	if err := json.NewDecoder(resp.Body).Decode(&as); err != nil {
		return nil, err
	}
	return &as, nil
}

// adminAddr waits for cmd/echo's "admin on http://HOST:PORT" line.
func adminAddr(p *serverProc) (string, error) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(p.Output.String(), "\n") {
			if a, ok := strings.CutPrefix(strings.TrimSpace(line), "admin on http://"); ok {
				return a, nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "", fmt.Errorf("sluice: bench: no admin address from the server: %s", p.Output.String())
}

// gate runs a connection flood past sluice's connection budget and samples
// the gate.
func (o *overload) gate(ctx context.Context) {
	c := o.cfg
	run := &GateRun{BinMillis: 50}
	o.rep.Gate = run
	extra := []string{"-budget-conns", strconv.Itoa(c.GateBudget), "-gate-high", "1", "-gate-low", "0.5", "-gate-dwell", "500ms",
		"-admin-addr", "127.0.0.1:0"}
	p, err := o.server(PartGate, ServerSluiceNoShed, 0, extra...)
	if err != nil {
		run.Error = err.Error()
		return
	}
	run.Command = "cmd/echo -codec length " + strings.Join(extra, " ")
	defer p.stop(serverStopTimeout)
	admin, err := adminAddr(p)
	if err != nil {
		run.Error = err.Error()
		return
	}
	t0 := time.Now()
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			as, err := readAdmin(admin)
			if err != nil {
				continue
			}
			st := as.Stats
			s := GateSample{AtMillis: float64(time.Since(t0)) / 1e6, GateOpen: st.GateOpen, ConnsOpen: st.ConnsOpen,
				Accepted: st.Accepted, BacklogDepth: st.Admission.AcceptQueueDepth,
				PolicyChanges: st.Admission.Gate.Transitions, EngineChanges: st.GateTransitions, BacklogRejects: st.Admission.BacklogRejects}
			if int(st.Admission.Gate.State) < len(gateStateNames) {
				s.PolicyState = gateStateNames[st.Admission.Gate.State]
			}
			if len(st.Admission.Rejects) > 1 {
				s.RejectsGlobal = st.Admission.Rejects[1]
			}
			run.Samples = append(run.Samples, s)
		}
	}()
	time.Sleep(100 * time.Millisecond)
	args := []string{"connflood", "-json", "-addr", p.Addr, "-codec", bench.CodecLength.String(), "-conns", strconv.Itoa(c.GateFloodConns),
		"-rate", strconv.FormatFloat(c.GateFloodRate, 'f', 0, 64), "-hold", c.GateHold.String(), "-timeout", "10s"}
	window := time.Duration(float64(c.GateFloodConns)/c.GateFloodRate*float64(time.Second)) + c.GateHold + 20*time.Second
	out, err := RunChild(ctx, o.benchBin, args, c.BenchEnv, len(c.ClientCPUs), c.ClientCPUs, window)
	time.Sleep(700 * time.Millisecond) // the last holds end, the gate reopens
	close(stop)
	<-sampled
	var res ConnFloodResult
	if len(out) > 0 && json.Unmarshal(out, &res) == nil {
		run.Outcomes = res.Outcomes()
		run.AcceptedPerSec, run.OfferedPerSec = acceptTimeline(&res, t0.UnixNano(), run.BinMillis)
	}
	if err != nil {
		run.Error = err.Error()
	}
	if n := len(run.Samples); n > 0 {
		run.PolicyTransitions = run.Samples[n-1].PolicyChanges
		run.EngineTransitions = run.Samples[n-1].EngineChanges
	}
	o.progress("gate: %d samples, outcomes %v, policy transitions %d, engine transitions %d %s",
		len(run.Samples), run.Outcomes, run.PolicyTransitions, run.EngineTransitions, run.Error)
}

// backlog floods a full accept queue, once letting the kernel drop and once
// with sluice's fast reject.
func (o *overload) backlog(ctx context.Context) {
	c := o.cfg
	base := []string{"-budget-conns", strconv.Itoa(c.BacklogBudget), "-gate-high", "1", "-gate-low", "0.5", "-gate-dwell", "500ms",
		"-backlog", strconv.Itoa(c.Backlog)}
	modes := []struct {
		name  string
		extra []string
	}{
		{"kernel drop", base},
		{"fast reject", append(append([]string(nil), base...), "-backlog-reject", strconv.FormatFloat(c.BacklogRejectAbove, 'f', -1, 64))},
	}
	cells := make([]BacklogCell, len(modes))
	for i, m := range modes {
		cells[i] = BacklogCell{Mode: m.name, Command: "cmd/echo -codec length " + strings.Join(m.extra, " ")}
	}
	for r := 1; r <= c.Rounds && ctx.Err() == nil; r++ {
		for i, m := range modes {
			run := BacklogRun{Round: r}
			p, err := o.server(PartBacklog+" "+m.name, ServerSluiceNoShed, 0, m.extra...)
			if err != nil {
				run.Error = err.Error()
				cells[i].Runs = append(cells[i].Runs, run)
				continue
			}
			args := []string{"connflood", "-json", "-addr", p.Addr, "-codec", bench.CodecLength.String(), "-conns", strconv.Itoa(c.BacklogConns),
				"-rate", strconv.FormatFloat(c.BacklogRate, 'f', 0, 64), "-hold", "0", "-timeout", "5s"}
			out, err := RunChild(ctx, o.benchBin, args, c.BenchEnv, len(c.ClientCPUs), c.ClientCPUs, 60*time.Second)
			p.stop(serverStopTimeout)
			var res ConnFloodResult
			if len(out) > 0 && json.Unmarshal(out, &res) == nil {
				run = backlogRun(r, &res)
			}
			if err != nil {
				run.Error = err.Error()
			}
			cells[i].Runs = append(cells[i].Runs, run)
			o.progress("backlog round %d/%d %-11s outcomes %v p50 %.1f ms p99 %.1f ms explicit %.0f%% %s",
				r, c.Rounds, m.name, run.Outcomes, run.P50Millis["all"], run.P99Millis["all"], 100*run.Explicit, run.Error)
		}
	}
	for i := range cells {
		cells[i].summarize()
	}
	o.rep.Backlog = cells
}

// roundCapacity measures sluice-noshed's closed-loop capacity with the
// goodput part's connections, for the mixed parts' rates in one round.
func (o *overload) roundCapacity(ctx context.Context, part string, round int) (float64, error) {
	res, err := o.oneLoad(ctx, ServerSluiceNoShed, 0, true, o.mixExtra()...)
	o.progress("%s round %d/%d capacity %s", part, round, o.cfg.Rounds, loadLine(res, err))
	if res == nil || res.MsgsPerSec <= 0 {
		if err == nil {
			err = fmt.Errorf("sluice: bench: no capacity measured")
		}
		return 0, err
	}
	return res.MsgsPerSec, nil
}

// mixRun starts srv with extra flags and runs loads at once against it,
// each generator pinned to the client CPUs.
func (o *overload) mixRun(ctx context.Context, purpose, srv string, extra []string, round int, capacity float64, loads []MixLoad) MixRun {
	run := MixRun{Round: round, Capacity: capacity, Loads: loads}
	p, err := o.server(purpose, srv, o.cfg.Work, extra...)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	var wg sync.WaitGroup
	for i := range run.Loads {
		l := &run.Loads[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := o.runLoad(ctx, p, loadSpec{Conns: l.Conns, Size: l.Size, Rate: math.Round(l.RatePerSec),
				Warmup: o.cfg.Warmup, Duration: o.cfg.Duration, LocalAddr: l.LocalAddr, NoServerStats: i > 0})
			l.Result = brief(res)
			if err != nil {
				l.Error = err.Error()
			}
		}()
	}
	wg.Wait()
	if note := p.stop(serverStopTimeout); note != "" {
		o.rep.Notes = append(o.rep.Notes, purpose+": "+srv+": "+note)
	}
	run.finish()
	for _, l := range run.Loads {
		line := "failed: " + l.Error
		if r := l.Result; r != nil {
			line = fmt.Sprintf("offered %s/s served %s/s (%.1f%%) p99 %s, refused %s/s, unanswered %d", human.Rate(r.OfferedPerSec), human.Rate(r.MsgsPerSec),
				100*l.ServedRatio, human.Micros(r.Latency.P99Micros), human.Rate(r.RejectedPerSec), r.Missed+r.Dropped)
		}
		o.progress("%s round %d/%d %s %-11s %s", purpose, round, o.cfg.Rounds, srv, l.Name, line)
	}
	return run
}

// mixExtra returns the cmd/echo flags of the mixed parts' work mode.
func (o *overload) mixExtra() []string {
	if o.cfg.MixMode == ModePool {
		return []string{"-work-mode", ModePool}
	}
	return nil
}

// priorities runs the priorities part: the classified server and the same
// server without classes under the same three generators.
func (o *overload) priorities(ctx context.Context) {
	c := o.cfg
	cells := []MixCell{
		{Server: ServerSluiceShedDefault, Label: "-shed " + strings.Join(PriorityArgs, " "), Args: PriorityArgs},
		{Server: ServerSluiceShedDefault, Label: "-shed, every frame normal"},
	}
	o.rep.Priorities = o.mixPart(ctx, PartPriorities, cells, []string{PartPriorities, PartPriorities + " (no classes)"},
		func(capacity float64) []MixLoad {
			return priorityLoads(capacity, c.Factor, c.CriticalFactor, c.NormalFactor, c.MixConnsFactor)
		})
}

// fairness runs the fairness part: the tenants' generators against
// sluice-shed-default.
func (o *overload) fairness(ctx context.Context) {
	c := o.cfg
	cells := []MixCell{{Server: ServerSluiceShedDefault, Label: "-shed"}}
	o.rep.Fairness = o.mixPart(ctx, PartFairness, cells, []string{PartFairness},
		func(capacity float64) []MixLoad {
			return fairnessLoads(capacity, c.Factor, c.HeavyWeight, c.Tenants, c.MixConnsFactor*c.TenantConns)
		})
}

// mixPart runs a mixed part: every round the capacity, then each cell's
// server (its purposes entry names its command in the report) under the
// generators loads gives for that capacity, a fresh copy per cell. It
// returns the cells with their runs and summaries.
func (o *overload) mixPart(ctx context.Context, part string, cells []MixCell, purposes []string, loads func(capacity float64) []MixLoad) []MixCell {
	for r := 1; r <= o.cfg.Rounds && ctx.Err() == nil; r++ {
		capacity, err := o.roundCapacity(ctx, part, r)
		for i := range cells {
			run := MixRun{Round: r}
			if err != nil {
				run.Error = err.Error()
			} else {
				args := append(slices.Clip(cells[i].Args), o.mixExtra()...)
				run = o.mixRun(ctx, purposes[i], cells[i].Server, args, r, capacity, loads(capacity))
			}
			cells[i].Runs = append(cells[i].Runs, run)
		}
	}
	for i := range cells {
		cells[i].summarize()
	}
	return cells
}
