package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ClockTicksPerSec is USER_HZ, the unit of the CPU times in /proc/PID/stat and
// /proc/stat. It is 100 on every Linux architecture Go supports (the kernel's
// internal HZ may differ; the exported unit does not).
const ClockTicksPerSec = 100

// ProcCounters is one reading of a process's counters from /proc.
type ProcCounters struct {
	// CPUTicks is utime+stime of every thread, live and exited, in USER_HZ ticks.
	CPUTicks int64 `json:"cpu_ticks"`
	// ReadSyscalls and WriteSyscalls are syscr and syscw from /proc/PID/io:
	// read-like (read, readv, recv*, ...) and write-like (write, writev, send*,
	// ...) system calls. epoll_wait and the rest are not counted.
	ReadSyscalls  int64 `json:"syscr"`
	WriteSyscalls int64 `json:"syscw"`
	// RSSKiB is VmRSS from /proc/PID/status.
	RSSKiB int64 `json:"rss_kib"`
}

// ReadProcCounters reads pid's CPU time, system-call counts and resident
// memory. A missing /proc/PID/io (no permission) leaves the call counts at -1.
func ReadProcCounters(pid int) (ProcCounters, error) {
	var c ProcCounters
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return c, err
	}
	if c.CPUTicks, err = parseProcStatCPU(stat); err != nil {
		return c, err
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return c, err
	}
	c.RSSKiB = parseStatusKiB(status, "VmRSS:")
	c.ReadSyscalls, c.WriteSyscalls = -1, -1
	if io, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io"); err == nil {
		c.ReadSyscalls, c.WriteSyscalls = parseProcIO(io)
	}
	return c, nil
}

// ReadPeakRSSKiB reads pid's peak resident memory over its life, VmHWM
// from /proc/PID/status, in KiB.
func ReadPeakRSSKiB(pid int) (int64, error) {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	v := parseStatusKiB(status, "VmHWM:")
	if v < 0 {
		return 0, fmt.Errorf("sluice: bench: no VmHWM in /proc/%d/status", pid)
	}
	return v, nil
}

// parseProcStatCPU returns utime+stime from the contents of /proc/PID/stat.
// The command name (field 2) may contain spaces and parentheses, so fields are
// counted from the last ')'.
func parseProcStatCPU(stat []byte) (int64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("sluice: bench: malformed /proc/PID/stat")
	}
	f := strings.Fields(string(stat[i+1:]))
	// After ')': field 3 (state) is f[0]; utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("sluice: bench: short /proc/PID/stat")
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("sluice: bench: malformed CPU times in /proc/PID/stat")
	}
	return u + s, nil
}

// parseStatusKiB returns the value of a "Key:   N kB" line of /proc/PID/status,
// or -1 when absent.
func parseStatusKiB(status []byte, key string) int64 {
	for _, line := range strings.Split(string(status), "\n") {
		if !strings.HasPrefix(line, key) {
			continue
		}
		f := strings.Fields(line[len(key):])
		if len(f) == 0 {
			return -1
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return -1
		}
		return v
	}
	return -1
}

// parseProcIO returns syscr and syscw from the contents of /proc/PID/io (-1
// for a missing field).
func parseProcIO(io []byte) (syscr, syscw int64) {
	syscr, syscw = -1, -1
	for _, line := range strings.Split(string(io), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "syscr":
			syscr = n
		case "syscw":
			syscw = n
		}
	}
	return syscr, syscw
}

// CoreTicks is one CPU's line of /proc/stat, in USER_HZ ticks.
type CoreTicks struct {
	// Busy is user+nice+system+irq+softirq: everything the core ran, for every
	// process on it, including the kernel's network processing.
	Busy int64 `json:"busy"`
	// Steal is time the hypervisor gave to another guest.
	Steal int64 `json:"steal"`
	// Total is every field, idle and iowait included.
	Total int64 `json:"total"`
}

// ReadCoreTicks reads /proc/stat and returns the ticks of every CPU by number.
func ReadCoreTicks() (map[int]CoreTicks, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil, err
	}
	return parseCoreTicks(b), nil
}

// parseCoreTicks parses the cpuN lines of /proc/stat; malformed lines are
// skipped.
func parseCoreTicks(b []byte) map[int]CoreTicks {
	out := make(map[int]CoreTicks)
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "cpu") || strings.HasPrefix(line, "cpu ") {
			continue
		}
		f := strings.Fields(line)
		cpu, err := strconv.Atoi(strings.TrimPrefix(f[0], "cpu"))
		if err != nil || len(f) < 9 {
			continue
		}
		var v [8]int64
		ok := true
		for i := range v {
			if v[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
				ok = false
			}
		}
		if !ok {
			continue
		}
		// user nice system idle iowait irq softirq steal
		busy := v[0] + v[1] + v[2] + v[5] + v[6]
		out[cpu] = CoreTicks{Busy: busy, Steal: v[7], Total: busy + v[3] + v[4] + v[7]}
	}
	return out
}
