package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/sluicenet/sluice/bench"
	"github.com/sluicenet/sluice/internal/procstat"
	"github.com/sluicenet/sluice/lab"
	"github.com/sluicenet/sluice/lab/peers"
)

// Server names of the external comparison.
const (
	extSluiceHTTP = "sluice"       // cmd/echo -codec http
	extGnetHTTP   = "gnet"         // cmd/bench peer -kind gnet-http
	extNetHTTP    = "nethttp"      // cmd/bench peer -kind nethttp
	extSluiceKV   = "sluice-kv"    // cmd/kv (RESP)
	extRedis      = "redis-server" // redis-server, no persistence
)

// Parts of the external comparison.
const (
	partRedis = "redis"
	partWrk   = "wrk"
)

// extConfig is the external comparison's configuration (the flags).
type extConfig struct {
	Parts        []string      `json:"parts"`
	HTTPServers  []string      `json:"http_servers"`
	RedisServers []string      `json:"redis_servers"`
	Rounds       int           `json:"rounds"`
	Warmup       time.Duration `json:"warmup_ns"`
	Duration     time.Duration `json:"duration_ns"`
	Requests     int           `json:"requests"`
	Conns        int           `json:"wrk_conns"`
	Pipeline     int           `json:"wrk_pipeline"`
	RedisClients int           `json:"redis_clients"`
	RedisDepth   int           `json:"redis_pipeline"`
	RedisTests   string        `json:"redis_tests"`
	ServerCPUs   []int         `json:"server_cpus"`
	ClientCPUs   []int         `json:"client_cpus"`
	NoPin        bool          `json:"no_pin"`

	BenchBin  string    `json:"-"` // runs "peer" (cmd/bench or a test binary)
	BenchEnv  []string  `json:"-"`
	SluiceDir string    `json:"-"` // where ./cmd/kv and ./cmd/echo are built ("": lab.SluiceDir)
	GoCmd     string    `json:"-"`
	Progress  io.Writer `json:"-"`
}

// runExternal runs redis-benchmark and wrk against sluice and its peers.
func runExternal(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench external", flag.ExitOnError)
	parts := fs.String("parts", "redis,wrk", "what to run: redis (redis-benchmark: redis-server vs sluice kv), wrk (sluice HTTP vs gnet vs net/http)")
	httpServers := fs.String("http-servers", "sluice,gnet,nethttp", "HTTP servers, in the order they alternate")
	redisServers := fs.String("redis-servers", "redis-server,sluice-kv", "RESP servers, in the order they alternate")
	rounds := fs.Int("rounds", 3, "rounds (each server runs each test once per round)")
	warmup := fs.Duration("warmup", time.Second, "wrk warm-up before each measured run (redis-benchmark: a tenth of -requests); 0: none")
	duration := fs.Duration("duration", 10*time.Second, "measured length of every wrk run")
	requests := fs.Int("requests", 2_000_000, "redis-benchmark -n: requests per test")
	conns := fs.Int("conns", 64, "wrk connections")
	pipeline := fs.Int("pipeline", 16, "wrk requests per write in the pipelined runs")
	redisClients := fs.Int("redis-clients", 50, "redis-benchmark -c")
	redisDepth := fs.Int("redis-pipeline", 16, "redis-benchmark -P")
	redisTests := fs.String("redis-tests", "ping,set,get", "redis-benchmark -t")
	serverCPUs := fs.String("server-cpus", "0", "CPUs the servers are pinned to")
	clientCPUs := fs.String("client-cpus", "1", "CPUs wrk and redis-benchmark are pinned to")
	noPin := fs.Bool("no-pin", false, "do not pin (numbers are then much noisier)")
	out := fs.String("out", "../docs/bench", "directory for external.json and external.md")
	doc := fs.String("doc", "../docs/BENCHMARKS.md", "markdown file whose external section is replaced (appended when missing; empty: none)")
	jsonOut := fs.Bool("json", false, "print the report as JSON on stdout and no progress")
	from := fs.String("from", "", "re-render external.md and the doc section from this saved external.json instead of running")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: bench external [flags]\n\nA quick run: bench external -rounds 1 -warmup 0 -duration 1s -requests 50000 -out /tmp/ext -doc ''\n\n")
		fs.PrintDefaults()
	}
	_ = fs.Parse(args)
	if *from != "" {
		return renderExternal(*from, *out, *doc)
	}
	cfg := extConfig{
		Parts: splitList(*parts), HTTPServers: splitList(*httpServers), RedisServers: splitList(*redisServers),
		Rounds: *rounds, Warmup: *warmup, Duration: *duration, Requests: *requests,
		Conns: *conns, Pipeline: *pipeline, RedisClients: *redisClients, RedisDepth: *redisDepth, RedisTests: *redisTests,
		NoPin: *noPin, GoCmd: "go",
	}
	var err error
	if !cfg.NoPin {
		if cfg.ServerCPUs, cfg.ClientCPUs, err = parsePinning(*serverCPUs, *clientCPUs); err != nil {
			return err
		}
	}
	if exe, err := os.Executable(); err == nil {
		cfg.BenchBin = exe
	}
	if !*jsonOut {
		cfg.Progress = os.Stderr
	}
	rep, runErr := runExternalComparison(ctx, cfg)
	if rep == nil {
		return runErr
	}
	written, werr := writeExternal(rep, *out, *doc)
	if *jsonOut {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		fmt.Print(rep.markdown())
		for _, p := range written {
			fmt.Fprintln(os.Stderr, "wrote", p)
		}
	}
	return errors.Join(runErr, werr)
}

