//go:build linux

package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluicenet/sluice/bench"
	"github.com/sluicenet/sluice/internal/human"
	"github.com/sluicenet/sluice/internal/procstat"
)

// serverStartTimeout bounds how long a server may take to print its
// "listening on" line; serverStopTimeout how long it may take to exit after
// SIGTERM.
const (
	serverStartTimeout = 15 * time.Second
	serverStopTimeout  = 5 * time.Second
	// maxRunNotes caps the per-run notes copied into the report's notes.
	maxRunNotes = 20
)

// comparison is the state of one Compare call.
type comparison struct {
	cfg      CompareConfig
	benchBin string
	bins     map[string]string // server -> binary
	echoErr  *string           // cmd/echo's build result once built (sluice and sluice-uring share it): "" or the failure
	servers  []string          // available, in order
	rep      *Report
	runsDone int
	runsAll  int
	started  time.Time
	live     *liveLine
}

// Compare builds the servers, runs every scenario on every available server
// for cfg.Rounds rounds (servers alternating within a round), measures idle
// memory and the system-call mix, and returns the report. A server that cannot
// be built or started is reported as unavailable; the error is for a
// comparison that could not run at all.
func Compare(ctx context.Context, cfg CompareConfig) (*Report, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkCPUs(&cfg); err != nil {
		return nil, err
	}
	raiseFileLimit()
	c := &comparison{cfg: cfg, bins: map[string]string{}, started: time.Now()}
	c.rep = &Report{Started: c.started, Machine: ReadMachine(), Config: cfg, Scenarios: cfg.Scenarios}
	if cfg.BenchBin == "" {
		if err := findDir(ctx, cfg.GoCmd, &c.cfg.ModuleDir, ModuleDir); err != nil {
			return nil, err
		}
	}
	for _, srv := range cfg.Servers {
		if srv == ServerSluice || srv == ServerSluiceURing {
			if err := findDir(ctx, cfg.GoCmd, &c.cfg.SluiceDir, SluiceDir); err != nil {
				return nil, err
			}
			break
		}
	}
	tmp, err := os.MkdirTemp("", "sluice-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := c.build(ctx, tmp); err != nil {
		return nil, err
	}
	if len(c.servers) == 0 {
		return c.rep, fmt.Errorf("%w: %s", ErrNoServers, c.unavailableText())
	}
	if cfg.Live && cfg.Progress != nil {
		c.live = startLiveLine(cfg.Progress)
		defer c.live.stop()
	}

	var closed, open []Scenario
	for _, s := range cfg.Scenarios {
		if s.Open() {
			open = append(open, s)
		} else {
			closed = append(closed, s)
		}
	}
	c.runsAll = cfg.Rounds * len(cfg.Scenarios) * len(c.servers)
	cells := map[string]*Cell{}
	cellOf := func(s Scenario, srv string) *Cell {
		k := s.Name + "\x00" + srv
		if cells[k] == nil {
			cells[k] = &Cell{Scenario: s.Name, Server: srv}
		}
		return cells[k]
	}
	for r := 1; r <= cfg.Rounds && ctx.Err() == nil; r++ {
		for _, s := range closed {
			for _, srv := range c.servers {
				cell := cellOf(s, srv)
				cell.Runs = append(cell.Runs, c.runOne(ctx, srv, s, r, 0))
			}
		}
	}
	rates := c.openRates(open, cells)
	for r := 1; r <= cfg.Rounds && ctx.Err() == nil; r++ {
		for _, s := range open {
			for _, srv := range c.servers {
				cell := cellOf(s, srv)
				rate, err := rates(s, srv)
				if err != nil {
					c.runsDone++
					cell.Runs = append(cell.Runs, Run{Round: r, Error: err.Error()})
					continue
				}
				cell.Runs = append(cell.Runs, c.runOne(ctx, srv, s, r, rate))
			}
		}
	}
	if cfg.IdleConns > 0 {
		for _, srv := range c.servers {
			if ctx.Err() != nil {
				break
			}
			c.status("idle memory: %s, %d connections", srv, cfg.IdleConns)
			res := c.measureIdle(ctx, srv)
			c.rep.Idle = append(c.rep.Idle, res)
			c.done("idle memory: %s: %s", srv, res.line())
		}
	}
	if cfg.StraceScenario != "none" {
		s, err := ParseScenario(cfg.StraceScenario)
		if err != nil || s.Open() {
			c.rep.Notes = append(c.rep.Notes, fmt.Sprintf("strace scenario %q is not a closed-loop scenario; skipped", cfg.StraceScenario))
		} else {
			for _, srv := range c.servers {
				if ctx.Err() != nil {
					break
				}
				c.status("syscall mix: %s under strace -c -f, %s", srv, s.Name)
				mix := c.measureStrace(ctx, srv, s)
				c.rep.Syscalls = append(c.rep.Syscalls, mix)
				c.done("syscall mix: %s: %s", srv, mix.line())
			}
		}
	}

	// Surface what went wrong around runs (a server that exited during a run
	// or did not stop cleanly) in the notes.
	runNotes := 0
	for _, s := range cfg.Scenarios {
		for _, srv := range c.servers {
			for _, r := range cellOf(s, srv).Runs {
				if r.Note != "" && runNotes < maxRunNotes {
					runNotes++
					c.rep.Notes = append(c.rep.Notes, fmt.Sprintf("%s %s round %d: %s", srv, s.Name, r.Round, r.Note))
				}
			}
		}
	}
	// Summaries, in matrix order, with each server's ratio to gnet.
	for _, s := range cfg.Scenarios {
		var gnet map[int]*bench.LoadResult
		if g := cells[s.Name+"\x00"+ServerGnet]; g != nil {
			gnet = map[int]*bench.LoadResult{}
			for _, r := range g.Runs {
				if r.Result != nil && r.Error == "" {
					gnet[r.Round] = r.Result
				}
			}
		}
		for _, srv := range c.servers {
			cell := cellOf(s, srv)
			capServer := float64(min(cfg.ServerProcs, max(1, len(cfg.ServerCPUs))))
			capClient := float64(min(cfg.ClientProcs, max(1, len(cfg.ClientCPUs))))
			if cfg.NoPin {
				capServer, capClient = float64(cfg.ServerProcs), float64(cfg.ClientProcs)
			}
			cell.Summary = summarize(cell.Runs, gnet, capServer, capClient)
			c.rep.Cells = append(c.rep.Cells, *cell)
		}
	}
	c.rep.Machine.LoadAvgEnd = ReadLoadAvg()
	c.rep.Finished = time.Now()
	if ctx.Err() != nil {
		return c.rep, ctx.Err()
	}
	return c.rep, nil
}

