package lab

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/sluicenet/sluice/bench"
)

// Server names known to the comparison runner.
const (
	ServerSluice = "sluice" // cmd/echo
	// ServerSluiceURing is cmd/echo -backend io_uring (epoll, and a note in
	// its log, where the kernel lacks io_uring).
	ServerSluiceURing = "sluice-uring"
	ServerGnet        = "gnet"    // lab/peers gnet v2 echo
	ServerNet         = "net"     // lab/peers goroutine-per-connection echo
	ServerTrivial     = "trivial" // lab/peers raw epoll echo, for the generator's ceiling
	ServerCEpoll      = "c-epoll" // peers/epoll_echo.c: the C epoll floor
	ServerCUring      = "c-uring" // peers/uring_echo.c: the C io_uring floor (needs liburing)
)

// knownServers lists every server a comparison can run, in the order the
// usage text gives them.
var knownServers = []string{ServerSluice, ServerSluiceURing, ServerGnet, ServerNet, ServerTrivial, ServerCEpoll, ServerCUring}

// DefaultServers is the default comparison: sluice, gnet and the standard
// library, in this order within every round.
var DefaultServers = []string{ServerSluice, ServerGnet, ServerNet}

// OpenRef values: how an open-loop scenario's rate is derived from the peak.
const (
	// OpenRefLowest offers every server the same rate: the fraction of the
	// lowest median peak among the available servers, a rate every server has
	// shown it can carry, so p99s compare at equal offered load and no server
	// is measured past its knee.
	OpenRefLowest = "lowest"
	// OpenRefEach offers each server the fraction of its own median peak:
	// latency at equal utilisation, different rates.
	OpenRefEach = "each"
)

// CompareConfig describes a comparison. Zero optional fields take the
// defaults the comments name.
type CompareConfig struct {
	// ModuleDir is the lab module's root, where ./cmd/bench is built when
	// BenchBin is empty ("" = the module containing the current directory).
	ModuleDir string `json:"-"`
	// SluiceDir is the sluice module's root, where ./cmd/echo is built (""
	// = SluiceDir of the current directory: the checkout above lab/).
	SluiceDir string `json:"-"`
	// GoCmd is the go command ("" = "go").
	GoCmd string `json:"-"`
	// BenchBin is a binary whose "load" and "peer" commands are those of
	// cmd/bench (package lab/cli), run as the generator and the peers; ""
	// builds ./cmd/bench. BenchEnv is added to the environment of its
	// processes.
	BenchBin string   `json:"-"`
	BenchEnv []string `json:"-"`
	// PeersDir holds the C floor servers' sources, epoll_echo.c and
	// uring_echo.c ("" = the lab's own, lab/peers/c); CC is the C
	// compiler ("" = "cc"). They are built into a temporary directory when
	// ServerCEpoll or ServerCUring is asked for.
	PeersDir string `json:"-"`
	CC       string `json:"-"`
	// Servers, in the order they alternate within a round (nil =
	// DefaultServers).
	Servers []string `json:"servers"`
	// Scenarios to run (nil = DefaultScenarios). Open-loop scenarios need
	// their reference scenario; it is added when missing.
	Scenarios []Scenario `json:"scenarios"`
	// Codec of every scenario (zero value: CodecRaw; cmd/bench defaults to
	// length so that responses are matched to requests).
	Codec bench.Codec `json:"codec"`
	// Rounds is how many times each server runs each scenario (0 = 3).
	Rounds int `json:"rounds"`
	// Warmup and Duration of every run (0 = DefaultWarmup, DefaultDuration).
	Warmup   time.Duration `json:"warmup_ns"`
	Duration time.Duration `json:"duration_ns"`
	// ServerCPUs and ClientCPUs pin the server and the generator (nil = CPU 0
	// and CPU 1); NoPin runs both unpinned.
	ServerCPUs []int `json:"server_cpus"`
	ClientCPUs []int `json:"client_cpus"`
	NoPin      bool  `json:"no_pin"`
	// ServerProcs and ClientProcs are GOMAXPROCS of each (0 = the number of
	// CPUs each is pinned to). Servers get -loops ServerProcs.
	ServerProcs int `json:"server_procs"`
	ClientProcs int `json:"client_procs"`
	// OpenRef is OpenRefLowest (default) or OpenRefEach.
	OpenRef string `json:"open_ref"`
	// IdleConns is the number of idle connections for the memory measurement
	// (0 = 10,000; negative = skip it).
	IdleConns int `json:"idle_conns"`
	// IdleSettle is how long the server is left to settle before each memory
	// reading (0 = 500 ms).
	IdleSettle time.Duration `json:"idle_settle_ns"`
	// StraceScenario is the closed-loop scenario run under strace -c -f for
	// the system-call mix ("" = 256x16x64; "none" = skip); StraceDuration its
	// length (0 = 2s).
	StraceScenario string        `json:"strace_scenario"`
	StraceDuration time.Duration `json:"strace_duration_ns"`
	// Progress, when non-nil, receives a line per run; Live makes it a
	// once-a-second updating line (a terminal).
	Progress io.Writer `json:"-"`
	Live     bool      `json:"-"`
}

