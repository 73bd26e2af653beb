package lab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicenet/sluice/bench"
)

// Matrix report files, written by WriteMatrixReport into its directory;
// the charts are named by MatrixChartName.
const (
	MatrixJSON     = "matrix.json"
	MatrixMarkdown = "matrix.md"
)

// MatrixChartName is the file name of the chart of one mode and
// connection count: matrix-inline-64.svg.
func MatrixChartName(mode string, conns int) string {
	return fmt.Sprintf("matrix-%s-%d.svg", mode, conns)
}

// WriteMatrixJSON writes the report as matrix.json into dir, through a
// temporary file renamed over it, so that an interrupted write leaves the
// previous checkpoint whole. It returns the path.
func WriteMatrixJSON(rep *MatrixReport, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, MatrixJSON)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(js, '\n'), 0o644); err != nil {
		return "", err
	}
	return p, os.Rename(tmp, p)
}

// WriteMatrixReport summarises the report's runs again and writes
// matrix.json, matrix.md and a chart per mode and connection count into
// dir. It returns the paths written.
func WriteMatrixReport(rep *MatrixReport, dir string) ([]string, error) {
	rep.Summarize()
	p, err := WriteMatrixJSON(rep, dir)
	if err != nil {
		return nil, err
	}
	paths := []string{p}
	p = filepath.Join(dir, MatrixMarkdown)
	if err := os.WriteFile(p, []byte(rep.Markdown()), 0o644); err != nil {
		return paths, err
	}
	paths = append(paths, p)
	for _, g := range rep.groups() {
		if !g.measured() {
			continue
		}
		var buf bytes.Buffer
		if err := rep.WriteMatrixChart(&buf, g.mode, g.conns); err != nil {
			return paths, err
		}
		p = filepath.Join(dir, MatrixChartName(g.mode, g.conns))
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// matrixGroup is one mode and connection count: a table and a chart.
type matrixGroup struct {
	mode  string
	conns int
	cells []*MatrixCell
}

// measured reports whether any cell of g has a result to chart.
func (g *matrixGroup) measured() bool {
	for _, c := range g.cells {
		if c.Rounds > 0 {
			return true
		}
	}
	return false
}

// groups splits the cells by mode and connection count, in cell order.
func (rep *MatrixReport) groups() []matrixGroup {
	var gs []matrixGroup
	for i := range rep.Cells {
		c := &rep.Cells[i]
		if n := len(gs); n == 0 || gs[n-1].mode != c.Mode || gs[n-1].conns != c.Conns {
			gs = append(gs, matrixGroup{mode: c.Mode, conns: c.Conns})
		}
		gs[len(gs)-1].cells = append(gs[len(gs)-1].cells, c)
	}
	return gs
}

// distinct returns the values of key over cells, in first-seen order.
func distinct[K comparable](cells []*MatrixCell, key func(*MatrixCell) K) []K {
	seen := map[K]bool{}
	var out []K
	for _, c := range cells {
		if k := key(c); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// workText prints a work per frame as the docs do: 50 µs, 2 ms.
func workText(d time.Duration) string {
	switch {
	case d >= time.Second && d%time.Second == 0:
		return fmt.Sprintf("%d s", d/time.Second)
	case d >= time.Millisecond && d%time.Millisecond == 0:
		return fmt.Sprintf("%d ms", d/time.Millisecond)
	case d >= time.Microsecond && d%time.Microsecond == 0:
		return fmt.Sprintf("%d µs", d/time.Microsecond)
	}
	return d.String()
}

// durText prints a duration without trailing zero units: 2m, 1.5s.
func durText(d time.Duration) string {
	s := d.String()
	for _, z := range []string{"0s", "0m"} {
		if t, ok := strings.CutSuffix(s, z); ok && len(t) > 0 && (t[len(t)-1] < '0' || t[len(t)-1] > '9') {
			s = t
		}
	}
	return s
}

// plural prints n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// factorText prints an offered load: 2×, 0.5×.
func factorText(f float64) string { return trimZero(fmt.Sprintf("%.2f", f)) + "×" }

// timesText prints a p99 ratio with two significant digits below 10.
func timesText(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// miss is the mark of a median that misses its target.
const miss = " ✗"

// cellText is a table cell: goodput ÷ capacity / p99 ÷ reference p99,
// medians with their ranges, each marked when it misses its target, and
// the unanswered requests of the worst round.
func cellText(c *MatrixCell) string {
	failed := ""
	if c.Failed > 0 {
		failed = fmt.Sprintf(" · %d of %d rounds failed%s", c.Failed, c.Failed+c.Rounds, miss)
	}
	if c.Rounds == 0 {
		return "no result" + failed
	}
	g, p := c.GoodputRatio, c.P99Ratio
	s := fmt.Sprintf("%.0f%% (%.0f–%.0f%%)", 100*g.Median, 100*g.Min, 100*g.Max)
	if !c.GoodputMet() {
		s += miss
	}
	if p.Median > 0 {
		s += fmt.Sprintf(" / %s× (%s–%s)", timesText(p.Median), timesText(p.Min), timesText(p.Max))
	} else {
		s += " / no p99"
	}
	if !c.P99Met() {
		s += miss
	}
	switch {
	case c.Unanswered > 0:
		s += fmt.Sprintf(" · %d unanswered%s", c.Unanswered, miss)
	case !c.AllAnswered:
		s += " · connections failed" + miss
	}
	if c.GeneratorSaturated() {
		s += fmt.Sprintf(" · generator %.0f%% busy", 100*c.GeneratorBusy)
	}
	return s + failed
}

// Markdown renders the matrix: what was run, how many cells each server
// meets the targets in, a table per mode and connection count (rows work
// and server, columns offered load), the capacities and reference p99s
// behind them, and a line per cell with the rest.
func (rep *MatrixReport) Markdown() string {
	var b strings.Builder
	c := rep.Config
	m := rep.Machine
	fmt.Fprintf(&b, "# The overload matrix\n\nRun %s to %s on %s (%d CPUs, kernel %s, %s); load average %s at the start, %s at the end. Servers pinned to CPUs %v (GOMAXPROCS and loops %d), the generator as %s; %s, a fresh server process per run, the servers alternating in every phase of every block; medians over the rounds with the range in parentheses.\n\n",
		rep.Started.Format("2006-01-02 15:04"), rep.Finished.Format("2006-01-02 15:04"), m.CPUModel, m.CPUs, m.Kernel, m.GoVersion,
		m.LoadAvgStart, m.LoadAvgEnd, c.ServerCPUs, len(c.ServerCPUs), generatorText(c.ClientCPUs, c.ClientProcs), plural(c.Rounds, "round"))
	fmt.Fprintf(&b, "Each cell is **goodput ÷ capacity / admitted p99 ÷ p99 at %s capacity**. Capacity is the server's closed-loop throughput in the same round (the sluice servers measured without shedding); the reference and overload runs are open loops at %s and at the column's multiple of it, %d-byte length-prefixed frames. Goodput counts echoed requests only: a reject is an answer, not goodput. p99s are of echoed requests, from their intended send time. %s marks a median that misses its target (goodput ≥ %.0f%%, p99 ≤ %s×); \"N unanswered%s\" a cell where N requests of its worst round got no answer (sends the generator could not issue because the connection had %d requests in flight or had failed, and requests lost with a failed connection, %v response timeout); \"generator N%% busy\" a cell whose generator used at least %.0f%% of its CPUs in a round, its spin-wait for sends due within 10 µs included: that cell's latencies may include the generator's own delays (its late sends are in the details).\n\n",
		factorText(c.RefFraction), factorText(c.RefFraction), c.Size, strings.TrimSpace(miss), 100*MatrixGoodputTarget, timesText(MatrixP99Target), miss, bench.DefaultOpenInFlight, durText(bench.DefaultResponseTimeout), 100*MatrixGeneratorSaturated)
	fmt.Fprintf(&b, "Each run measures at least %s after %s of warm-up, longer where the server is expected to serve fewer than %d requests in that time (up to %s); the fewest requests behind a p99 are in the reference tables.\n\n",
		durText(c.Duration), durText(c.Warmup), c.MinSamples, durText(maxMatrixWindow))
	rep.writeVerdicts(&b)
	for _, g := range rep.groups() {
		rep.writeGroup(&b, g)
	}
	rep.writeDetails(&b)
	writeCommandsNotes(&b, "Server command lines (the first work of each; -work varies):", rep.Commands, rep.Notes)
	return b.String()
}

// writeVerdicts writes, per server, the cells that meet every target.
func (rep *MatrixReport) writeVerdicts(b *strings.Builder) {
	all := make([]*MatrixCell, len(rep.Cells))
	for i := range rep.Cells {
		all[i] = &rep.Cells[i]
	}
	for _, srv := range distinct(all, func(c *MatrixCell) string { return c.Server }) {
		var n, met, good, p99, ans, sat int
		for _, c := range all {
			if c.Server != srv {
				continue
			}
			n++
			if c.Met() {
				met++
			}
			if c.GoodputMet() {
				good++
			}
			if c.P99Met() {
				p99++
			}
			if c.AllAnswered && c.Failed == 0 {
				ans++
			}
			if c.GeneratorSaturated() {
				sat++
			}
		}
		fmt.Fprintf(b, "- **%s** meets all three targets in %d of %d cells (goodput in %d, p99 in %d, every request answered in %d).", srv, met, n, good, p99, ans)
		if sat > 0 {
			fmt.Fprintf(b, " The generator used at least %.0f%% of its CPUs in %d of them.", 100*MatrixGeneratorSaturated, sat)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// writeGroup writes one mode and connection count: the matrix table, the
// capacities and reference p99s, and the chart.
func (rep *MatrixReport) writeGroup(b *strings.Builder, g matrixGroup) {
	fmt.Fprintf(b, "## %s, %d connections\n\n", g.mode, g.conns)
	servers := distinct(g.cells, func(c *MatrixCell) string { return c.Server })
	if g.mode == ModePool && !containsString(servers, ServerGnet) && !containsString(servers, ServerNet) {
		b.WriteString("The sluice servers only: gnet and net have no worker pool (their inline tables are the comparison).\n\n")
	}
	factors := distinct(g.cells, func(c *MatrixCell) float64 { return c.Factor })
	works := distinct(g.cells, func(c *MatrixCell) time.Duration { return c.Work })
	byKey := map[matrixKey]*MatrixCell{}
	for _, c := range g.cells {
		byKey[matrixKey{c.Mode, c.Conns, c.Work, c.Server, c.Factor}] = c
	}
	b.WriteString("| work | server |")
	for _, f := range factors {
		fmt.Fprintf(b, " %s |", factorText(f))
	}
	b.WriteString("\n|---|---|" + strings.Repeat("--:|", len(factors)) + "\n")
	for _, w := range works {
		for i, s := range servers {
			label := ""
			if i == 0 {
				label = workText(w)
			}
			fmt.Fprintf(b, "| %s | %s |", label, s)
			for _, f := range factors {
				text := "–"
				if c := byKey[matrixKey{g.mode, g.conns, w, s, f}]; c != nil {
					text = cellText(c)
				}
				fmt.Fprintf(b, " %s |", text)
			}
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(b, "\nCapacity and the reference (p99 at %s capacity), with the fewest requests behind a p99 in any round and the largest peak RSS of the overload runs:\n\n", factorText(rep.Config.RefFraction))
	b.WriteString("| work | server | capacity msg/s | reference p99 µs | requests behind the reference p99 | behind an overload p99 | peak RSS MiB |\n|---|---|--:|--:|--:|--:|--:|\n")
	for _, w := range works {
		for _, s := range servers {
			// The cells of one work and server share their capacity and
			// reference runs; the one with the most rounds shows them.
			var best *MatrixCell
			var ovSamples int64 = -1
			var rss float64
			for _, f := range factors {
				c := byKey[matrixKey{g.mode, g.conns, w, s, f}]
				if c == nil || c.Rounds == 0 {
					continue
				}
				if best == nil || c.Rounds > best.Rounds {
					best = c
				}
				ovSamples = minSamples(ovSamples, c.OverloadSamples)
				rss = max(rss, c.PeakRSS.Max)
			}
			if best == nil {
				continue
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %d | %d | %.1f |\n", workText(w), s, spreadText(best.Capacity, shortRate), spreadText(best.RefP99, fmt0),
				best.RefSamples, ovSamples, rss/1024)
		}
	}
	b.WriteString("\n")
	if g.measured() {
		fmt.Fprintf(b, "![%s, %d connections](%s)\n\n", g.mode, g.conns, MatrixChartName(g.mode, g.conns))
	}
}

// writeDetails writes a line per cell: refusals, the overload p99, what
// was not answered, the generator's late sends, memory and errors.
func (rep *MatrixReport) writeDetails(b *strings.Builder) {
	if len(rep.Cells) == 0 {
		b.WriteString("No cells measured.\n\n")
		return
	}
	b.WriteString("## Every cell\n\nLate: the largest share of a round's sends the generator issued more than 1 ms after their intended time (their latency still counts from it). Peak RSS: the server's VmHWM over the run, the most in any round.\n\n")
	b.WriteString("| mode | conns | work | server | offered | goodput ÷ capacity | p99 µs | p99 ÷ reference | rejected/s | unanswered | late | peak RSS MiB | errors |\n")
	b.WriteString("|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
	for i := range rep.Cells {
		c := &rep.Cells[i]
		errs := ""
		if len(c.Errors) > 0 {
			errs = fmt.Sprintf("%d: %s", len(c.Errors), strings.ReplaceAll(truncate(c.Errors[0], 120), "|", "/"))
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %d | %.1f%% | %.1f | %s |\n",
			c.Mode, c.Conns, workText(c.Work), c.Server, factorText(c.Factor), spreadText(c.GoodputRatio, pctText),
			spreadText(c.OverloadP99, fmt0), spreadText(c.P99Ratio, timesText), spreadText(c.Rejected, shortRate),
			c.Unanswered, 100*c.Late, c.PeakRSS.Max/1024, errs)
	}
	b.WriteString("\n")
}

func containsString(v []string, s string) bool {
	for _, x := range v {
		if x == s {
			return true
		}
	}
	return false
}

// truncate shortens s to at most n bytes, at a rune boundary, with "…".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