// build builds cmd/bench (the generator and the peers; required) and, when
// sluice is requested, cmd/echo (optional: unbuildable means unavailable).
func (c *comparison) build(ctx context.Context, dir string) error {
	c.benchBin = c.cfg.BenchBin
	if c.benchBin == "" {
		c.benchBin = filepath.Join(dir, "bench")
		c.done("building ./cmd/bench")
		if err := goBuild(ctx, c.cfg.GoCmd, c.cfg.ModuleDir, "./cmd/bench", c.benchBin); err != nil {
			return fmt.Errorf("sluice: bench: the generator and peers do not build: %w", err)
		}
	}
	for _, srv := range c.cfg.Servers {
		st := ServerStatus{Name: srv, Available: true}
		switch srv {
		case ServerSluice, ServerSluiceURing:
			bin := filepath.Join(dir, "echo")
			st.Command = "cmd/echo " + strings.Join(c.serverArgs(srv), " ")
			if _, err := os.Stat(filepath.Join(c.cfg.SluiceDir, "cmd", "echo")); err != nil {
				st.Available, st.Reason = false, "./cmd/echo does not exist yet"
			} else {
				if c.echoErr == nil {
					c.done("building ./cmd/echo")
					msg := ""
					if err := goBuild(ctx, c.cfg.GoCmd, c.cfg.SluiceDir, "./cmd/echo", bin); err != nil {
						msg = "does not build yet: " + err.Error()
					}
					c.echoErr = &msg
				}
				if *c.echoErr != "" {
					st.Available, st.Reason = false, *c.echoErr
				}
			}
			c.bins[srv] = bin
		case ServerCEpoll, ServerCUring:
			from := c.cfg.PeersDir
			if from == "" {
				from = "lab/peers/c"
			}
			c.done("building %s from %s", srv, from)
			bin, cmdLine, err := BuildCPeer(ctx, c.cfg.CC, srv, c.cfg.PeersDir, dir)
			st.Command = cmdLine + "; " + strings.TrimSuffix(cPeers[srv].source, ".c") + " PORT"
			if err != nil {
				st.Available, st.Reason = false, err.Error()
			}
			c.bins[srv] = bin
		default:
			c.bins[srv] = c.benchBin
			st.Command = "cmd/bench " + strings.Join(c.serverArgs(srv), " ")
		}
		if st.Available {
			c.servers = append(c.servers, srv)
		} else {
			c.rep.Notes = append(c.rep.Notes, fmt.Sprintf("%s unavailable: %s", srv, st.Reason))
		}
		c.rep.Servers = append(c.rep.Servers, st)
	}
	return nil
}

