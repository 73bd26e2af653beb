package tune

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"strings"
)

// Status says what happened when one host value was read.
type Status string

// The statuses of a Reading.
const (
	// StatusOK means the value was read and parsed.
	StatusOK Status = "ok"
	// StatusMissing means the file does not exist: the value is unknown.
	StatusMissing Status = "missing"
	// StatusMalformed means the file exists but does not parse.
	StatusMalformed Status = "malformed"
	// StatusUnreadable means the file exists but could not be read.
	StatusUnreadable Status = "unreadable"
)

// Reading is one value read from the host: where it came from, whether it
// was found and parsed, and the integers it holds (Unlimited for "no limit").
// A Reading is a plain value, safe to copy.
type Reading struct {
	// Path is the file read, relative to the root.
	Path string `json:"path,omitempty"`
	// Status is ok, missing, malformed or unreadable.
	Status Status `json:"status"`
	// Values holds the parsed integers when Status is ok.
	Values []int64 `json:"values,omitempty"`
	// Error explains a status other than ok, in plain words.
	Error string `json:"error,omitempty"`
	// Err is the typed error (wrapping ErrMissing or ErrMalformed).
	Err error `json:"-"`
}

// OK reports whether the reading holds parsed values.
func (r Reading) OK() bool { return r.Status == StatusOK && len(r.Values) > 0 }

// Int returns the i-th value and whether it is known.
func (r Reading) Int(i int) (int64, bool) {
	if !r.OK() || i >= len(r.Values) {
		return 0, false
	}
	return r.Values[i], true
}

// Describe says in a few words why a reading holds no value, naming the
// file; for a reading that holds values it returns them.
func (r Reading) Describe() string {
	switch r.Status {
	case StatusOK:
		return fmtInts(r.Values)
	case StatusMissing:
		if r.Path == "" {
			return "unknown (" + r.Error + ")"
		}
		return "unknown (" + r.Path + " not found)"
	default:
		return fmt.Sprintf("%s: %s (%s)", r.Status, r.Error, r.Path)
	}
}

// failed builds a Reading for path p from a read or parse error.
func failed(p string, err error) Reading {
	var he *HostError
	if !errors.As(err, &he) {
		he = &HostError{Kind: err}
	}
	if he.Path == "" {
		he.Path = p
	}
	st := StatusUnreadable
	switch {
	case errors.Is(err, ErrMissing):
		st = StatusMissing
	case errors.Is(err, ErrMalformed):
		st = StatusMalformed
	}
	detail := he.Detail
	if detail == "" {
		detail = he.Kind.Error()
	}
	return Reading{Path: he.Path, Status: st, Error: detail, Err: he}
}

// ok builds a successful Reading.
func ok(p string, vs ...int64) Reading {
	return Reading{Path: p, Status: StatusOK, Values: vs}
}

// CPU is what the host offers the engine's loops.
type CPU struct {
	// Online counts the CPUs in sys/devices/system/cpu/online.
	Online Reading `json:"online"`
	// CPUInfo counts the processors listed in proc/cpuinfo.
	CPUInfo Reading `json:"cpuinfo"`
	// Allowed counts the CPUs in this process's affinity mask
	// (Cpus_allowed_list in proc/self/status).
	Allowed Reading `json:"allowed"`
	// Quota is the tightest cgroup CPU quota as [quota, period] in
	// microseconds (quota Unlimited when there is none); missing when no
	// cgroup CPU controller file was found.
	Quota Reading `json:"quota"`
	// Cores is the number of cores the loops can use: the smallest known
	// count, lowered to the cgroup quota rounded up; 0 when unknown.
	Cores int `json:"cores"`
	// Why says which reading decided Cores.
	Why string `json:"why"`
}

// Memory is what the host offers the process.
type Memory struct {
	// Total is MemTotal from proc/meminfo, in bytes.
	Total Reading `json:"total"`
	// Cgroup is the tightest cgroup memory limit in bytes (cgroup v2
	// memory.max or v1 memory.limit_in_bytes, Unlimited when there is none);
	// missing when no cgroup memory controller file was found.
	Cgroup Reading `json:"cgroup"`
	// Bytes is the memory the process can use: the smaller of Total and
	// Cgroup; 0 when unknown.
	Bytes int64 `json:"bytes"`
	// Why says which reading decided Bytes.
	Why string `json:"why"`
}

