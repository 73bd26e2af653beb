package lab

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Hammer report files, written by WriteHammerReport into its directory.
const (
	HammerJSON     = "hammer.json"
	HammerMarkdown = "hammer.md"
)

// WriteHammerJSON writes the report as hammer.json into dir, through a
// temporary file renamed over it, so that an interrupted write leaves the
// previous checkpoint whole. It returns the path.
func WriteHammerJSON(rep *HammerReport, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, HammerJSON)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(js, '\n'), 0o644); err != nil {
		return "", err
	}
	return p, os.Rename(tmp, p)
}

// WriteHammerReport summarises the report's runs again and writes
// hammer.json and hammer.md into dir. It returns the paths written.
func WriteHammerReport(rep *HammerReport, dir string) ([]string, error) {
	rep.Summarize()
	p, err := WriteHammerJSON(rep, dir)
	if err != nil {
		return nil, err
	}
	paths := []string{p}
	p = filepath.Join(dir, HammerMarkdown)
	if err := os.WriteFile(p, []byte(rep.Markdown()), 0o644); err != nil {
		return paths, err
	}
	return append(paths, p), nil
}

// generatorText describes the generator processes over cpus: "one
// process on CPUs [1]", "8 processes, one per CPU of [1 … 8], …".
func generatorText(cpus []int, procs int) string {
	n := len(SplitGenerators(1<<30, 0, cpus, procs))
	switch {
	case n == 1:
		return fmt.Sprintf("one process on CPUs %v", cpus)
	case n == len(cpus):
		return fmt.Sprintf("%d processes, one per CPU of %v, the connections split evenly and the results merged", n, cpus)
	case n > len(cpus):
		return fmt.Sprintf("%d processes sharing CPUs %v, the connections split evenly and the results merged", n, cpus)
	}
	return fmt.Sprintf("%d processes over CPUs %v, the CPUs and connections split evenly and the results merged", n, cpus)
}

// Markdown renders the hammer cells: what was run, how many cells each
// server meets the targets in, a table per work mode (a row per shape,
// work and server) and the capacities and references behind them.
func (rep *HammerReport) Markdown() string {
	var b strings.Builder
	c := rep.Config
	m := rep.Machine
	fmt.Fprintf(&b, "# The hammer cells\n\nRun %s to %s on %s (%d CPUs, kernel %s, %s); load average %s at the start, %s at the end. Servers pinned to CPUs %v (GOMAXPROCS and loops %d); the generator as %s; %s, a fresh server process per run, the servers alternating in every phase of every block; medians over the rounds with the range in parentheses.\n\n",
		rep.Started.Format("2006-01-02 15:04"), rep.Finished.Format("2006-01-02 15:04"), m.CPUModel, m.CPUs, m.Kernel, m.GoVersion,
		m.LoadAvgStart, m.LoadAvgEnd, c.ServerCPUs, len(c.ServerCPUs), generatorText(c.ClientCPUs, c.ClientProcs), plural(c.Rounds, "round"))
	fmt.Fprintf(&b, "A hammer is a closed loop: C connections × D requests in flight each, every answer, served or refused, sending the next request at once (retry loops, pipelining clients, load balancers). **Capacity** is sluice-noshed's goodput (`cmd/echo` without shedding, the same work and mode) in the same closed loop in the same round; every server's goodput is divided by it. ")
	if c.NoReference {
		b.WriteString("No reference runs: the admitted p99 is not judged. ")
	} else {
		fmt.Fprintf(&b, "The **reference** is each server's p99 in an open loop at %s that capacity over the same C connections, in the same round. ", factorText(c.RefFraction))
	}
	fmt.Fprintf(&b, "Goodput counts echoed requests only; p99s are of echoed requests, from when each was due; the time to a refusal is from when the refused request was due to its refusal. %s marks a median that misses its target: goodput ≥ %.0f%% of capacity, admitted p99 ≤ %s× the reference, time to a refusal p99 ≤ %s where the work is at most %s, the loop's time on refused frames ≤ %.0f%% of its busy time, and every request answered (\"unanswered\": requests lost with failed connections and the connections that failed, in the worst round; the requests a closed loop still has in flight when its window closes are not counted). \"Refusing\" is the sluice server's `%s` (the share of a loop's last busy window, at least 100 ms, spent on frames it refused; the largest over the loops), read every %s in the window: the median over the rounds of each run's mean, and the largest reading; gnet and net have no such figure. %d-byte length-prefixed frames; each run measures at least %s after %s of warm-up, longer where the server is expected to serve fewer than %d requests in that time.\n\n",
		strings.TrimSpace(miss), 100*MatrixGoodputTarget, timesText(MatrixP99Target), durText(HammerRefusalP99Target), workText(HammerRefusalMaxWork),
		100*HammerRefuseShareTarget, RefuseShareMetric, durText(RefuseShareEvery), c.Size, durText(c.Duration), durText(c.Warmup), c.MinSamples)
	rep.writeVerdicts(&b)
	for _, mode := range hammerDistinct(rep.Cells, func(c *HammerCell) string { return c.Mode }) {
		rep.writeMode(&b, mode)
	}
	rep.writeBehind(&b)
	writeCommandsNotes(&b, "Server command lines (the first work of each; -work varies):", rep.Commands, rep.Notes)
	return b.String()
}

// hammerDistinct returns the values of key over the report's cells, in
// first-seen order.
func hammerDistinct[K comparable](cells []HammerCell, key func(*HammerCell) K) []K {
	ptrs := make([]*HammerCell, len(cells))
	for i := range cells {
		ptrs[i] = &cells[i]
	}
	seen := map[K]bool{}
	var out []K
	for _, c := range ptrs {
		if k := key(c); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// writeVerdicts writes, per server, the cells that meet every target.
func (rep *HammerReport) writeVerdicts(b *strings.Builder) {
	if len(rep.Cells) == 0 {
		b.WriteString("No cells measured.\n\n")
		return
	}
	for _, srv := range hammerDistinct(rep.Cells, func(c *HammerCell) string { return c.Server }) {
		var n, met, good, p99, ref, ans, sat, shareN, share int
		for i := range rep.Cells {
			c := &rep.Cells[i]
			if c.Server != srv {
				continue
			}
			n++
			if c.RefuseShareRounds > 0 {
				shareN++
				if c.RefuseShareMet() {
					share++
				}
			}
			for _, v := range []struct {
				ok bool
				n  *int
			}{{c.Met(), &met}, {c.GoodputMet(), &good}, {c.P99Met(), &p99}, {c.RefusalMet(), &ref}, {c.AllAnswered && c.Failed == 0, &ans}, {c.GeneratorBusy >= MatrixGeneratorSaturated, &sat}} {
				if v.ok {
					*v.n++
				}
			}
		}
		refusing := ""
		if shareN > 0 {
			refusing = fmt.Sprintf(", refusing in %d of %d measured", share, shareN)
		}
		fmt.Fprintf(b, "- **%s** meets every target in %d of %d cells (goodput in %d, p99 in %d, time to a refusal in %d%s, every request answered in %d).", srv, met, n, good, p99, ref, refusing, ans)
		if sat > 0 {
			fmt.Fprintf(b, " The generator used at least %.0f%% of its CPUs in %d of them.", 100*MatrixGeneratorSaturated, sat)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// writeMode writes one work mode's table: a row per shape, work and
// server.
func (rep *HammerReport) writeMode(b *strings.Builder, mode string) {
	fmt.Fprintf(b, "## %s\n\n", mode)
	if mode == ModePool {
		b.WriteString("The sluice servers only: gnet and net have no worker pool.\n\n")
	}
	b.WriteString("| C × D | work | server | goodput ÷ capacity | admitted p99 | p99 ÷ reference | refused/s | to a refusal p50 / p99 | refusing (share of busy) | unanswered | server CPU |\n")
	b.WriteString("|---|--:|---|--:|--:|--:|--:|--:|--:|--:|---|\n")
	var lastShape HammerShape
	var lastWork time.Duration
	for i := range rep.Cells {
		c := &rep.Cells[i]
		if c.Mode != mode {
			continue
		}
		shape, work := "", ""
		if c.Shape != lastShape {
			shape, lastWork = c.Shape.text(), 0
		}
		if c.Work != lastWork {
			work = workText(c.Work)
		}
		lastShape, lastWork = c.Shape, c.Work
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", shape, work, c.Server, strings.Join(hammerCellTexts(c), " | "))
	}
	b.WriteString("\n")
}

// hammerCellTexts are a cell's columns after its shape, work and server:
// goodput ÷ capacity, admitted p99, p99 ÷ reference, refusals per second,
// the time to a refusal, the loop's share of busy time on refusals, what
// went unanswered and the server's CPU.
func hammerCellTexts(c *HammerCell) []string {
	if c.Rounds == 0 && c.Goodput.Max == 0 {
		text := "no result"
		if c.Failed > 0 {
			text = fmt.Sprintf("no result: %s failed%s", plural(c.Failed, "round"), miss)
		}
		return []string{text, "–", "–", "–", "–", "–", "–", "–"}
	}
	mark := func(ok bool) string {
		if ok {
			return ""
		}
		return miss
	}
	good := "no capacity" + miss
	if c.Rounds > 0 {
		good = spreadText(c.GoodputRatio, pctText) + mark(c.GoodputMet())
	}
	if c.Failed > 0 {
		good += fmt.Sprintf(" · %s failed%s", plural(c.Failed, "round"), miss)
	}
	ratio := "–"
	if c.P99Ratio.Median > 0 {
		ratio = spreadText(c.P99Ratio, timesText) + mark(c.P99Met())
	}
	refused, refusal := "0", "–"
	if c.Refused.Max > 0 {
		refused = spreadText(c.Refused, shortRate)
		refusal = fmt.Sprintf("%s / %s%s", usText(c.RefusalP50.Median), spreadText(c.RefusalP99, usText), mark(c.RefusalMet()))
	}
	refusing := "–"
	if c.RefuseShareRounds > 0 {
		// spreadText prints an all-zero spread as "–": a measured 0% is a figure
		rs := c.RefuseShare
		refusing = fmt.Sprintf("%s (%s–%s)%s · max %s", pctText(rs.Median), pctText(rs.Min), pctText(rs.Max), mark(c.RefuseShareMet()), pctText(c.RefuseShareMax))
	}
	unanswered := "0"
	if !c.AllAnswered {
		unanswered = fmt.Sprintf("%d lost, %d conns failed%s", c.Dropped, c.ConnErrors, miss)
	}
	if c.GoAways > 0 || c.Reconnects > 0 {
		unanswered += fmt.Sprintf("; %d conns closed with a final refusal, %d redialled", c.GoAways, c.Reconnects)
	}
	cpu := "–"
	if c.ServerUtil.Median > 0 {
		cpu = fmt.Sprintf("%.0f%% busy", 100*c.ServerUtil.Median)
		if c.ServerSysShare.Median > 0 {
			cpu += fmt.Sprintf(", %.0f%% sys", 100*c.ServerSysShare.Median)
		}
		if c.ServerMicrosPerAnswer.Median > 0 {
			cpu += fmt.Sprintf(", %.1f µs/answer", c.ServerMicrosPerAnswer.Median)
		}
	}
	if c.GeneratorBusy >= MatrixGeneratorSaturated {
		cpu += fmt.Sprintf(" · generator %.0f%% busy", 100*c.GeneratorBusy)
	}
	return []string{good, spreadText(c.P99, usText), ratio, refused, refusal, refusing, unanswered, cpu}
}

// writeBehind writes the numbers behind the ratios: the capacities, the
// goodputs, the references, memory and errors.
func (rep *HammerReport) writeBehind(b *strings.Builder) {
	if len(rep.Cells) == 0 {
		return
	}
	b.WriteString("## Behind the ratios\n\nCapacity is sluice-noshed's in the same closed loop; server CPU µs per answer counts served and refused requests alike; peak RSS is the server's VmHWM, the most in any round.\n\n")
	b.WriteString("| mode | C × D | work | server | capacity msg/s | goodput msg/s | reference p99 | admitted p99 | peak RSS MiB | errors |\n")
	b.WriteString("|---|---|--:|---|--:|--:|--:|--:|--:|---|\n")
	for i := range rep.Cells {
		c := &rep.Cells[i]
		errs := ""
		if len(c.Errors) > 0 {
			errs = fmt.Sprintf("%d: %s", len(c.Errors), strings.ReplaceAll(truncate(c.Errors[0], 120), "|", "/"))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %.1f | %s |\n", c.Mode, c.Shape.text(), workText(c.Work), c.Server,
			spreadText(c.Capacity, shortRate), spreadText(c.Goodput, shortRate), spreadText(c.RefP99, usText), spreadText(c.P99, usText),
			c.PeakRSS.Max/1024, errs)
	}
	b.WriteString("\n")
}
