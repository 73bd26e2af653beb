package lab

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// SyscallMix is a server's system calls per message under strace -c -f.
// strace slows a server about twentyfold and changes its pattern (more
// wake-ups, fewer messages per read), so the mix is indicative; the full-speed
// count is ProcUsage.SyscallsPerMsg.
type SyscallMix struct {
	Server   string `json:"server"`
	Scenario string `json:"scenario"`
	// Skipped says why there is no mix (strace missing, not permitted).
	Skipped string `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
	// Msgs is the messages echoed while strace was attached.
	Msgs int64 `json:"msgs"`
	// TotalCalls and CallsPerMsg cover every system call strace counted.
	TotalCalls  int64          `json:"total_calls"`
	CallsPerMsg float64        `json:"calls_per_msg"`
	Calls       []SyscallCount `json:"calls,omitempty"`
}

// SyscallCount is one line of strace -c.
type SyscallCount struct {
	Name   string  `json:"name"`
	Calls  int64   `json:"calls"`
	Errors int64   `json:"errors"`
	PerMsg float64 `json:"per_msg"`
}

// line is a one-line summary for the progress output.
func (m SyscallMix) line() string {
	switch {
	case m.Skipped != "":
		return "skipped: " + m.Skipped
	case m.Error != "":
		return "failed: " + m.Error
	}
	var top []string
	for i, c := range m.Calls {
		if i == 4 {
			break
		}
		top = append(top, fmt.Sprintf("%s %.3f", c.Name, c.PerMsg))
	}
	return fmt.Sprintf("%.3f syscalls/msg over %d msgs (%s)", m.CallsPerMsg, m.Msgs, strings.Join(top, ", "))
}

// parseStraceSummary parses the table strace -c writes:
//
//	% time     seconds  usecs/call     calls    errors syscall
//	------ ----------- ----------- --------- --------- ----------------
//	 52.10    0.171234           3     51234       120 read
//	...
//	100.00    0.328641           2    120000       120 total
//
// It returns the per-call lines, most called first, without the total line.
func parseStraceSummary(text string) ([]SyscallCount, error) {
	var out []SyscallCount
	header := false
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] == "%" {
			header = true
			continue
		}
		if !header || strings.HasPrefix(f[0], "---") {
			continue
		}
		name := f[len(f)-1]
		if name == "total" || len(f) < 5 {
			continue
		}
		// % time, seconds, usecs/call, calls, [errors], name
		calls, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil || calls < 0 {
			return nil, fmt.Errorf("sluice: bench: strace line %q", line)
		}
		var errs int64
		if len(f) >= 6 {
			if errs, err = strconv.ParseInt(f[4], 10, 64); err != nil || errs < 0 {
				return nil, fmt.Errorf("sluice: bench: strace line %q", line)
			}
		}
		out = append(out, SyscallCount{Name: name, Calls: calls, Errors: errs})
	}
	if !header {
		return nil, fmt.Errorf("sluice: bench: no strace -c table")
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Calls > out[j].Calls })
	return out, nil
}
