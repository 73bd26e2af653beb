package lab

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sluicenet/sluice/bench"
	"github.com/sluicenet/sluice/internal/human"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Overload report files, written by WriteOverloadReport into its directory.
const (
	OverloadJSON      = "overload.json"
	OverloadMarkdown  = "overload.md"
	OverloadGateChart = "gate.svg"
)

// WriteOverloadReport writes the report as JSON, the markdown tables and,
// when the gate part ran, the gate chart into dir, and returns the paths.
func WriteOverloadReport(rep *OverloadReport, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, err
	}
	p := filepath.Join(dir, OverloadJSON)
	if err := os.WriteFile(p, append(js, '\n'), 0o644); err != nil {
		return nil, err
	}
	paths = append(paths, p)
	p = filepath.Join(dir, OverloadMarkdown)
	if err := os.WriteFile(p, []byte(rep.Markdown()), 0o644); err != nil {
		return nil, err
	}
	paths = append(paths, p)
	if rep.Gate != nil && len(rep.Gate.Samples) > 0 {
		p = filepath.Join(dir, OverloadGateChart)
		f, err := os.Create(p)
		if err != nil {
			return paths, err
		}
		err = rep.WriteGateChart(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// spreadText prints a median with its range, using f for each value.
func spreadText(s Spread, f func(float64) string) string {
	if s.Median == 0 && s.Min == 0 && s.Max == 0 {
		return "–"
	}
	return fmt.Sprintf("%s (%s–%s)", f(s.Median), f(s.Min), f(s.Max))
}

func ratio2Text(v float64) string { return fmt.Sprintf("%.2f", v) }
func pctText(v float64) string    { return fmt.Sprintf("%.0f%%", 100*v) }
func msText(v float64) string     { return fmt.Sprintf("%.1f", v) }

// Markdown renders the report's tables: medians with the range over the
// rounds in parentheses.
func (rep *OverloadReport) Markdown() string {
	var b strings.Builder
	c := rep.Config
	m := rep.Machine
	fmt.Fprintf(&b, "Run %s to %s on %s (%d CPUs, kernel %s, %s); load average %s at the start, %s at the end. Servers pinned to CPUs %v, generator and floods to CPUs %v; %d rounds, servers alternating within each round; medians with the range over the rounds in parentheses.\n\n",
		rep.Started.Format("2006-01-02 15:04"), rep.Finished.Format("15:04"), m.CPUModel, m.CPUs, m.Kernel, m.GoVersion,
		m.LoadAvgStart, m.LoadAvgEnd, c.ServerCPUs, c.ClientCPUs, c.Rounds)
	if len(rep.Goodput) > 0 {
		fmt.Fprintf(&b, "### Goodput and admitted latency at %.0f× capacity\n\n", c.Factor)
		fmt.Fprintf(&b, "Every server spins %v of CPU per frame; %d connections, %d-byte length-prefixed frames. Capacity: closed loop, %d in flight per connection (the sluice-shed servers are measured without shedding). Unloaded: open loop at %.1f× the median capacity. Overload: open loop at %.0f× it; goodput counts echoed requests only (rejects are answered, but are not goodput); p99 is of echoed requests, from their intended send time.\n\n",
			c.Work, c.Conns, c.Size, c.InFlight, c.UnloadedFraction, c.Factor)
		b.WriteString("| server | capacity msg/s | unloaded p99 µs | goodput at overload msg/s | goodput / capacity | overload p99 µs | p99 / unloaded p99 | rejected/s | reject p99 µs |\n")
		b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, g := range rep.Goodput {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", g.Server,
				spreadText(g.Peak, human.Rate), spreadText(g.UnloadedP99, fmt0), spreadText(g.Goodput, human.Rate),
				spreadText(g.GoodputRatio, pctText), spreadText(g.OverloadP99, fmt0), spreadText(g.P99Ratio, ratio2Text),
				spreadText(g.Rejected, human.Rate), spreadText(g.RejectP99, fmt0))
		}
		b.WriteString("\nServer CPU per echoed message, which does not depend on the share of the shared core a server got: efficiency is capacity µs/msg over overload µs/msg, paired by round (1.0: overload costs nothing extra per useful message; rejects are part of the overload cost).\n\n")
		b.WriteString("| server | CPU µs/msg at capacity | CPU µs/msg at overload | efficiency | server CPU use at overload (1 = a core) |\n|---|--:|--:|--:|--:|\n")
		for _, g := range rep.Goodput {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", g.Server, spreadText(g.PeakCPU, fmt0), spreadText(g.OverloadCPU, fmt0),
				spreadText(g.Efficiency, pctText), spreadText(g.ServerUtil, ratio2Text))
		}
		b.WriteString("\n")
	}
	rep.mixMarkdown(&b)
	if len(rep.Memory) > 0 {
		fmt.Fprintf(&b, "### Resident memory under %d peers that send and never read\n\n", c.FloodConns)
		fmt.Fprintf(&b, "Each peer writes %d-byte length-prefixed frames for %v with a 4 KiB receive buffer and never reads. RSS rise: the server's largest resident memory during the flood (sampled every 50 ms) minus its resident memory before it. Kernel TCP: the largest rise of the system's TCP socket memory (/proc/net/sockstat), which holds what the server has written and the peers have not read.\n\n",
			c.FloodSize, c.FloodDuration)
		b.WriteString("| server | global byte budget | peak queued KiB (sluice Stats) | RSS rise KiB | peak RSS KiB | kernel TCP rise KiB | MiB sent by the peers |\n|---|--:|--:|--:|--:|--:|--:|\n")
		for _, mc := range rep.Memory {
			budget := "none"
			if mc.BudgetBytes > 0 {
				budget = fmt.Sprintf("%d KiB", mc.BudgetBytes>>10)
			}
			if mc.MemLimitBytes > 0 {
				budget += fmt.Sprintf(", GOMEMLIMIT %d MiB", mc.MemLimitBytes>>20)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", mc.Server, budget, spreadText(mc.PeakQueued, fmt0), spreadText(mc.PeakRise, fmt0),
				spreadText(mc.PeakRSS, fmt0), spreadText(mc.KernelTCP, fmt0), spreadText(mc.Sent, fmt0))
		}
		b.WriteString("\n")
	}
	if g := rep.Gate; g != nil {
		b.WriteString("### The listen gate during a connection flood\n\n")
		fmt.Fprintf(&b, "`%s`, flooded with %d connections at %.0f/s, each echoed once and held for %v. ", g.Command, c.GateFloodConns, c.GateFloodRate, c.GateHold)
		fmt.Fprintf(&b, "Outcomes %v; policy gate transitions %d, engine gate transitions %d. Chart: %s.\n\n", g.Outcomes, g.PolicyTransitions, g.EngineTransitions, OverloadGateChart)
		if g.Error != "" {
			fmt.Fprintf(&b, "Error: %s\n\n", g.Error)
		}
	}
	if len(rep.Backlog) > 0 {
		fmt.Fprintf(&b, "### A full accept queue: kernel drop against fast reject\n\n")
		fmt.Fprintf(&b, "Connection budget %d (gate closed at it), listen backlog %d; %d connections at %.0f/s, every served one held to the end, 5 s timeout per connection. Explicit: the share of connections that got an answer (echo or reject) rather than a timeout or a silent close. Times are from the connect call to the outcome.\n\n",
			c.BacklogBudget, c.Backlog, c.BacklogConns, c.BacklogRate)
		b.WriteString("| mode | explicit answers | p99 time to outcome ms | outcomes (last round) | p50 ms by outcome (last round) |\n|---|--:|--:|---|---|\n")
		for _, bc := range rep.Backlog {
			var last BacklogRun
			if n := len(bc.Runs); n > 0 {
				last = bc.Runs[n-1]
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", bc.Mode, spreadText(bc.Explicit, pctText), spreadText(bc.P99Millis, msText),
				mapText(last.Outcomes), floatMapText(last.P50Millis))
		}
		b.WriteString("\n")
	}
	writeCommandsNotes(&b, "Server command lines:", rep.Commands, rep.Notes)
	return b.String()
}