// Host is everything tune reads. The zero value is a host with nothing
// known.
type Host struct {
	// Root is the directory the host was read from ("/" for the real host).
	Root string `json:"root"`
	// CPU is the core count and where it came from.
	CPU CPU `json:"cpu"`
	// Memory is the memory size and where it came from.
	Memory Memory `json:"memory"`
	// NoFile is RLIMIT_NOFILE as [soft, hard] from proc/self/limits.
	NoFile Reading `json:"nofile"`
	// Sysctls maps each sysctl name in SysctlNames to its reading.
	Sysctls map[string]Reading `json:"sysctls"`
}

// Sysctl returns the reading for name, or a missing reading if name was not
// read.
func (h *Host) Sysctl(name string) Reading {
	if r, ok := h.Sysctls[name]; ok {
		return r
	}
	return failed(sysctlPath(name), &HostError{Kind: ErrMissing, Detail: "not read"})
}

// SysctlNames lists the sysctls tune reads, with the number of integers each
// holds.
var SysctlNames = []struct {
	Name   string
	Values int
}{
	{"fs.file-max", 1},
	{"fs.nr_open", 1},
	{"net.core.somaxconn", 1},
	{"net.ipv4.tcp_max_syn_backlog", 1},
	{"net.core.netdev_max_backlog", 1},
	{"net.ipv4.tcp_rmem", 3},
	{"net.ipv4.tcp_wmem", 3},
	{"net.ipv4.tcp_mem", 3},
	{"net.core.rmem_max", 1},
	{"net.core.wmem_max", 1},
	{"net.ipv4.ip_local_port_range", 2},
	{"net.ipv4.tcp_syncookies", 1},
	{"net.ipv4.tcp_tw_reuse", 1},
	{"net.ipv4.tcp_fin_timeout", 1},
	{"net.ipv4.tcp_keepalive_time", 1},
	{"net.ipv4.tcp_keepalive_intvl", 1},
	{"net.ipv4.tcp_keepalive_probes", 1},
}

// sysctlPath maps "net.core.somaxconn" to "proc/sys/net/core/somaxconn".
func sysctlPath(name string) string {
	return "proc/sys/" + strings.ReplaceAll(name, ".", "/")
}

// maxFileBytes bounds how much of one host file is read; /proc files are a
// few KiB, cpuinfo of a large host a few hundred.
const maxFileBytes = 4 << 20

// readFile reads p from fsys, mapping "does not exist" to ErrMissing.
// fs.FS has no way to open a file for writing: this is the only way tune
// touches the host.
func readFile(fsys fs.FS, p string) ([]byte, error) {
	f, err := fsys.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &HostError{Path: p, Kind: ErrMissing, Detail: "no such file"}
		}
		return nil, &HostError{Path: p, Kind: err}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes))
	if err != nil {
		return nil, &HostError{Path: p, Kind: err}
	}
	return data, nil
}

// readInts reads a file of n integers.
func readInts(fsys fs.FS, p string, n int) Reading {
	data, err := readFile(fsys, p)
	if err != nil {
		return failed(p, err)
	}
	vs, err := parseInts(string(data), n)
	if err != nil {
		return failed(p, err)
	}
	return ok(p, vs...)
}

// readParsed reads p and applies parse to its content.
func readParsed(fsys fs.FS, p string, parse func([]byte) ([]int64, error)) Reading {
	data, err := readFile(fsys, p)
	if err != nil {
		return failed(p, err)
	}
	vs, err := parse(data)
	if err != nil {
		return failed(p, err)
	}
	return ok(p, vs...)
}

// ReadHost reads the host from fsys, a tree laid out like "/" (proc/...,
// sys/...). root is only recorded in the result. ReadHost never fails: each
// value it cannot find or parse is reported in its Reading.
func ReadHost(fsys fs.FS, root string) Host {
	h := Host{Root: root, Sysctls: make(map[string]Reading, len(SysctlNames))}
	h.CPU = readCPU(fsys)
	h.Memory = readMemory(fsys)
	h.NoFile = readParsed(fsys, "proc/self/limits", func(b []byte) ([]int64, error) {
		s, hd, err := parseNoFile(b)
		return []int64{s, hd}, err
	})
	for _, s := range SysctlNames {
		h.Sysctls[s.Name] = readInts(fsys, sysctlPath(s.Name), s.Values)
	}
	return h
}