// renderExternal re-renders a saved report.
func renderExternal(from, out, doc string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	var rep extReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("sluice: bench external: %s: %w", from, err)
	}
	written, err := writeExternal(&rep, out, doc)
	for _, p := range written {
		fmt.Fprintln(os.Stderr, "wrote", p)
	}
	return err
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// validate reports a configuration that cannot run.
func (c *extConfig) validate() error {
	known := map[string]bool{extSluiceHTTP: true, extGnetHTTP: true, extNetHTTP: true}
	for _, s := range c.HTTPServers {
		if !known[s] {
			return fmt.Errorf("%w: unknown HTTP server %q (want sluice, gnet, nethttp)", bench.ErrInvalidConfig, s)
		}
	}
	for _, s := range c.RedisServers {
		if s != extSluiceKV && s != extRedis {
			return fmt.Errorf("%w: unknown RESP server %q (want redis-server, sluice-kv)", bench.ErrInvalidConfig, s)
		}
	}
	for _, p := range c.Parts {
		if p != partRedis && p != partWrk {
			return fmt.Errorf("%w: unknown part %q (want redis, wrk)", bench.ErrInvalidConfig, p)
		}
	}
	switch {
	case c.Rounds < 1:
		return fmt.Errorf("%w: %d rounds", bench.ErrInvalidConfig, c.Rounds)
	case c.Duration < time.Second:
		return fmt.Errorf("%w: -duration %v: wrk needs at least 1s", bench.ErrInvalidConfig, c.Duration)
	case c.Warmup != 0 && c.Warmup < time.Second:
		return fmt.Errorf("%w: -warmup %v: 0 or at least 1s (wrk's resolution)", bench.ErrInvalidConfig, c.Warmup)
	case c.Requests < 1 || c.Conns < 1 || c.Pipeline < 1 || c.RedisClients < 1 || c.RedisDepth < 1:
		return fmt.Errorf("%w: requests, conns, pipeline, redis-clients and redis-pipeline must be positive", bench.ErrInvalidConfig)
	}
	if !c.NoPin {
		for _, a := range c.ServerCPUs {
			for _, b := range c.ClientCPUs {
				if a == b {
					return fmt.Errorf("%w: server and client share CPU %d", bench.ErrInvalidConfig, a)
				}
			}
		}
	}
	return nil
}

func (c *extConfig) has(part string) bool {
	for _, p := range c.Parts {
		if p == part {
			return true
		}
	}
	return false
}

