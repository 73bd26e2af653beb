package cli

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicenet/sluice/bench"
	"github.com/sluicenet/sluice/internal/procstat"
)

// cliChildEnv makes this test binary act as cmd/bench ("peer") when the
// external runner starts it.
const cliChildEnv = "SLUICE_BENCH_CLI_CHILD=1"

func TestMain(m *testing.M) {
	if os.Getenv("SLUICE_BENCH_CLI_CHILD") == "1" {
		os.Exit(Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

const wrkOutput = `Running 10s test @ http://127.0.0.1:8080/
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   365.38us    1.42ms  23.15ms   98.26%
    Req/Sec    48.30k     5.66k   53.94k    80.00%
  Latency Distribution
     50%  226.00us
     75%  278.00us
     90%  352.00us
     99%    2.01ms
  96519 requests in 2.02s, 12.06MB read
  Socket errors: connect 0, read 2, write 0, timeout 5
  Non-2xx or 3xx responses: 3
Requests/sec:  47854.65
Transfer/sec:      5.98MB
`

func TestParseWrk(t *testing.T) {
	r, err := parseWrk(wrkOutput)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []*float64{&r.Seconds, &r.AvgMicros, &r.P50Micros, &r.P99Micros, &r.MaxMicros} {
		*f = math.Round(*f*1e6) / 1e6 // 2.01 ms is not exact in binary
	}
	want := wrkResult{Requests: 96519, Seconds: 2.02, RequestsSec: 47854.65, AvgMicros: 365.38, P50Micros: 226, P99Micros: 2010, MaxMicros: 23150, SocketErrors: 7, Non2xx: 3}
	if r != want {
		t.Errorf("got %+v\nwant %+v", r, want)
	}
	if _, err := parseWrk("unable to connect to 127.0.0.1:1 Connection refused\n"); !errors.Is(err, errNoWrkRate) {
		t.Errorf("no rate: %v", err)
	}
	if _, err := parseWrk("Requests/sec: many\n"); err == nil {
		t.Error("bad rate accepted")
	}
	for in, us := range map[string]float64{"1.5s": 1.5e6, "2m": 120e6, "7us": 7, "0.50ms": 500} {
		if v, ok := parseWrkDuration(in); !ok || v != us {
			t.Errorf("%s: %v %v, want %v", in, v, ok, us)
		}
	}
	if _, ok := parseWrkDuration("12xs"); ok {
		t.Error("bad duration accepted")
	}
}

func TestParseRedisCSV(t *testing.T) {
	out := "PING_INLINE: rps=0.0 (overall: 0.0)\r" +
		`"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"` + "\n" +
		`"PING_INLINE","502512.56","1.031","0.344","0.911","1.543","5.007","6.959"` + "\n" +
		`"GET","502512.56","1.018","0.256","0.903","1.431","3.991","9.623"` + "\n"
	tests, err := parseRedisCSV(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []redisTest{
		{Test: "PING_INLINE", RequestsSec: 502512.56, AvgMillis: 1.031, P50Millis: 0.911, P99Millis: 5.007, MaxMillis: 6.959},
		{Test: "GET", RequestsSec: 502512.56, AvgMillis: 1.018, P50Millis: 0.903, P99Millis: 3.991, MaxMillis: 9.623},
	}
	if len(tests) != len(want) || tests[0] != want[0] || tests[1] != want[1] {
		t.Errorf("got %+v", tests)
	}
	// An older redis-benchmark prints only test and rps.
	tests, err = parseRedisCSV("\"test\",\"rps\"\n\"SET\",\"1000.5\"\n")
	if err != nil || len(tests) != 1 || tests[0].RequestsSec != 1000.5 {
		t.Errorf("two columns: %+v %v", tests, err)
	}
	for _, bad := range []string{"", "Could not connect to Redis at 127.0.0.1:1\n", "\"test\",\"x\"\n\"SET\",\"1\"\n", "\"test\",\"rps\"\n"} {
		if _, err := parseRedisCSV(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if got := redisTestNames("ping,SET,get"); strings.Join(got, ",") != "PING_INLINE,PING_MBULK,SET,GET" {
		t.Errorf("test names %v", got)
	}
}

// TestSummarizeRatios: ratios pair runs by round; failed runs count in
// neither.
func TestSummarizeRatios(t *testing.T) {
	g := newGroup("wrk", "plaintext", "wrk ...", []string{extSluiceHTTP, extGnetHTTP})
	run := func(round int, rps float64, err string) extRun {
		return extRun{Round: round, RequestsSec: rps, Error: err, ServerUtil: 0.9, ClientUtil: 1, ServerMicrosPerReq: 1e6 / rps}
	}
	g.cell(extSluiceHTTP).Runs = []extRun{run(1, 110, ""), run(2, 300, ""), run(3, 90, ""), run(4, 50, "boom")}
	g.cell(extGnetHTTP).Runs = []extRun{run(1, 100, ""), run(2, 200, ""), run(3, 100, ""), run(4, 100, "")}
	g.summarize()
	s := g.cell(extSluiceHTTP).Summary
	if s == nil || s.Runs != 3 || s.RequestsSec != (spread{Median: 110, Min: 90, Max: 300}) {
		t.Fatalf("summary %+v", s)
	}
	if len(g.Ratios) != 1 {
		t.Fatalf("ratios %+v", g.Ratios)
	}
	r := g.Ratios[0]
	if r.Server != extSluiceHTTP || r.Ref != extGnetHTTP || r.Rounds != 3 || r.spread != (spread{Median: 1.1, Min: 0.9, Max: 1.5}) {
		t.Errorf("ratio %+v", r)
	}
	if sp := spreadOf([]float64{4, 1, 3, 2}); sp != (spread{Median: 2.5, Min: 1, Max: 4}) {
		t.Errorf("even median %+v", sp)
	}
}

func TestReplaceSection(t *testing.T) {
	doc := "# Benchmarks\n\n" + extDocBegin + "\n\nold\n\n" + extDocEnd + "\n\ntail\n"
	got := replaceSection(doc, "new table\n")
	if want := "# Benchmarks\n\n" + extDocBegin + "\n\nnew table\n\n" + extDocEnd + "\n\ntail\n"; got != want {
		t.Errorf("replace:\n%q\nwant\n%q", got, want)
	}
	got = replaceSection("# Benchmarks", "table")
	if !strings.HasPrefix(got, "# Benchmarks\n\n## External clients") || !strings.HasSuffix(got, extDocBegin+"\n\ntable\n\n"+extDocEnd+"\n") {
		t.Errorf("append: %q", got)
	}
	if again := replaceSection(got, "table 2"); strings.Count(again, extDocBegin) != 1 || !strings.Contains(again, "table 2") || strings.Contains(again, "\ntable\n") {
		t.Errorf("replace after append: %q", again)
	}
}

func TestExternalConfigErrors(t *testing.T) {
	good := extConfig{Parts: []string{partWrk}, HTTPServers: []string{extSluiceHTTP}, Rounds: 1, Duration: time.Second,
		Requests: 1, Conns: 1, Pipeline: 1, RedisClients: 1, RedisDepth: 1, ServerCPUs: []int{0}, ClientCPUs: []int{1}}
	if err := good.validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*extConfig){
		"server":    func(c *extConfig) { c.HTTPServers = []string{"nginx"} },
		"resp":      func(c *extConfig) { c.RedisServers = []string{"keydb"} },
		"part":      func(c *extConfig) { c.Parts = []string{"ab"} },
		"rounds":    func(c *extConfig) { c.Rounds = 0 },
		"duration":  func(c *extConfig) { c.Duration = 500 * time.Millisecond },
		"warmup":    func(c *extConfig) { c.Warmup = 10 * time.Millisecond },
		"conns":     func(c *extConfig) { c.Conns = 0 },
		"same CPUs": func(c *extConfig) { c.ClientCPUs = []int{0} },
	} {
		c := good
		mut(&c)
		if err := c.validate(); !errors.Is(err, bench.ErrInvalidConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestExternalEndToEnd runs bench external very briefly: redis-benchmark
// against redis-server and sluice kv, wrk plain and pipelined against the
// sluice HTTP echo, gnet and net/http, and checks the report and the files.
// A part whose tools are missing is skipped with a message, except that CI
// (CI=true, which installs redis-server and redis-tools) fails without
// redis; wrk may be missing anywhere.
func TestExternalEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers and external tools for about 20 s")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command to build cmd/echo and cmd/kv")
	}
	var parts []string
	if missing := missingTools("redis-server", "redis-benchmark"); missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI installs redis-server and redis-tools, but %s is missing", missing)
		}
		t.Logf("skipping the redis-benchmark part: %s not installed (make bench-external installs it)", missing)
	} else {
		parts = append(parts, partRedis)
	}
	if missing := missingTools("wrk"); missing != "" {
		t.Logf("skipping the wrk part: wrk not installed (make bench-external installs it)")
	} else {
		parts = append(parts, partWrk)
	}
	if len(parts) == 0 {
		t.Skip("neither redis-benchmark nor wrk is installed")
	}
	cfg := extConfig{
		Parts: parts, HTTPServers: []string{extSluiceHTTP, extGnetHTTP, extNetHTTP}, RedisServers: []string{extRedis, extSluiceKV},
		Rounds: 1, Duration: time.Second, Requests: 20000, Conns: 8, Pipeline: 4, RedisClients: 8, RedisDepth: 4, RedisTests: "ping,set,get",
		BenchBin: os.Args[0], BenchEnv: []string{cliChildEnv}, GoCmd: "go", Progress: testWriter{t},
	}
	if cpus, err := procstat.AvailableCPUs(); err != nil || len(cpus) < 2 {
		cfg.NoPin = true
	} else {
		cfg.ServerCPUs, cfg.ClientCPUs = cpus[:1], cpus[1:2]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := runExternalComparison(ctx, cfg)
	if err != nil {
		t.Fatalf("external: %v", err)
	}
	unavailable := func(srv string) bool {
		for _, n := range rep.Notes {
			if strings.HasPrefix(n, srv+" unavailable: ") {
				return true
			}
		}
		return false
	}
	wantGroups := map[string]bool{}
	if contains(parts, partRedis) {
		for _, n := range redisTestNames(cfg.RedisTests) {
			wantGroups["redis-benchmark "+n] = true
		}
	}
	if contains(parts, partWrk) {
		wantGroups["wrk plaintext"], wantGroups["wrk plaintext, pipelined 4"] = true, true
	}
	for _, g := range rep.Groups {
		key := g.Tool + " " + g.Name
		if !wantGroups[key] {
			t.Errorf("unexpected group %q", key)
		}
		delete(wantGroups, key)
		for _, c := range g.Cells {
			if len(c.Runs) != 1 {
				t.Errorf("%s %s: %d runs, want 1", key, c.Server, len(c.Runs))
				continue
			}
			r := c.Runs[0]
			switch {
			case r.ok():
				if r.AvgMicros <= 0 {
					t.Errorf("%s %s: no mean latency", key, c.Server)
				}
			case (c.Server == extSluiceHTTP || c.Server == extSluiceKV) && unavailable(c.Server):
				t.Logf("%s %s: unavailable (its package does not build now): %s", key, c.Server, r.Error)
			default:
				t.Errorf("%s %s: run failed: %+v", key, c.Server, r)
			}
		}
	}
	for g := range wantGroups {
		t.Errorf("group %q missing", g)
	}
	dir := t.TempDir()
	doc := filepath.Join(dir, "BENCHMARKS.md")
	if err := os.WriteFile(doc, []byte("# Benchmarks\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := writeExternal(rep, dir, doc); err != nil {
		t.Fatal(err)
	}
	var back extReport
	if b, err := os.ReadFile(filepath.Join(dir, externalJSON)); err != nil || json.Unmarshal(b, &back) != nil || len(back.Groups) != len(rep.Groups) {
		t.Errorf("external.json: %v", err)
	}
	b, err := os.ReadFile(doc)
	if err != nil || !strings.Contains(string(b), extDocBegin) || !strings.Contains(string(b), "| test |") {
		t.Errorf("doc section: %v\n%s", err, b)
	}
	// Re-rendering the saved JSON gives the same section.
	doc2 := filepath.Join(dir, "B2.md")
	if err := os.WriteFile(doc2, []byte("# Benchmarks\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := renderExternal(filepath.Join(dir, externalJSON), filepath.Join(dir, "re"), doc2); err != nil {
		t.Fatal(err)
	}
	if b2, err := os.ReadFile(doc2); err != nil || string(b2) != string(b) {
		t.Errorf("re-rendered doc differs: %v\n%s", err, b2)
	}
	t.Logf("\n%s", rep.markdown())
}

func missingTools(names ...string) string {
	var missing []string
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			missing = append(missing, n)
		}
	}
	return strings.Join(missing, " and ")
}

// testWriter sends progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