// count wraps a parser that yields one count.
func count(parse func([]byte) (int, error)) func([]byte) ([]int64, error) {
	return func(b []byte) ([]int64, error) {
		n, err := parse(b)
		return []int64{int64(n)}, err
	}
}

func readCPU(fsys fs.FS) CPU {
	c := CPU{
		Online:  readParsed(fsys, "sys/devices/system/cpu/online", count(func(b []byte) (int, error) { return parseCPUList(string(b)) })),
		CPUInfo: readParsed(fsys, "proc/cpuinfo", count(countProcessors)),
		Allowed: readParsed(fsys, "proc/self/status", count(parseCPUsAllowed)),
		Quota:   readCPUQuota(fsys),
	}
	for _, r := range []struct {
		name string
		r    Reading
	}{{"online CPUs", c.Online}, {"processors in cpuinfo", c.CPUInfo}, {"affinity mask", c.Allowed}} {
		if n, ok := r.r.Int(0); ok && (c.Cores == 0 || int(n) < c.Cores) {
			c.Cores, c.Why = int(n), r.name
		}
	}
	if q, ok := c.Quota.Int(0); ok && q != Unlimited {
		p, _ := c.Quota.Int(1)
		cores := int(math.Ceil(float64(q) / float64(p)))
		if c.Cores == 0 || cores < c.Cores {
			c.Cores = cores
			c.Why = fmt.Sprintf("cgroup CPU quota %d/%d us = %.2f cores, rounded up", q, p, float64(q)/float64(p))
		}
	}
	if c.Cores == 0 {
		c.Why = fmt.Sprintf("unknown: online CPUs %s; cpuinfo %s; affinity %s",
			c.Online.Describe(), c.CPUInfo.Describe(), c.Allowed.Describe())
	}
	return c
}

func readMemory(fsys fs.FS) Memory {
	m := Memory{
		Total: readParsed(fsys, "proc/meminfo", func(b []byte) ([]int64, error) {
			v, err := parseMeminfo(b, "MemTotal")
			return []int64{v}, err
		}),
		Cgroup: readCgroupMemory(fsys),
	}
	if t, ok := m.Total.Int(0); ok {
		m.Bytes, m.Why = t, "MemTotal"
	}
	if l, ok := m.Cgroup.Int(0); ok && l != Unlimited && (m.Bytes == 0 || l < m.Bytes) {
		m.Bytes, m.Why = l, "cgroup memory limit"
	}
	if m.Bytes == 0 {
		m.Why = "unknown: MemTotal " + m.Total.Describe() + "; no cgroup limit either"
	}
	return m
}

// maxCgroupDepth bounds the walk up a cgroup path.
const maxCgroupDepth = 32

// cgroupCandidates lists the directories whose limit files apply to this
// process for one hierarchy, innermost first: the process's cgroup and its
// ancestors under mount. When the process's path is unknown (no
// proc/self/cgroup, or no line for the controller) only mount is tried, which
// is what a container with its own cgroup namespace sees.
func cgroupCandidates(mount, procPath string) []string {
	if procPath == "" {
		return []string{mount}
	}
	var out []string
	p := path.Clean(procPath)
	for range maxCgroupDepth {
		out = append(out, path.Join(mount, p))
		if p == "/" {
			return out
		}
		p = path.Dir(p)
	}
	return append(out, mount)
}

