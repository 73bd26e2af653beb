package tune

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Unlimited stands for a limit the host reports as "max", "unlimited" or a
// cgroup v1 value so large it means "no limit" (math.MaxInt64).
const Unlimited int64 = math.MaxInt64

// maxCPUs bounds the CPU numbers a cpu list may name, so a corrupt list such
// as "0-99999999999" is malformed rather than a huge count. Linux's largest
// configurable NR_CPUS is 8192; 1<<16 leaves room.
const maxCPUs = 1 << 16

// v1UnlimitedBytes is the threshold above which a cgroup v1 memory limit means
// "no limit": v1 reports the page-rounded maximum (9223372036854771712).
const v1UnlimitedBytes = int64(1) << 62

// malformed builds an ErrMalformed that quotes (a bounded prefix of) the text.
func malformed(what, text string) error {
	const maxQuote = 64
	if len(text) > maxQuote {
		text = text[:maxQuote] + "..."
	}
	if text == "" {
		return &HostError{Kind: ErrMalformed, Detail: what}
	}
	return &HostError{Kind: ErrMalformed, Detail: fmt.Sprintf("%s: %q", what, text)}
}

// parseInts parses exactly n whitespace-separated decimal integers, the shape
// of a /proc/sys file such as tcp_rmem ("4096\t131072\t6291456\n").
func parseInts(s string, n int) ([]int64, error) {
	fields := strings.Fields(s)
	if len(fields) != n {
		return nil, malformed(fmt.Sprintf("want %d integer(s), got %d field(s)", n, len(fields)), s)
	}
	out := make([]int64, n)
	for i, f := range fields {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, malformed("not an integer", f)
		}
		out[i] = v
	}
	return out, nil
}

// parseCPUList counts the CPUs in a kernel cpu list ("0-3,8,10-11").
func parseCPUList(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, malformed("empty cpu list", s)
	}
	count := 0
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a >= maxCPUs {
			return 0, malformed("bad cpu number in list", s)
		}
		b := a
		if isRange {
			b, err = strconv.Atoi(hi)
			if err != nil || b < a || b >= maxCPUs {
				return 0, malformed("bad cpu range in list", s)
			}
		}
		count += b - a + 1
		if count > maxCPUs {
			return 0, malformed("cpu list too long", s)
		}
	}
	return count, nil
}

// countProcessors counts the "processor : N" stanzas of /proc/cpuinfo.
func countProcessors(data []byte) (int, error) {
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, _, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(key) == "processor" {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		return 0, malformed("unreadable cpuinfo: "+err.Error(), "")
	}
	if n == 0 {
		return 0, malformed("no processor lines in cpuinfo", "")
	}
	return n, nil
}

// parseMeminfo returns the value of key (e.g. "MemTotal") in bytes.
func parseMeminfo(data []byte, key string) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		k, rest, ok := strings.Cut(line, ":")
		if !ok || k != key {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 || len(f) > 2 {
			return 0, malformed(key+" line", line)
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || v < 0 {
			return 0, malformed(key+" value", line)
		}
		if len(f) == 2 {
			if f[1] != "kB" {
				return 0, malformed(key+" unit", line)
			}
			if v > math.MaxInt64/1024 {
				return 0, malformed(key+" too large", line)
			}
			v *= 1024
		}
		return v, nil
	}
	if err := sc.Err(); err != nil {
		return 0, malformed("unreadable meminfo: "+err.Error(), "")
	}
	return 0, malformed("no "+key+" line in meminfo", "")
}

// parseLimit parses one /proc/self/limits cell: a number or "unlimited".
func parseLimit(s string) (int64, error) {
	if s == "unlimited" {
		return Unlimited, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, malformed("limit value", s)
	}
	return v, nil
}

// parseNoFile returns the soft and hard RLIMIT_NOFILE from /proc/self/limits.
func parseNoFile(data []byte) (soft, hard int64, err error) {
	const key = "Max open files"
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, key)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			return 0, 0, malformed("Max open files line", line)
		}
		if soft, err = parseLimit(f[0]); err != nil {
			return 0, 0, err
		}
		if hard, err = parseLimit(f[1]); err != nil {
			return 0, 0, err
		}
		if soft > hard {
			return 0, 0, malformed("soft limit above hard limit", line)
		}
		return soft, hard, nil
	}
	if err := sc.Err(); err != nil {
		return 0, 0, malformed("unreadable limits: "+err.Error(), "")
	}
	return 0, 0, malformed("no Max open files line in limits", "")
}

// parseCPUsAllowed counts the CPUs in the Cpus_allowed_list line of
// /proc/self/status (the affinity mask the scheduler, and Go, honour).
func parseCPUsAllowed(data []byte) (int, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Cpus_allowed_list:"); ok {
			return parseCPUList(rest)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, malformed("unreadable status: "+err.Error(), "")
	}
	return 0, malformed("no Cpus_allowed_list line in status", "")
}

// parseCPUMax parses cgroup v2 cpu.max: "max 100000" or "150000 100000".
// A "max" quota comes back as Unlimited.
func parseCPUMax(s string) (quota, period int64, err error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, 0, malformed("cpu.max wants \"QUOTA PERIOD\"", s)
	}
	period, err = strconv.ParseInt(f[1], 10, 64)
	if err != nil || period <= 0 {
		return 0, 0, malformed("cpu.max period", s)
	}
	if f[0] == "max" {
		return Unlimited, period, nil
	}
	quota, err = strconv.ParseInt(f[0], 10, 64)
	if err != nil || quota <= 0 {
		return 0, 0, malformed("cpu.max quota", s)
	}
	return quota, period, nil
}

// parseCFSQuota parses cgroup v1 cpu.cfs_quota_us ("-1" means no limit).
func parseCFSQuota(s string) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || v == 0 || v < -1 {
		return 0, malformed("cpu.cfs_quota_us", s)
	}
	if v == -1 {
		return Unlimited, nil
	}
	return v, nil
}

// parseCFSPeriod parses cgroup v1 cpu.cfs_period_us.
func parseCFSPeriod(s string) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || v <= 0 {
		return 0, malformed("cpu.cfs_period_us", s)
	}
	return v, nil
}

// parseMemoryMax parses cgroup v2 memory.max ("max" or bytes) and cgroup v1
// memory.limit_in_bytes (bytes, huge meaning no limit).
func parseMemoryMax(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "max" {
		return Unlimited, nil
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 {
		return 0, malformed("cgroup memory limit", s)
	}
	if v >= v1UnlimitedBytes {
		return Unlimited, nil
	}
	return v, nil
}

// cgroupLine is one line of /proc/self/cgroup: "ID:CONTROLLERS:PATH".
type cgroupLine struct {
	controllers []string // empty for the cgroup v2 line "0::/path"
	path        string
}

// parseCgroup parses /proc/self/cgroup.
func parseCgroup(data []byte) ([]cgroupLine, error) {
	var out []cgroupLine
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		id, rest, ok1 := strings.Cut(line, ":")
		ctrl, path, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 || !strings.HasPrefix(path, "/") {
			return nil, malformed("cgroup line", line)
		}
		if _, err := strconv.Atoi(id); err != nil {
			return nil, malformed("cgroup hierarchy id", line)
		}
		var cs []string
		if ctrl != "" {
			cs = strings.Split(ctrl, ",")
		}
		out = append(out, cgroupLine{controllers: cs, path: path})
	}
	if err := sc.Err(); err != nil {
		return nil, malformed("unreadable cgroup: "+err.Error(), "")
	}
	return out, nil
}