// writeCommandsNotes ends a report: the server command lines under title,
// sorted by name, then the notes.
func writeCommandsNotes(b *strings.Builder, title string, commands map[string]string, notes []string) {
	if len(commands) > 0 {
		b.WriteString(title + "\n\n")
		keys := make([]string, 0, len(commands))
		for k := range commands {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(b, "- %s: `%s`\n", k, commands[k])
		}
		b.WriteString("\n")
	}
	for _, n := range notes {
		fmt.Fprintf(b, "- note: %s\n", n)
	}
}

func fmt0(v float64) string { return fmt.Sprintf("%.0f", v) }

func mapText(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func floatMapText(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != "all" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.1f", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// WriteGateChart draws the gate run: the accepted-connection rate over time
// (and the offered one), the open connections and the accept queue against
// the budget, and the gate's state, on one time axis.
func (rep *OverloadReport) WriteGateChart(w io.Writer) error {
	g := rep.Gate
	if g == nil || len(g.Samples) == 0 {
		return fmt.Errorf("%w: no gate samples to chart", bench.ErrInvalidConfig)
	}
	var xmax float64
	for _, s := range g.Samples {
		xmax = max(xmax, s.AtMillis/1e3)
	}
	bin := g.BinMillis / 1e3
	newPanel := func(title, ylabel string) *plot.Plot {
		p := plot.New()
		p.Title.Text = title
		p.Title.TextStyle.Font.Size = vg.Points(11)
		p.X.Label.Text = "time (s)"
		p.Y.Label.Text = ylabel
		p.X.Min, p.X.Max = 0, xmax
		p.Y.Min = 0
		p.Legend.Top = true
		p.Legend.XOffs = -vg.Points(8)
		return p
	}
	line := func(p *plot.Plot, name string, xys plotter.XYs, col color.Color, dashed bool) error {
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color = col
		l.Width = vg.Points(1.5)
		if dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(name, l)
		return nil
	}
	// 1: accepted and offered connections per second
	p1 := newPanel("Connections accepted per second (client side: echo received)", "connections/s")
	acc, off := make(plotter.XYs, len(g.AcceptedPerSec)), make(plotter.XYs, len(g.OfferedPerSec))
	for i := range g.AcceptedPerSec {
		acc[i] = plotter.XY{X: (float64(i) + 0.5) * bin, Y: g.AcceptedPerSec[i]}
		off[i] = plotter.XY{X: (float64(i) + 0.5) * bin, Y: g.OfferedPerSec[i]}
	}
	if len(acc) > 0 {
		if err := line(p1, "accepted", acc, plotutil.Color(0), false); err != nil {
			return err
		}
		if err := line(p1, "offered", off, color.Gray{Y: 120}, true); err != nil {
			return err
		}
	}
	// 2: open connections and the accept queue against the budget
	p2 := newPanel("Open connections and kernel accept queue", "connections")
	conns, depth, budget := make(plotter.XYs, len(g.Samples)), make(plotter.XYs, len(g.Samples)), plotter.XYs{{X: 0, Y: float64(rep.Config.GateBudget)}, {X: xmax, Y: float64(rep.Config.GateBudget)}}
	for i, s := range g.Samples {
		x := s.AtMillis / 1e3
		conns[i] = plotter.XY{X: x, Y: float64(s.ConnsOpen)}
		depth[i] = plotter.XY{X: x, Y: float64(s.BacklogDepth)}
	}
	if err := line(p2, "open connections", conns, plotutil.Color(1), false); err != nil {
		return err
	}
	if err := line(p2, "accept queue", depth, plotutil.Color(2), false); err != nil {
		return err
	}
	if err := line(p2, "budget", budget, color.Gray{Y: 120}, true); err != nil {
		return err
	}
	// 3: the gate's transitions, cumulative: an open lasts only until the
	// budget is accepted again (milliseconds), shorter than the sampling,
	// so the count shows every one where a state line would miss them
	p3 := newPanel(fmt.Sprintf("Listen gate transitions, cumulative (%d in all; each open lasts until the budget is accepted again)", g.PolicyTransitions), "transitions")
	trans := make(plotter.XYs, 0, 2*len(g.Samples))
	for i, s := range g.Samples {
		x := s.AtMillis / 1e3
		if i > 0 {
			trans = append(trans, plotter.XY{X: x, Y: trans[len(trans)-1].Y})
		}
		trans = append(trans, plotter.XY{X: x, Y: float64(s.PolicyChanges)})
	}
	if err := line(p3, "policy gate", trans, plotutil.Color(3), false); err != nil {
		return err
	}
	return drawTiles(w, [][]*plot.Plot{{p1}, {p2}, {p3}}, vg.Points(640), vg.Points(220),
		fmt.Sprintf("Connection flood against a budget of %d connections (gate 1.0/0.5, dwell 500 ms)", rep.Config.GateBudget))
}