// cgroupPaths returns the cgroup v2 path and the v1 path of controller from
// proc/self/cgroup ("" when unknown), and the v1 mount directories to try.
func cgroupPaths(fsys fs.FS, controller string) (v2 string, v1 string, v1Mounts []string, err error) {
	v1Mounts = []string{"sys/fs/cgroup/" + controller}
	data, rerr := readFile(fsys, "proc/self/cgroup")
	if rerr != nil {
		return "", "", v1Mounts, nil
	}
	lines, err := parseCgroup(data)
	if err != nil {
		return "", "", v1Mounts, err
	}
	for _, l := range lines {
		if len(l.controllers) == 0 {
			v2 = l.path
			continue
		}
		for _, c := range l.controllers {
			if c == controller {
				v1 = l.path
				if len(l.controllers) > 1 {
					v1Mounts = append(v1Mounts, "sys/fs/cgroup/"+strings.Join(l.controllers, ","))
				}
			}
		}
	}
	return v2, v1, v1Mounts, nil
}

// limitFile is one candidate limit: a Reading and its value as a number to
// minimise (bytes, or cores for CPU).
type limitFile struct {
	r Reading
	v float64
}

// tightest returns the smallest limit among the found files. A malformed
// file wins over everything (it must be reported); when no file exists the
// result is missing.
func tightest(found []limitFile, what string) Reading {
	var best *limitFile
	for i := range found {
		f := &found[i]
		if f.r.Status == StatusMalformed || f.r.Status == StatusUnreadable {
			return f.r
		}
		if f.r.Status == StatusOK && (best == nil || f.v < best.v) {
			best = f
		}
	}
	if best == nil {
		return failed("", &HostError{Kind: ErrMissing, Detail: "no cgroup " + what + " limit file"})
	}
	return best.r
}

func readCgroupMemory(fsys fs.FS) Reading {
	v2, v1, mounts, err := cgroupPaths(fsys, "memory")
	if err != nil {
		return failed("proc/self/cgroup", err)
	}
	var found []limitFile
	add := func(p string) {
		r := readParsed(fsys, p, func(b []byte) ([]int64, error) {
			v, err := parseMemoryMax(string(b))
			return []int64{v}, err
		})
		if r.Status == StatusMissing {
			return
		}
		v := math.Inf(1)
		if n, ok := r.Int(0); ok && n != Unlimited {
			v = float64(n)
		}
		found = append(found, limitFile{r, v})
	}
	for _, d := range cgroupCandidates("sys/fs/cgroup", v2) {
		add(d + "/memory.max")
	}
	for _, m := range mounts {
		for _, d := range cgroupCandidates(m, v1) {
			add(d + "/memory.limit_in_bytes")
		}
	}
	return tightest(found, "memory")
}

func readCPUQuota(fsys fs.FS) Reading {
	v2, v1, mounts, err := cgroupPaths(fsys, "cpu")
	if err != nil {
		return failed("proc/self/cgroup", err)
	}
	var found []limitFile
	addQuota := func(r Reading) {
		if r.Status == StatusMissing {
			return
		}
		v := math.Inf(1)
		if q, ok := r.Int(0); ok && q != Unlimited {
			p, _ := r.Int(1)
			v = float64(q) / float64(p)
		}
		found = append(found, limitFile{r, v})
	}
	for _, d := range cgroupCandidates("sys/fs/cgroup", v2) {
		addQuota(readParsed(fsys, d+"/cpu.max", func(b []byte) ([]int64, error) {
			q, p, err := parseCPUMax(string(b))
			return []int64{q, p}, err
		}))
	}
	for _, m := range mounts {
		for _, d := range cgroupCandidates(m, v1) {
			addQuota(readV1Quota(fsys, d))
		}
	}
	return tightest(found, "cpu")
}

// readV1Quota reads cpu.cfs_quota_us and cpu.cfs_period_us from dir.
func readV1Quota(fsys fs.FS, dir string) Reading {
	qp, pp := dir+"/cpu.cfs_quota_us", dir+"/cpu.cfs_period_us"
	qd, err := readFile(fsys, qp)
	if err != nil {
		return failed(qp, err)
	}
	q, err := parseCFSQuota(string(qd))
	if err != nil {
		return failed(qp, err)
	}
	pd, err := readFile(fsys, pp)
	if err != nil {
		if errors.Is(err, ErrMissing) { // quota without period: report, don't guess
			err = &HostError{Path: pp, Kind: ErrMalformed, Detail: "missing beside " + qp}
		}
		return failed(pp, err)
	}
	p, err := parseCFSPeriod(string(pd))
	if err != nil {
		return failed(pp, err)
	}
	return ok(qp, q, p)
}