// serverProcs is GOMAXPROCS and -loops of the Go servers, and wrkThreads
// the wrk threads: one per pinned CPU.
func (c *extConfig) serverProcs() int {
	if c.NoPin {
		return runtime.NumCPU()
	}
	return len(c.ServerCPUs)
}

func (c *extConfig) clientThreads() int {
	if c.NoPin {
		return 1
	}
	return len(c.ClientCPUs)
}

func (c *extConfig) serverPin() []int {
	if c.NoPin {
		return nil
	}
	return c.ServerCPUs
}

func (c *extConfig) clientPin() []int {
	if c.NoPin {
		return nil
	}
	return c.ClientCPUs
}

// extRunner is the state of one external comparison.
type extRunner struct {
	cfg     extConfig
	rep     *extReport
	tmp     string
	bins    map[string]string // server -> binary
	wrk     string
	rbench  string
	rserver string
	script  string // the pipelining Lua script
	done    int
	total   int
}

// runExternalComparison runs every part, alternating servers within each
// round, and returns the report. A server or tool that is missing is
// reported in the notes and its runs are skipped; the error is for a
// comparison that could not run at all or was interrupted.
func runExternalComparison(ctx context.Context, cfg extConfig) (*extReport, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &extRunner{cfg: cfg, bins: map[string]string{}}
	r.rep = &extReport{Started: time.Now(), Machine: lab.ReadMachine(), Config: cfg, Tools: map[string]string{}}
	tmp, err := os.MkdirTemp("", "sluice-external-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	r.tmp = tmp
	if err := r.prepare(ctx); err != nil {
		return nil, err
	}
	var groups []*extGroup
	var redisGroups map[string]*extGroup
	var wrkPlain, wrkPipe *extGroup
	if r.redisReady() {
		redisGroups = map[string]*extGroup{}
		for _, t := range redisTestNames(cfg.RedisTests) {
			g := newGroup("redis-benchmark", t, r.redisCommand(), cfg.RedisServers)
			redisGroups[t] = g
			groups = append(groups, g)
		}
		r.total += cfg.Rounds * len(cfg.RedisServers)
	}
	if r.wrkReady() {
		wrkPlain = newGroup("wrk", "plaintext", r.wrkCommand(false), cfg.HTTPServers)
		wrkPipe = newGroup("wrk", "plaintext, pipelined "+strconv.Itoa(cfg.Pipeline), r.wrkCommand(true), cfg.HTTPServers)
		groups = append(groups, wrkPlain, wrkPipe)
		r.total += 2 * cfg.Rounds * len(cfg.HTTPServers)
	}
	for round := 1; round <= cfg.Rounds && ctx.Err() == nil; round++ {
		if redisGroups != nil {
			for _, srv := range cfg.RedisServers {
				if ctx.Err() != nil {
					break
				}
				r.runRedis(ctx, srv, round, redisGroups)
			}
		}
		if wrkPlain != nil {
			for _, g := range []*extGroup{wrkPlain, wrkPipe} {
				for _, srv := range cfg.HTTPServers {
					if ctx.Err() != nil {
						break
					}
					g.cell(srv).Runs = append(g.cell(srv).Runs, r.runWrk(ctx, srv, round, g == wrkPipe))
				}
			}
		}
	}
	for _, g := range groups {
		g.summarize()
		r.rep.Groups = append(r.rep.Groups, *g)
	}
	r.rep.Machine.LoadAvgEnd = lab.ReadLoadAvg()
	r.rep.Finished = time.Now()
	if ctx.Err() != nil {
		return r.rep, ctx.Err()
	}
	if len(groups) == 0 {
		return r.rep, fmt.Errorf("sluice: bench external: nothing could run: %s", strings.Join(r.rep.Notes, "; "))
	}
	return r.rep, nil
}

// prepare finds the tools, builds the sluice servers and writes the Lua
// script; what is missing becomes a note.
func (r *extRunner) prepare(ctx context.Context) error {
	cfg := &r.cfg
	look := func(name string) string {
		p, err := exec.LookPath(name)
		if err != nil {
			r.note("%s not installed (make bench-external installs it with apt-get)", name)
			return ""
		}
		return p
	}
	needBuild := false
	if cfg.has(partRedis) {
		if r.rbench = look("redis-benchmark"); r.rbench != "" {
			r.rep.Tools["redis-benchmark"] = toolVersion(r.rbench, "--version")
		}
		for _, s := range cfg.RedisServers {
			switch s {
			case extRedis:
				if r.rserver = look("redis-server"); r.rserver != "" {
					r.rep.Tools["redis-server"] = toolVersion(r.rserver, "--version")
					r.bins[extRedis] = r.rserver
				}
			case extSluiceKV:
				needBuild = true
			}
		}
	}
	if cfg.has(partWrk) {
		if r.wrk = look("wrk"); r.wrk != "" {
			r.rep.Tools["wrk"] = toolVersion(r.wrk, "-v")
			r.script = filepath.Join(r.tmp, "pipeline.lua")
			if err := os.WriteFile(r.script, []byte(wrkPipelineScript), 0o644); err != nil {
				return err
			}
		}
		for _, s := range cfg.HTTPServers {
			switch s {
			case extSluiceHTTP:
				needBuild = true
			default:
				if cfg.BenchBin == "" {
					r.note("%s unavailable: no cmd/bench binary to run the peer", s)
				} else {
					r.bins[s] = cfg.BenchBin
				}
			}
		}
	}
	if !needBuild {
		return nil
	}
	if cfg.SluiceDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		if cfg.SluiceDir, err = lab.SluiceDir(ctx, cfg.GoCmd, wd); err != nil {
			return err
		}
	}
	build := func(name, pkg string) {
		bin := filepath.Join(r.tmp, filepath.Base(pkg))
		r.progress("building %s", pkg)
		if err := goBuildTo(ctx, cfg.GoCmd, cfg.SluiceDir, pkg, bin); err != nil {
			r.note("%s unavailable: %v", name, err)
			return
		}
		r.bins[name] = bin
	}
	if cfg.has(partRedis) && contains(cfg.RedisServers, extSluiceKV) {
		build(extSluiceKV, "./cmd/kv")
	}
	if cfg.has(partWrk) && contains(cfg.HTTPServers, extSluiceHTTP) {
		build(extSluiceHTTP, "./cmd/echo")
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (r *extRunner) redisReady() bool { return r.cfg.has(partRedis) && r.rbench != "" }
func (r *extRunner) wrkReady() bool   { return r.cfg.has(partWrk) && r.wrk != "" }

// redisTestNames are the CSV test names redis-benchmark reports for -t.
func redisTestNames(tests string) []string {
	var names []string
	for _, t := range splitList(strings.ToLower(tests)) {
		switch t {
		case "ping":
			names = append(names, "PING_INLINE", "PING_MBULK")
		default:
			names = append(names, strings.ToUpper(t))
		}
	}
	return names
}

// redisArgs is redis-benchmark's command line against addr with n requests.
func (r *extRunner) redisArgs(addr string, n int) []string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = addr, ""
	}
	return []string{"-h", host, "-p", port, "-t", r.cfg.RedisTests, "-P", strconv.Itoa(r.cfg.RedisDepth),
		"-c", strconv.Itoa(r.cfg.RedisClients), "-n", strconv.Itoa(n), "-q", "--csv"}
}

