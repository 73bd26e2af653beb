package lab

import (
	"fmt"
	"strings"

	"github.com/sluicenet/sluice/internal/human"
)

// The overload parts that run several generators at once against one
// server: priorities (a generator per traffic class) and fairness (a
// generator per tenant).
const (
	PartPriorities = "priorities"
	PartFairness   = "fairness"
)

// The priorities part's classes: cmd/echo's size-based Classify
// (PriorityArgs) makes frames shorter than 32 bytes critical and frames
// longer than 128 bytes best-effort.
var (
	// PriorityArgs are the cmd/echo flags that classify frames by size.
	PriorityArgs = []string{"-critical-below", "32", "-best-effort-above", "128"}
	// PriorityClasses are the priorities part's generators, most urgent
	// first: name, connections and frame bytes.
	PriorityClasses = []MixLoad{
		{Name: "critical", Conns: 8, Size: 16},
		{Name: "normal", Conns: 16, Size: 64},
		{Name: "best-effort", Conns: 16, Size: 256},
	}
)

// MixLoad is one generator of a mixed run: a traffic class or a tenant.
type MixLoad struct {
	Name  string `json:"name"`
	Conns int    `json:"conns"`
	Size  int    `json:"size"`
	// LocalAddr is the generator's source address (its tenant), if any.
	LocalAddr string `json:"local_addr,omitempty"`
	// RatePerSec is the open-loop rate the generator offers.
	RatePerSec float64    `json:"rate_per_sec,omitempty"`
	Result     *LoadBrief `json:"result,omitempty"`
	// ServedRatio is the requests served (echoed) over the sends the
	// generator intended in its window.
	ServedRatio float64 `json:"served_ratio,omitempty"`
	// FairRatio is the generator's goodput over the run's goodput divided
	// by the number of generators: 1 is an equal share of what was served.
	FairRatio float64 `json:"fair_ratio,omitempty"`
	Error     string  `json:"error,omitempty"`
}

// MixRun is one round of a mixed run: the capacity measured in the round
// (sluice-noshed, closed loop, the goodput part's connections) and the
// generators, which ran at once.
type MixRun struct {
	Round    int       `json:"round"`
	Capacity float64   `json:"capacity_msgs_per_sec"`
	Loads    []MixLoad `json:"loads"`
	Error    string    `json:"error,omitempty"`
}

// MixSummary is one generator's medians and ranges over the rounds.
type MixSummary struct {
	Name string `json:"name"`
	// OfferedRatio is its offered rate over the round's capacity.
	OfferedRatio Spread `json:"offered_ratio"`
	ServedRatio  Spread `json:"served_ratio"`
	Served       Spread `json:"served_per_sec"`
	FairRatio    Spread `json:"fair_ratio"`
	P99          Spread `json:"p99_us"`
	Refused      Spread `json:"refused_per_sec"`
	// Unanswered sums, over the rounds, the requests that got no answer,
	// as the matrix counts them: sends the generator could not issue (its
	// connection had its requests in flight, or had failed) and requests
	// lost with a failed connection. Requests still in flight when the
	// window closed are not judged.
	Unanswered int64 `json:"unanswered"`
}

// MixCell is one server setting of a mixed part over the rounds.
type MixCell struct {
	// Server is the overload server; Label says how it was set up.
	Server  string       `json:"server"`
	Label   string       `json:"label"`
	Args    []string     `json:"args,omitempty"`
	Summary []MixSummary `json:"summary"`
	// Goodput is every generator's goodput over the round's capacity.
	Goodput Spread   `json:"goodput_ratio"`
	Runs    []MixRun `json:"runs"`
}

// finish fills each generator's served and fair ratios of one run.
func (r *MixRun) finish() {
	var total float64
	n := 0
	for _, l := range r.Loads {
		if l.Result != nil {
			total += l.Result.MsgsPerSec
			n++
		}
	}
	for i := range r.Loads {
		l := &r.Loads[i]
		if l.Result == nil {
			continue
		}
		if l.Result.Intended > 0 {
			l.ServedRatio = float64(l.Result.Msgs) / float64(l.Result.Intended)
		}
		if total > 0 {
			l.FairRatio = l.Result.MsgsPerSec * float64(n) / total
		}
	}
}

// summarize fills the cell's summaries from its runs, by generator name in
// the order of the first run.
func (c *MixCell) summarize() {
	c.Summary = nil
	if len(c.Runs) == 0 {
		return
	}
	var good []float64
	for _, r := range c.Runs {
		var served float64
		for _, l := range r.Loads {
			if l.Result != nil {
				served += l.Result.MsgsPerSec
			}
		}
		if r.Capacity > 0 {
			good = append(good, served/r.Capacity)
		}
	}
	c.Goodput = spreadOf(good)
	for _, first := range c.Runs[0].Loads {
		var off, served, rate, fair, p99, refused []float64
		var unanswered int64
		for _, r := range c.Runs {
			for _, l := range r.Loads {
				if l.Name != first.Name || l.Result == nil {
					continue
				}
				if r.Capacity > 0 {
					off = append(off, l.RatePerSec/r.Capacity)
				}
				served = append(served, l.ServedRatio)
				rate = append(rate, l.Result.MsgsPerSec)
				fair = append(fair, l.FairRatio)
				p99 = append(p99, l.Result.Latency.P99Micros)
				refused = append(refused, l.Result.RejectedPerSec)
				unanswered += l.Result.Missed + l.Result.Dropped
			}
		}
		c.Summary = append(c.Summary, MixSummary{Name: first.Name, OfferedRatio: spreadOf(off), ServedRatio: spreadOf(served),
			Served: spreadOf(rate), FairRatio: spreadOf(fair), P99: spreadOf(p99), Refused: spreadOf(refused), Unanswered: unanswered})
	}
}