// withDefaults fills the zero fields.
func (c CompareConfig) withDefaults() CompareConfig {
	if c.GoCmd == "" {
		c.GoCmd = "go"
	}
	if len(c.Servers) == 0 {
		c.Servers = append([]string(nil), DefaultServers...)
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = DefaultScenarios()
	}
	if c.Rounds == 0 {
		c.Rounds = 3
	}
	if c.Warmup == 0 {
		c.Warmup = bench.DefaultWarmup
	}
	if c.Duration == 0 {
		c.Duration = bench.DefaultDuration
	}
	if !c.NoPin {
		if len(c.ServerCPUs) == 0 {
			c.ServerCPUs = []int{0}
		}
		if len(c.ClientCPUs) == 0 {
			c.ClientCPUs = []int{1}
		}
	}
	if c.ServerProcs == 0 {
		c.ServerProcs = max(1, len(c.ServerCPUs))
	}
	if c.ClientProcs == 0 {
		c.ClientProcs = max(1, len(c.ClientCPUs))
	}
	if c.OpenRef == "" {
		c.OpenRef = OpenRefLowest
	}
	if c.IdleConns == 0 {
		c.IdleConns = 10000
	}
	if c.IdleSettle == 0 {
		c.IdleSettle = 500 * time.Millisecond
	}
	if c.StraceScenario == "" {
		c.StraceScenario = "256x16x64"
	}
	if c.StraceDuration == 0 {
		c.StraceDuration = 2 * time.Second
	}
	// Open-loop scenarios need their reference: add it first if missing.
	have := map[string]bool{}
	for _, s := range c.Scenarios {
		have[s.Name] = true
	}
	for _, s := range c.Scenarios {
		if s.Open() && !have[s.Ref] {
			ref, err := ParseScenario(s.Ref)
			if err == nil {
				c.Scenarios = append([]Scenario{ref}, c.Scenarios...)
				have[s.Ref] = true
			}
		}
	}
	return c
}

// Validate reports a comparison that cannot run.
func (c *CompareConfig) Validate() error {
	seen := map[string]bool{}
	for _, s := range c.Servers {
		if !slices.Contains(knownServers, s) {
			return fmt.Errorf("%w: unknown server %q (want %s)", bench.ErrInvalidConfig, s, strings.Join(knownServers, ", "))
		}
		if seen[s] {
			return fmt.Errorf("%w: server %q listed twice", bench.ErrInvalidConfig, s)
		}
		seen[s] = true
	}
	switch {
	case c.Rounds < 1:
		return fmt.Errorf("%w: %d rounds", bench.ErrInvalidConfig, c.Rounds)
	case c.Duration <= 0 || c.Warmup < 0:
		return fmt.Errorf("%w: duration %v, warm-up %v", bench.ErrInvalidConfig, c.Duration, c.Warmup)
	case c.OpenRef != OpenRefLowest && c.OpenRef != OpenRefEach:
		return fmt.Errorf("%w: open-ref %q (want %s or %s)", bench.ErrInvalidConfig, c.OpenRef, OpenRefLowest, OpenRefEach)
	case c.ServerProcs < 1 || c.ClientProcs < 1:
		return fmt.Errorf("%w: GOMAXPROCS %d/%d", bench.ErrInvalidConfig, c.ServerProcs, c.ClientProcs)
	}
	for _, s := range c.Scenarios {
		if err := s.Size.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// ParseServers parses a comma-separated server list ("" = DefaultServers).
func ParseServers(list string) []string {
	if strings.TrimSpace(list) == "" {
		return append([]string(nil), DefaultServers...)
	}
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