func (r *extRunner) redisCommand() string {
	return "redis-benchmark " + strings.Join(r.redisArgs("HOST:PORT", r.cfg.Requests), " ")
}

// wrkArgs is wrk's command line against addr for d.
func (r *extRunner) wrkArgs(addr string, pipelined bool, d time.Duration) []string {
	threads := r.cfg.clientThreads()
	args := []string{"-t", strconv.Itoa(threads), "-c", strconv.Itoa(max(r.cfg.Conns, threads)),
		"-d", strconv.Itoa(int(d.Round(time.Second)/time.Second)) + "s", "--latency"}
	if pipelined {
		args = append(args, "-s", r.scriptPath(), "http://"+addr+"/", "--", strconv.Itoa(r.cfg.Pipeline))
	} else {
		args = append(args, "http://"+addr+"/")
	}
	return args
}

func (r *extRunner) scriptPath() string {
	if r.script == "" {
		return "pipeline.lua"
	}
	return r.script
}

func (r *extRunner) wrkCommand(pipelined bool) string {
	args := r.wrkArgs("HOST:PORT", pipelined, r.cfg.Duration)
	for i, a := range args {
		if a == r.script && r.script != "" {
			args[i] = "pipeline.lua"
		}
	}
	return "wrk " + strings.Join(args, " ")
}