// priorityLoads are the priorities part's generators at this capacity:
// critical at criticalFactor, normal at normalFactor and best-effort at
// the rest of factor (none if nothing is left), each with connsFactor
// times its class's connections.
func priorityLoads(capacity, factor, criticalFactor, normalFactor float64, connsFactor int) []MixLoad {
	loads := append([]MixLoad(nil), PriorityClasses...)
	for i := range loads {
		loads[i].Conns *= connsFactor
	}
	loads[0].RatePerSec = criticalFactor * capacity
	loads[1].RatePerSec = normalFactor * capacity
	loads[2].RatePerSec = max(0, factor-criticalFactor-normalFactor) * capacity
	if loads[2].RatePerSec == 0 {
		loads = loads[:2]
	}
	return loads
}

// fairnessLoads are the fairness part's generators at this capacity: n
// tenants from 127.0.0.2 up with conns connections each, the first
// sending heavy times as much as each other one, factor × capacity in all.
func fairnessLoads(capacity, factor, heavy float64, n, conns int) []MixLoad {
	unit := factor * capacity / (heavy + float64(n-1))
	loads := make([]MixLoad, n)
	for i := range loads {
		loads[i] = MixLoad{Name: fmt.Sprintf("light %d", i), Conns: conns, Size: 64,
			LocalAddr: fmt.Sprintf("127.0.0.%d", 2+i), RatePerSec: unit}
	}
	loads[0].Name, loads[0].RatePerSec = "heavy", heavy*unit
	return loads
}

// mixMarkdown renders the mixed parts' tables.
func (rep *OverloadReport) mixMarkdown(b *strings.Builder) {
	c := rep.Config
	if len(rep.Priorities) > 0 {
		fmt.Fprintf(b, "### Priorities at %.0f× capacity\n\n", c.Factor)
		fmt.Fprintf(b, "Every server spins %v of CPU per frame%s. Three open-loop generators at once, by frame size: critical (%d connections, %d-byte frames) at %.1f× the capacity of the round, normal (%d, %d bytes) at %.1f× and best-effort (%d, %d bytes) at the rest of %.0f×. Capacity: sluice-noshed, closed loop, in the same round. Served is echoed over the sends the generator intended in its window; the p99 is of echoed requests, from their intended send time; unanswered sums over the rounds the sends the generator could not issue and the requests lost with a failed connection.\n\n",
			c.Work, mixModeNote(c.MixMode), c.MixConnsFactor*PriorityClasses[0].Conns, PriorityClasses[0].Size, c.CriticalFactor, c.MixConnsFactor*PriorityClasses[1].Conns, PriorityClasses[1].Size, c.NormalFactor,
			c.MixConnsFactor*PriorityClasses[2].Conns, PriorityClasses[2].Size, c.Factor)
		mixTable(b, rep.Priorities, false)
	}
	if len(rep.Fairness) > 0 {
		fmt.Fprintf(b, "### Fairness between %d tenants at %.0f× capacity\n\n", c.Tenants, c.Factor)
		fmt.Fprintf(b, "Every server spins %v of CPU per frame%s. %d open-loop generators at once, each from its own loopback address (a tenant: the server keys tenants by peer address; no tenant quota is set), %d connections and 64-byte frames each; the heavy tenant sends %.0f× as much as each light one, %.0f× the capacity of the round in all. Share is a tenant's goodput over the run's goodput divided by %d: 1.0 is an equal share, which is the max-min fair share when every tenant asks for more than it. First come, first served would give the heavy tenant a share of about %.1f.\n\n",
			c.Work, mixModeNote(c.MixMode), c.Tenants, c.MixConnsFactor*c.TenantConns, c.HeavyWeight, c.Factor, c.Tenants, c.HeavyWeight*float64(c.Tenants)/(c.HeavyWeight+float64(c.Tenants-1)))
		mixTable(b, rep.Fairness, true)
	}
}

// mixModeNote says where the mixed parts' servers ran the work, when not
// inline.
func mixModeNote(mode string) string {
	if mode == ModePool {
		return " on the worker pool (`-work-mode pool`, its capacity run too)"
	}
	return ""
}

// mixTable writes one row per server setting and generator.
func mixTable(b *strings.Builder, cells []MixCell, fair bool) {
	last := "admitted p99 µs"
	if fair {
		last = "share × tenants"
	}
	fmt.Fprintf(b, "| server | generator | offered ÷ capacity | served ÷ offered | served msg/s | refused/s | %s | unanswered |\n|---|---|--:|--:|--:|--:|--:|--:|\n", last)
	for _, c := range cells {
		for _, s := range c.Summary {
			lastV := spreadText(s.P99, fmt0)
			if fair {
				lastV = spreadText(s.FairRatio, ratio2Text)
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %d |\n", c.Label, s.Name, spreadText(s.OfferedRatio, ratio2Text),
				spreadText(s.ServedRatio, pct1Text), spreadText(s.Served, human.Rate), spreadText(s.Refused, human.Rate), lastV, s.Unanswered)
		}
	}
	b.WriteString("\nGoodput of all the generators together ÷ the round's capacity:")
	for i, c := range cells {
		sep := ";"
		if i == len(cells)-1 {
			sep = "."
		}
		fmt.Fprintf(b, " %s %s%s", c.Label, spreadText(c.Goodput, pctText), sep)
	}
	b.WriteString("\n\n")
}

func pct1Text(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }
