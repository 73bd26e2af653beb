package lab

import (
	"fmt"
	"strings"
	"time"

	"github.com/sluicenet/sluice/bench"
	"github.com/sluicenet/sluice/internal/human"
)

// Markdown renders the report as markdown tables. chartDir is the path of the
// charts relative to where the markdown will live ("" for the same
// directory).
func (r *Report) Markdown(chartDir string) string {
	var b strings.Builder
	cfg := &r.Config
	titles := map[string]string{}
	for _, s := range r.Scenarios {
		titles[s.Name] = s.Title
	}
	pin := "unpinned"
	if !cfg.NoPin {
		pin = fmt.Sprintf("server on CPU %s, generator on CPU %s", intsText(cfg.ServerCPUs), intsText(cfg.ClientCPUs))
	}
	fmt.Fprintf(&b, "Run %s → %s (%s). Machine: %s, %d CPUs, kernel %s, %s, clocksource %s. bench.Load average %s at the start, %s at the end.\n\n",
		r.Started.Format(time.RFC3339), r.Finished.Format("15:04:05"), r.Finished.Sub(r.Started).Round(time.Second),
		orDash(r.Machine.CPUModel), r.Machine.CPUs, orDash(r.Machine.Kernel), r.Machine.GoVersion, orDash(r.Machine.Clocksource),
		orDash(r.Machine.LoadAvgStart), orDash(r.Machine.LoadAvgEnd))
	fmt.Fprintf(&b, "Codec %s; rounds: %d, servers alternating within each round (%s); %v warm-up + %v measured per run; %s; GOMAXPROCS %d (server, with -loops %d) and %d (generator); a fresh server process per run.\n\n",
		cfg.Codec, cfg.Rounds, strings.Join(availableNames(r.Servers), " → "), cfg.Warmup, cfg.Duration, pin, cfg.ServerProcs, cfg.ServerProcs, cfg.ClientProcs)
	for _, st := range r.Servers {
		if !st.Available {
			fmt.Fprintf(&b, "**%s unavailable:** %s\n\n", st.Name, oneLine(st.Reason))
		}
	}

	closedCells, openCells := r.splitCells()
	if len(closedCells) > 0 {
		b.WriteString("### Throughput (closed loop)\n\n")
		b.WriteString("Median msgs/s over the rounds, with the min–max range; × gnet is the median of the per-round ratios. Saturated names the core that ran out (see Cost).\n\n")
		b.WriteString("| scenario | server | msgs/s | min–max | × gnet | MB/s | saturated | errors |\n|---|---|--:|--:|--:|--:|---|---|\n")
		for _, c := range closedCells {
			s := c.Summary
			if s == nil {
				fmt.Fprintf(&b, "| %s | %s | failed | | | | | %s |\n", titles[c.Scenario], c.Server, oneLine(firstError(c)))
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s–%s | %s | %.1f | %s | %s |\n", titles[c.Scenario], c.Server,
				human.Rate(s.MsgsPerSec.Median), human.Rate(s.MsgsPerSec.Min), human.Rate(s.MsgsPerSec.Max),
				ratioText(s.VsGnet), s.MBPerSec, s.Saturated, errorsText(s.Errors))
		}
		b.WriteString("\n### Cost per message (closed loop)\n\n")
		b.WriteString("Server CPU is the server process's user+system time (/proc/PID/stat); server core is everything CPU 0 ran (/proc/stat), kernel network processing and anything else on that core included; syscalls are read-like + write-like calls of the server (/proc/PID/io syscr+syscw, at full speed; epoll_wait is not counted). Util is the share of one core.\n\n")
		b.WriteString("| scenario | server | server CPU µs/msg | server core µs/msg | server syscalls/msg | client CPU µs/msg | server util | client util | server core busy | client core busy |\n|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, c := range closedCells {
			s := c.Summary
			if s == nil {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", titles[c.Scenario], c.Server,
				num2(s.ServerCPUMicrosPerMsg), num2(s.ServerCoreMicrosPerMsg), num2(s.ServerSyscallsPerMsg), num2(s.ClientCPUMicrosPerMsg),
				pct(s.ServerUtil), pct(s.ClientUtil), pct(s.ServerCoreBusy), pct(s.ClientCoreBusy))
		}
		b.WriteString("\n### Latency (closed loop)\n\n")
		b.WriteString("From the moment a request was due (its predecessor's response arrived) to its response. With many connections in flight this is mostly queueing (in flight ÷ throughput); the open loop below is the latency measurement.\n\n")
		b.WriteString("| scenario | server | p50 | p90 | p99 | p99.9 | max |\n|---|---|--:|--:|--:|--:|--:|\n")
		for _, c := range closedCells {
			if s := c.Summary; s != nil {
				l := s.Latency
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", titles[c.Scenario], c.Server,
					human.Micros(l.P50Micros), human.Micros(l.P90Micros), human.Micros(l.P99Micros), human.Micros(l.P999Micros), human.Micros(l.MaxMicros))
			}
		}
		b.WriteString("\n")
	}
	if len(openCells) > 0 {
		b.WriteString("### Latency (open loop)\n\n")
		ref := OpenRefScenario
		for _, s := range r.Scenarios {
			if s.Open() {
				ref = s.Ref
				break
			}
		}
		if cfg.OpenRef == OpenRefEach {
			fmt.Fprintf(&b, "Each server is offered the stated fraction of its own median peak in %s. ", titles[ref])
		} else {
			fmt.Fprintf(&b, "Every server is offered the same rate: the stated fraction of the lowest median peak among the servers in %s, a rate each server has shown it can carry. ", titles[ref])
		}
		b.WriteString("Latency runs from each request's intended send time (coordinated omission corrected); late = sent more than 1 ms after its intended time, missed = never sent (connection at its in-flight cap), send lag = the generator's own lateness (high send lag or client util near 100% means the generator, not the server, limited the run). Late and missed are totals over the rounds.\n\n")
		b.WriteString("| load | server | offered/s | achieved/s | p50 | p90 | p99 | p99.9 | max | late | missed | send lag p99 | server util | client util |\n|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, c := range openCells {
			s := c.Summary
			if s == nil {
				fmt.Fprintf(&b, "| %s | %s | failed | | | | | | | | | | | %s |\n", c.Scenario, c.Server, oneLine(firstError(c)))
				continue
			}
			l := s.Latency
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %d | %s | %s | %s |\n", c.Scenario, c.Server,
				human.Rate(s.OfferedPerSec), human.Rate(s.MsgsPerSec.Median),
				human.Micros(l.P50Micros), human.Micros(l.P90Micros), human.Micros(l.P99Micros), human.Micros(l.P999Micros), human.Micros(l.MaxMicros),
				s.Late, s.Missed, human.Micros(s.SendLagP99Micros), pct(s.ServerUtil), pct(s.ClientUtil))
		}
		b.WriteString("\n")
	}
	if len(r.Idle) > 0 {
		b.WriteString("### Idle memory\n\n")
		b.WriteString("Resident memory (VmRSS) of a fresh server process before connecting, with every connection accepted and idle, and after one 64-byte echo on each.\n\n")
		b.WriteString("| server | conns | RSS before | RSS idle | KiB/conn idle | RSS after one echo | KiB/conn after echo |\n|---|--:|--:|--:|--:|--:|--:|\n")
		for _, m := range r.Idle {
			if m.Error != "" && m.IdleRSSKiB == 0 {
				fmt.Fprintf(&b, "| %s | %d | failed: %s | | | | |\n", m.Server, m.Conns, oneLine(m.Error))
				continue
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %.2f | %s | %.2f |\n", m.Server, m.Conns,
				kib(m.BaseRSSKiB), kib(m.IdleRSSKiB), m.IdleKiBPerConn, kib(m.EchoedRSSKiB), m.EchoedKiBPerConn)
		}
		b.WriteString("\n")
	}
	if len(r.Syscalls) > 0 {
		b.WriteString("### System-call mix (strace -c -f)\n\n")
		b.WriteString("strace slows a server about twentyfold and changes its pattern; read the mix, not the totals. The full-speed count is in the cost table.\n\n")
		b.WriteString("| server | scenario | msgs | syscalls/msg | most frequent (calls/msg) |\n|---|---|--:|--:|---|\n")
		for _, m := range r.Syscalls {
			switch {
			case m.Skipped != "":
				fmt.Fprintf(&b, "| %s | %s | | | skipped: %s |\n", m.Server, m.Scenario, oneLine(m.Skipped))
			case m.Error != "":
				fmt.Fprintf(&b, "| %s | %s | | | failed: %s |\n", m.Server, m.Scenario, oneLine(m.Error))
			default:
				var top []string
				for i, c := range m.Calls {
					if i == 6 {
						break
					}
					top = append(top, fmt.Sprintf("%s %.3f", c.Name, c.PerMsg))
				}
				fmt.Fprintf(&b, "| %s | %s | %d | %.3f | %s |\n", m.Server, m.Scenario, m.Msgs, m.CallsPerMsg, strings.Join(top, ", "))
			}
		}
		b.WriteString("\n")
	}
	if len(r.Notes) > 0 {
		b.WriteString("Notes:\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", oneLine(n))
		}
		b.WriteString("\n")
	}
	if len(closedCells) > 0 {
		fmt.Fprintf(&b, "![Throughput per scenario and server](%s)\n\n", chartPath(chartDir, ThroughputChart))
	}
	if len(openCells) > 0 {
		fmt.Fprintf(&b, "![Latency percentiles against offered load](%s)\n\n", chartPath(chartDir, LatencyChart))
	}
	return b.String()
}