// startServer starts a fresh server process for one run.
func (r *extRunner) startServer(srv string) (*extProc, error) {
	bin, ok := r.bins[srv]
	if !ok {
		return nil, fmt.Errorf("%s unavailable", srv)
	}
	procs := r.cfg.serverProcs()
	loops := strconv.Itoa(procs)
	switch srv {
	case extRedis:
		addr, err := freeLoopbackAddr()
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp(r.tmp, "redis-")
		if err != nil {
			return nil, err
		}
		return startRedisServer(bin, addr, dir, r.cfg.serverPin())
	case extSluiceKV:
		return startListening(bin, []string{"-addr", "127.0.0.1:0", "-loops", loops}, nil, procs, r.cfg.serverPin())
	case extSluiceHTTP:
		return startListening(bin, []string{"-addr", "127.0.0.1:0", "-codec", "http", "-loops", loops}, nil, procs, r.cfg.serverPin())
	case extGnetHTTP:
		return startListening(bin, []string{"peer", "-kind", string(peers.KindGnetHTTP), "-addr", "127.0.0.1:0", "-loops", loops}, r.cfg.BenchEnv, procs, r.cfg.serverPin())
	case extNetHTTP:
		return startListening(bin, []string{"peer", "-kind", string(peers.KindNetHTTP), "-addr", "127.0.0.1:0"}, r.cfg.BenchEnv, procs, r.cfg.serverPin())
	}
	return nil, fmt.Errorf("%w: unknown server %q", bench.ErrInvalidConfig, srv)
}

// measure brackets fn with /proc readings of both cores and the server.
func (r *extRunner) measure(pid int, fn func() (requests int64, err error)) (run extRun) {
	t0, _ := procstat.ReadCoreTicks()
	p0, perr := procstat.ReadProcCounters(pid)
	requests, err := fn()
	t1, _ := procstat.ReadCoreTicks()
	p1, perr1 := procstat.ReadProcCounters(pid)
	run.ServerUtil, run.ClientUtil = -1, -1
	if !r.cfg.NoPin && t0 != nil && t1 != nil {
		run.ServerUtil = coreUtil(t0, t1, r.cfg.ServerCPUs)
		run.ClientUtil = coreUtil(t0, t1, r.cfg.ClientCPUs)
	}
	if perr == nil && perr1 == nil && requests > 0 {
		run.ServerMicrosPerReq = float64(p1.CPUTicks-p0.CPUTicks) * 1e4 / float64(requests) // ticks are 10 ms
	}
	if err != nil {
		run.Error = err.Error()
	}
	return run
}

// runRedis runs redis-benchmark once against a fresh srv and files each
// test's result in its group.
func (r *extRunner) runRedis(ctx context.Context, srv string, round int, groups map[string]*extGroup) {
	r.progress("[%d/%d] round %d/%d  redis-benchmark  %s", r.done+1, r.total, round, r.cfg.Rounds, srv)
	defer func() { r.done++ }()
	record := func(run extRun, tests []redisTest) {
		byName := map[string]redisTest{}
		for _, t := range tests {
			byName[t.Test] = t
		}
		for name, g := range groups {
			one := run
			one.Round = round
			if t, ok := byName[name]; ok {
				one.RequestsSec, one.AvgMicros, one.P50Micros, one.P99Micros = t.RequestsSec, t.AvgMillis*1e3, t.P50Millis*1e3, t.P99Millis*1e3
			} else if one.Error == "" {
				one.Error = "no result for " + name
			}
			g.cell(srv).Runs = append(g.cell(srv).Runs, one)
		}
	}
	p, err := r.startServer(srv)
	if err != nil {
		r.note("%s round %d: %v", srv, round, err)
		record(extRun{Error: err.Error()}, nil)
		return
	}
	timeout := 5*time.Minute + time.Duration(r.cfg.Requests)*time.Microsecond*10
	if r.cfg.Warmup > 0 {
		_, _ = runTool(ctx, r.rbench, r.redisArgs(p.Addr, max(1, r.cfg.Requests/10)), r.cfg.clientPin(), timeout)
	}
	var tests []redisTest
	run := r.measure(p.Pid, func() (int64, error) {
		out, err := runTool(ctx, r.rbench, r.redisArgs(p.Addr, r.cfg.Requests), r.cfg.clientPin(), timeout)
		if err != nil {
			return 0, err
		}
		tests, err = parseRedisCSV(out)
		return int64(len(tests)) * int64(r.cfg.Requests), err
	})
	run.Note = p.stop()
	record(run, tests)
	line := run.Error
	if line == "" {
		var parts []string
		for _, t := range tests {
			parts = append(parts, fmt.Sprintf("%s %s", t.Test, humanRPS(t.RequestsSec)))
		}
		line = strings.Join(parts, "  ") + "  " + run.utilText()
	}
	r.progress("[%d/%d] round %d/%d  redis-benchmark  %-12s %s", r.done+1, r.total, round, r.cfg.Rounds, srv, line)
}

// runWrk runs wrk once against a fresh srv: a warm-up, then the measured
// run.
func (r *extRunner) runWrk(ctx context.Context, srv string, round int, pipelined bool) extRun {
	mode := "plaintext"
	if pipelined {
		mode = "pipelined"
	}
	defer func() { r.done++ }()
	p, err := r.startServer(srv)
	if err != nil {
		r.note("%s round %d: %v", srv, round, err)
		return extRun{Round: round, Error: err.Error(), ServerUtil: -1, ClientUtil: -1}
	}
	timeout := r.cfg.Duration + r.cfg.Warmup + time.Minute
	if r.cfg.Warmup > 0 {
		_, _ = runTool(ctx, r.wrk, r.wrkArgs(p.Addr, pipelined, r.cfg.Warmup), r.cfg.clientPin(), timeout)
	}
	var res wrkResult
	run := r.measure(p.Pid, func() (int64, error) {
		out, err := runTool(ctx, r.wrk, r.wrkArgs(p.Addr, pipelined, r.cfg.Duration), r.cfg.clientPin(), timeout)
		if err != nil {
			return 0, err
		}
		res, err = parseWrk(out)
		return res.Requests, err
	})
	run.Round = round
	run.RequestsSec, run.AvgMicros, run.P50Micros, run.P99Micros = res.RequestsSec, res.AvgMicros, res.P50Micros, res.P99Micros
	run.Errors = res.SocketErrors + res.Non2xx
	run.Note = p.stop()
	line := run.Error
	if line == "" {
		line = fmt.Sprintf("%s req/s  mean %s  p99 %s  %s", humanRPS(run.RequestsSec), humanMicros(run.AvgMicros), humanMicros(run.P99Micros), run.utilText())
		if run.Errors > 0 {
			line += fmt.Sprintf("  errors %d", run.Errors)
		}
	}
	r.progress("[%d/%d] round %d/%d  wrk %-9s  %-8s %s", r.done+1, r.total, round, r.cfg.Rounds, mode, srv, line)
	return run
}

func (r *extRunner) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.rep.Notes = append(r.rep.Notes, msg)
	r.progress("note: %s", msg)
}

func (r *extRunner) progress(format string, args ...any) {
	if r.cfg.Progress != nil {
		fmt.Fprintf(r.cfg.Progress, format+"\n", args...)
	}
}