// serverArgs returns the command line of a server.
func (c *comparison) serverArgs(srv string) []string {
	loops := strconv.Itoa(c.cfg.ServerProcs)
	switch srv {
	case ServerSluice:
		return []string{"-addr", "127.0.0.1:0", "-codec", c.cfg.Codec.String(), "-loops", loops}
	case ServerSluiceURing:
		return []string{"-addr", "127.0.0.1:0", "-codec", c.cfg.Codec.String(), "-loops", loops, "-backend", "io_uring"}
	}
	return []string{"peer", "-kind", srv, "-codec", c.cfg.Codec.String(), "-addr", "127.0.0.1:0", "-loops", loops}
}

// startServer starts a fresh server process for one measurement.
func (c *comparison) startServer(srv string) (*serverProc, error) {
	var cpus []int
	if !c.cfg.NoPin {
		cpus = c.cfg.ServerCPUs
	}
	if _, ok := cPeers[srv]; ok {
		return startCPeer(c.bins[srv], cpus, serverStartTimeout)
	}
	var env []string
	if c.bins[srv] == c.benchBin {
		env = c.cfg.BenchEnv
	}
	return startServer(c.bins[srv], c.serverArgs(srv), env, c.cfg.ServerProcs, cpus, serverStartTimeout)
}

// loadArgs is the generator's command line for scenario s at rate (0: closed).
func (c *comparison) loadArgs(addr string, pid int, s Scenario, rate float64, warmup, duration time.Duration) []string {
	args := []string{"load", "-json",
		"-addr", addr, "-codec", c.cfg.Codec.String(),
		"-conns", strconv.Itoa(s.Conns), "-inflight", strconv.Itoa(s.InFlight), "-size", s.Size.String(),
		"-warmup", warmup.String(), "-duration", duration.String(),
		"-server-pid", strconv.Itoa(pid),
	}
	if rate > 0 {
		args = append(args, "-rate", strconv.FormatFloat(rate, 'f', 0, 64))
	}
	return args
}

// runLoadChild runs the generator as its own process, pinned to the client
// CPUs, and parses its JSON result.
func (c *comparison) runLoadChild(ctx context.Context, args []string, window time.Duration) (*bench.LoadResult, error) {
	var cpus []int
	if !c.cfg.NoPin {
		cpus = c.cfg.ClientCPUs
	}
	timeout := window + bench.DefaultConnectTimeout + 30*time.Second
	out, runErr := RunChild(ctx, c.benchBin, args, c.cfg.BenchEnv, c.cfg.ClientProcs, cpus, timeout)
	var res bench.LoadResult
	if len(out) > 0 {
		if err := json.Unmarshal(out, &res); err == nil {
			return &res, runErr
		}
	}
	if runErr == nil {
		runErr = errors.New("sluice: bench: the generator printed no result")
	}
	return nil, runErr
}

// runOne runs scenario s on a fresh srv process.
func (c *comparison) runOne(ctx context.Context, srv string, s Scenario, round int, rate float64) Run {
	run := Run{Round: round, RatePerSec: rate}
	c.status("[%d/%d] round %d/%d  %-10s %-7s", c.runsDone+1, c.runsAll, round, c.cfg.Rounds, s.Name, srv)
	defer func() { c.runsDone++ }()
	p, err := c.startServer(srv)
	if err != nil {
		run.Error = err.Error()
		c.done("[%d/%d] round %d/%d  %-10s %-7s failed: %v", c.runsDone+1, c.runsAll, round, c.cfg.Rounds, s.Name, srv, err)
		return run
	}
	res, err := c.runLoadChild(ctx, c.loadArgs(p.Addr, p.Pid, s, rate, c.cfg.Warmup, c.cfg.Duration), c.cfg.Warmup+c.cfg.Duration)
	run.Note = p.stop(serverStopTimeout)
	run.Result = res
	if err != nil {
		run.Error = err.Error()
	}
	line := "failed: " + run.Error
	if res != nil {
		line = resultLine(res)
		if run.Error != "" {
			line += " (error: " + run.Error + ")"
		}
	}
	c.done("[%d/%d] round %d/%d  %-10s %-7s %s", c.runsDone+1, c.runsAll, round, c.cfg.Rounds, s.Name, srv, line)
	return run
}

// resultLine is a one-line summary of a run for the progress output.
func resultLine(r *bench.LoadResult) string {
	s := fmt.Sprintf("%s msg/s  p99 %s", human.Rate(r.MsgsPerSec), human.Micros(r.Latency.P99Micros))
	if r.Server != nil {
		s += fmt.Sprintf("  server %.0f%% %.2fµs/msg", 100*r.Server.Util, r.Server.CPUMicrosPerMsg)
	}
	if r.Client != nil {
		s += fmt.Sprintf("  client %.0f%%", 100*r.Client.Util)
	}
	if r.Mode == "open" {
		s += fmt.Sprintf("  late %d missed %d", r.Late, r.Missed)
	}
	if n := len(r.Errors); n > 0 {
		s += fmt.Sprintf("  errors %v", r.Errors)
	}
	return s
}