// splitCells returns the cells of closed-loop and open-loop scenarios.
func (r *Report) splitCells() (closed, open []Cell) {
	isOpen := map[string]bool{}
	for _, s := range r.Scenarios {
		isOpen[s.Name] = s.Open()
	}
	for _, c := range r.Cells {
		if isOpen[c.Scenario] {
			open = append(open, c)
		} else {
			closed = append(closed, c)
		}
	}
	return closed, open
}

func chartPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return strings.TrimSuffix(dir, "/") + "/" + name
}

func availableNames(st []ServerStatus) []string {
	var out []string
	for _, s := range st {
		if s.Available {
			out = append(out, s.Name)
		}
	}
	return out
}

func firstError(c Cell) string {
	for _, r := range c.Runs {
		if r.Error != "" {
			return r.Error
		}
	}
	return ""
}

func ratioText(s *Spread) string {
	if s == nil {
		return "–"
	}
	if s.Min == s.Max {
		return fmt.Sprintf("%.2f", s.Median)
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f)", s.Median, s.Min, s.Max)
}

func errorsText(m map[string]int64) string {
	if len(m) == 0 {
		return "0"
	}
	var parts []string
	for k := bench.ErrRefused; k <= bench.ErrOther; k++ {
		if v := m[k.String()]; v != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, v))
		}
	}
	return strings.Join(parts, ", ")
}

func num2(v float64) string {
	if v < 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

func pct(v float64) string {
	if v < 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}

func kib(v int64) string {
	if v < 0 {
		return "–"
	}
	if v >= 10240 {
		return fmt.Sprintf("%.1f MiB", float64(v)/1024)
	}
	return fmt.Sprintf("%d KiB", v)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func intsText(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}

// oneLine flattens text for a table cell.
func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", "\\|")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
