package tune

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

const (
	kib = int64(1) << 10
	mib = int64(1) << 20
	gib = int64(1) << 30
	tib = int64(1) << 40
)

// fmtBytes prints a byte count for people: exact units when it divides,
// one decimal otherwise.
func fmtBytes(n int64) string {
	if n == Unlimited {
		return "unlimited"
	}
	for _, u := range []struct {
		size int64
		name string
	}{{tib, "TiB"}, {gib, "GiB"}, {mib, "MiB"}, {kib, "KiB"}} {
		if n >= u.size {
			if n%u.size == 0 {
				return fmt.Sprintf("%d %s", n/u.size, u.name)
			}
			return fmt.Sprintf("%.1f %s", float64(n)/float64(u.size), u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// goMemLimit prints n rounded down to whole MiB in GOMEMLIMIT's syntax.
func goMemLimit(n int64) string { return strconv.FormatInt(n/mib, 10) + "MiB" }

// fmtLimit prints a limit, spelling Unlimited out.
func fmtLimit(n int64) string {
	if n == Unlimited {
		return "unlimited"
	}
	return strconv.FormatInt(n, 10)
}

// fmtInts prints values the way /proc/sys shows them.
func fmtInts(vs []int64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmtLimit(v)
	}
	return strings.Join(s, " ")
}

// EchoFlagNames maps Budgets fields to cmd/echo flag names. MaxQueuedBytes
// is the admission work's flag, which cmd/echo does not have yet.
var EchoFlagNames = struct {
	Loops, MaxConns, OutQueueMsgs, OutQueueBytes, ReadBudget, FlushBudget, MaxQueuedBytes string
}{
	Loops:          "loops",
	MaxConns:       "max-conns",
	OutQueueMsgs:   "out-queue-msgs",
	OutQueueBytes:  "out-queue-bytes",
	ReadBudget:     "read-budget",
	FlushBudget:    "flush-budget",
	MaxQueuedBytes: "max-queued-bytes",
}

func echoFlags(b Budgets) []Flag {
	n := EchoFlagNames
	i := strconv.Itoa
	fs := []Flag{
		{Name: n.Loops, Value: i(b.Loops)},
		{Name: n.MaxConns, Value: i(b.MaxConns)},
		{Name: n.OutQueueMsgs, Value: i(b.OutQueueMsgs)},
		{Name: n.OutQueueBytes, Value: i(b.OutQueueBytes)},
		{Name: n.ReadBudget, Value: i(b.ReadBudgetBytes)},
		{Name: n.FlushBudget, Value: i(b.FlushBudgetBytes)},
	}
	if b.MaxQueuedBytes > 0 {
		fs = append(fs, Flag{Name: n.MaxQueuedBytes, Value: strconv.FormatInt(b.MaxQueuedBytes, 10)})
	}
	return fs
}

// literal prints a gofmt-aligned composite literal of type typ.
func literal(typ string, fields [][2]string) string {
	width := 0
	for _, f := range fields {
		width = max(width, len(f[0]))
	}
	var sb strings.Builder
	sb.WriteString(typ + "{\n")
	for _, f := range fields {
		fmt.Fprintf(&sb, "\t%s:%s%s,\n", f[0], strings.Repeat(" ", width-len(f[0])+1), f[1])
	}
	sb.WriteString("}")
	return sb.String()
}

// configLiteral prints the engine budgets as a server.Config literal.
func configLiteral(b Budgets) string {
	i := strconv.Itoa
	return literal("server.Config", [][2]string{
		{"Loops", i(b.Loops)},
		{"Backlog", i(b.Backlog)},
		{"MaxConns", i(b.MaxConns)},
		{"MaxConnsLow", i(b.MaxConnsLow)},
		{"ReadBufferBytes", i(b.ReadBufferBytes)},
		{"ReadBudgetBytes", i(b.ReadBudgetBytes)},
		{"FlushBudgetBytes", i(b.FlushBudgetBytes)},
		{"OutQueueMsgs", i(b.OutQueueMsgs)},
		{"OutQueueBytes", i(b.OutQueueBytes)},
		{"OutQueueHighBytes", i(b.OutQueueHighBytes)},
		{"OutQueueLowBytes", i(b.OutQueueLowBytes)},
	})
}

// admissionLiteral prints the global budgets as an admission.GlobalBudgets
// literal, or "" when memory is unknown.
func admissionLiteral(b Budgets) string {
	if b.MaxQueuedBytes <= 0 {
		return ""
	}
	return literal("admission.GlobalBudgets", [][2]string{
		{"MaxConns", strconv.Itoa(b.MaxConns)},
		{"MaxQueuedBytes", strconv.FormatInt(b.MaxQueuedBytes, 10)},
		{"MemoryLimitBytes", strconv.FormatInt(b.MemLimitBytes, 10)},
	})
}

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// errWriter remembers the first write error, so the text writer can print
// without checking every call.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// WriteText writes r for people.
func WriteText(w io.Writer, r Report) error {
	e := &errWriter{w: w}
	h, t, b := r.Host, r.Target, r.Budgets
	e.printf("sluice tune: host read from %s (read only: tune changes nothing)\n\n", h.Root)

	e.printf("Host\n")
	e.printf("  cores       %s\n", orUnknown(h.CPU.Cores > 0, strconv.Itoa(h.CPU.Cores), h.CPU.Why))
	e.printf("  memory      %s\n", orUnknown(h.Memory.Bytes > 0, fmtBytes(h.Memory.Bytes), h.Memory.Why))
	nofile := h.NoFile.Describe()
	if soft, ok := h.NoFile.Int(0); ok {
		hard, _ := h.NoFile.Int(1)
		nofile = fmt.Sprintf("soft %s, hard %s", fmtLimit(soft), fmtLimit(hard))
	}
	e.printf("  open files  %s\n", nofile)
	e.printf("  cgroup CPU  %s\n", cgroupCPU(h.CPU.Quota))
	e.printf("  cgroup mem  %s\n\n", cgroupMem(h.Memory.Cgroup))

	e.printf("Target\n  %d connections, %d-byte messages, %d in flight per connection, %s of memory",
		t.Conns, t.MsgBytes, t.InflightMsgs, strconv.FormatFloat(t.MemShare*100, 'f', -1, 64)+"%")
	if t.MemBytes > 0 {
		e.printf(" (memory given as %s)", fmtBytes(t.MemBytes))
	}
	if t.ConnRatePerSec > 0 {
		e.printf(", %.0f new connections/s", t.ConnRatePerSec)
	}
	if t.MsgRatePerSec > 0 {
		e.printf(", %.0f messages/s", t.MsgRatePerSec)
	}
	e.printf("\n\nBudgets\n")
	for _, rs := range b.Reasons {
		e.printf("  %-22s %-12s %s\n", rs.Name, budgetValue(b, rs.Name), rs.Why)
	}

	e.printf("\ncmd/echo\n  ")
	for _, env := range r.Env {
		e.printf("%s ", env)
	}
	e.printf("go run ./cmd/echo")
	for _, f := range r.EchoFlags {
		e.printf(" -%s %s", f.Name, f.Value)
	}
	e.printf("\n")
	e.printf("  (cmd/echo keeps Backlog, ReadBufferBytes, MaxConnsLow and the out-queue watermarks at the engine's defaults; embed the literals below to set them)\n")
	e.printf("\nGo\n  %s\n", strings.ReplaceAll(r.Config, "\n", "\n  "))
	if r.Admission != "" {
		e.printf("  %s\n", strings.ReplaceAll(r.Admission, "\n", "\n  "))
	}

	e.printf("\nKernel and process limits\n")
	if e.err == nil {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  VERDICT\tSETTING\tCURRENT\tNEEDED\n")
		for _, s := range r.Settings {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", s.Verdict, s.Name, s.Current, orDash(s.Needed))
		}
		e.err = tw.Flush()
	}
	e.printf("\nWhy each limit matters\n")
	for _, s := range r.Settings {
		e.printf("  %s: %s\n", s.Name, s.Reason)
	}
	writeCommands(e, r.Settings, true, "To apply (as root; tune ran none of these)")
	writeCommands(e, r.Settings, false, "Optional (see the reasons above)")

	if len(r.Warnings) == 0 {
		e.printf("\nNo warnings: this host can serve the target as configured.\n")
	} else {
		e.printf("\nWarnings\n")
		for _, w := range r.Warnings {
			e.printf("  - %s\n", w)
		}
	}
	return e.err
}

func writeCommands(e *errWriter, ss []Setting, limiting bool, title string) {
	var cmds []string
	for _, s := range ss {
		if s.Verdict.Limits() == limiting {
			cmds = append(cmds, s.Commands...)
		}
	}
	if len(cmds) == 0 {
		return
	}
	e.printf("\n%s\n", title)
	for _, c := range cmds {
		e.printf("  %s\n", c)
	}
}

func budgetValue(b Budgets, name string) string {
	i := strconv.Itoa
	bytes := func(n int) string { return fmtBytes(int64(n)) }
	switch name {
	case "Loops":
		return i(b.Loops)
	case "MaxConns":
		return i(b.MaxConns)
	case "MaxConnsLow":
		return i(b.MaxConnsLow)
	case "OutQueueMsgs":
		return i(b.OutQueueMsgs)
	case "OutQueueBytes":
		return bytes(b.OutQueueBytes)
	case "OutQueueHighBytes":
		return bytes(b.OutQueueHighBytes)
	case "OutQueueLowBytes":
		return bytes(b.OutQueueLowBytes)
	case "ReadBudgetBytes":
		return bytes(b.ReadBudgetBytes)
	case "FlushBudgetBytes":
		return bytes(b.FlushBudgetBytes)
	case "ReadBufferBytes":
		return bytes(b.ReadBufferBytes)
	case "MaxQueuedBytes":
		return orDash(fmtBytesIf(b.MaxQueuedBytes))
	case "Backlog":
		return i(b.Backlog)
	case "MemLimitBytes":
		return orDash(fmtBytesIf(b.MemLimitBytes))
	case "NoFileNeeded":
		return strconv.FormatInt(b.NoFileNeeded, 10)
	}
	return "?"
}

func fmtBytesIf(n int64) string {
	if n <= 0 {
		return ""
	}
	return fmtBytes(n)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orUnknown(known bool, v, why string) string {
	if !known {
		return why
	}
	return v + "  (" + why + ")"
}

// cgroupCPU describes the cgroup CPU quota reading.
func cgroupCPU(r Reading) string {
	q, ok := r.Int(0)
	switch {
	case r.Status == StatusMissing:
		return "no quota file found"
	case !ok:
		return r.Describe()
	case q == Unlimited:
		return "no quota (" + r.Path + ")"
	}
	p, _ := r.Int(1)
	return fmt.Sprintf("%d/%d us = %.2f cores (%s)", q, p, float64(q)/float64(p), r.Path)
}

// cgroupMem describes the cgroup memory limit reading.
func cgroupMem(r Reading) string {
	v, ok := r.Int(0)
	switch {
	case r.Status == StatusMissing:
		return "no limit file found"
	case !ok:
		return r.Describe()
	case v == Unlimited:
		return "no limit (" + r.Path + ")"
	}
	return fmt.Sprintf("%s (%s)", fmtBytes(v), r.Path)
}