// openRates returns the rate function of the open-loop scenarios, from the
// medians of their reference scenarios, and records the choice in the report.
func (c *comparison) openRates(open []Scenario, cells map[string]*Cell) func(Scenario, string) (float64, error) {
	peaks := map[string]map[string]float64{} // ref -> server -> median msgs/s
	for _, s := range open {
		if peaks[s.Ref] != nil {
			continue
		}
		peaks[s.Ref] = map[string]float64{}
		for _, srv := range c.servers {
			cell := cells[s.Ref+"\x00"+srv]
			if cell == nil {
				continue
			}
			if sum := summarize(cell.Runs, nil, 1, 1); sum != nil && sum.MsgsPerSec.Median > 0 {
				peaks[s.Ref][srv] = sum.MsgsPerSec.Median
			}
		}
	}
	if len(open) > 0 {
		c.rep.OpenRate = map[string]any{"ref": c.cfg.OpenRef, "peaks": peaks}
	}
	return func(s Scenario, srv string) (float64, error) {
		p := peaks[s.Ref]
		if c.cfg.OpenRef == OpenRefEach {
			if p[srv] <= 0 {
				return 0, fmt.Errorf("%w: %s has no result in %s", ErrNoPeak, srv, s.Ref)
			}
			return math.Round(s.LoadFraction * p[srv]), nil
		}
		lowest := math.Inf(1)
		for _, v := range p {
			lowest = math.Min(lowest, v)
		}
		if math.IsInf(lowest, 1) {
			return 0, fmt.Errorf("%w: no server has a result in %s", ErrNoPeak, s.Ref)
		}
		return math.Round(s.LoadFraction * lowest), nil
	}
}

// unavailableText lists why every server is unavailable.
func (c *comparison) unavailableText() string {
	var parts []string
	for _, st := range c.rep.Servers {
		if !st.Available {
			parts = append(parts, st.Name+": "+st.Reason)
		}
	}
	return strings.Join(parts, "; ")
}

// status shows what is running now (on a live line when there is one).
func (c *comparison) status(format string, args ...any) {
	if c.cfg.Progress == nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if c.live != nil {
		c.live.set(msg)
	}
}

// done prints a finished step as a permanent line.
func (c *comparison) done(format string, args ...any) {
	if c.cfg.Progress == nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if c.live != nil {
		c.live.println(msg)
		return
	}
	fmt.Fprintln(c.cfg.Progress, msg)
}

// checkCPUs verifies that the pinning CPUs exist for this process and do not
// overlap.
func checkCPUs(cfg *CompareConfig) error {
	if cfg.NoPin {
		return nil
	}
	avail, err := procstat.AvailableCPUs()
	if err != nil {
		return err
	}
	if !subset(cfg.ServerCPUs, avail) || !subset(cfg.ClientCPUs, avail) {
		return fmt.Errorf("%w: server CPUs %v and client CPUs %v must be among the available CPUs %v (or use -no-pin)",
			bench.ErrInvalidConfig, cfg.ServerCPUs, cfg.ClientCPUs, avail)
	}
	for _, a := range cfg.ServerCPUs {
		for _, b := range cfg.ClientCPUs {
			if a == b {
				return fmt.Errorf("%w: server and client share CPU %d", bench.ErrInvalidConfig, a)
			}
		}
	}
	return nil
}

// raiseFileLimit raises the soft RLIMIT_NOFILE to the hard limit, for this
// process and, through inheritance, the servers and the generator. It uses
// package syscall so that os/exec does not restore the old limit in children.
func raiseFileLimit() {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil && lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
}

// liveLine is a status line rewritten in place once a second with the time
// the current step has been running, for terminals.
type liveLine struct {
	mu    sync.Mutex
	out   interface{ Write([]byte) (int, error) }
	msg   string
	since time.Time
	quit  chan struct{}
	wg    sync.WaitGroup
}

func startLiveLine(out interface{ Write([]byte) (int, error) }) *liveLine {
	l := &liveLine{out: out, quit: make(chan struct{}), since: time.Now()}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-l.quit:
				return
			case <-t.C:
				l.mu.Lock()
				l.draw()
				l.mu.Unlock()
			}
		}
	}()
	return l
}

// draw rewrites the line; l.mu is held.
func (l *liveLine) draw() {
	if l.msg != "" {
		fmt.Fprintf(l.out, "\r\033[K%s  %.0fs", l.msg, time.Since(l.since).Seconds())
	}
}

func (l *liveLine) set(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msg, l.since = msg, time.Now()
	l.draw()
}

func (l *liveLine) println(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.out, "\r\033[K%s\n", msg)
	l.msg = ""
}

func (l *liveLine) stop() {
	close(l.quit)
	l.wg.Wait()
	fmt.Fprint(l.out, "\r\033[K")
}
