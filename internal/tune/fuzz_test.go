package tune

import (
	"errors"
	"io"
	"testing"
	"testing/fstest"
)

// FuzzParsers feeds arbitrary bytes to every host-file parser: none may
// panic, every failure is ErrMalformed, and every success is in range.
func FuzzParsers(f *testing.F) {
	for _, s := range []string{"0-3,8\n", "max 100000\n", "150000 100000\n", "-1\n", "4096\t131072\t6291456\n",
		"MemTotal:  1024 kB\n", "Max open files 1024 4096 files\n", "0::/a/b\n4:cpu,cpuacct:/x\n",
		"processor\t: 0\n", "Cpus_allowed_list:\t0-1\n", "9223372036854771712\n", "4GiB"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := string(data)
		check := func(what string, err error) {
			if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUsage) {
				t.Fatalf("%s(%q): error %v is neither ErrMalformed nor ErrUsage", what, s, err)
			}
		}
		if n, err := parseCPUList(s); err == nil && (n < 1 || n > maxCPUs) {
			t.Fatalf("parseCPUList(%q) = %d", s, n)
		} else {
			check("parseCPUList", err)
		}
		if n, err := countProcessors(data); err == nil && n < 1 {
			t.Fatalf("countProcessors = %d", n)
		} else {
			check("countProcessors", err)
		}
		if v, err := parseMeminfo(data, "MemTotal"); err == nil && v < 0 {
			t.Fatalf("parseMeminfo = %d", v)
		} else {
			check("parseMeminfo", err)
		}
		if soft, hard, err := parseNoFile(data); err == nil && (soft < 0 || soft > hard) {
			t.Fatalf("parseNoFile = %d, %d", soft, hard)
		} else {
			check("parseNoFile", err)
		}
		if q, p, err := parseCPUMax(s); err == nil && (q <= 0 || p <= 0) {
			t.Fatalf("parseCPUMax = %d, %d", q, p)
		} else {
			check("parseCPUMax", err)
		}
		if v, err := parseMemoryMax(s); err == nil && v < 0 {
			t.Fatalf("parseMemoryMax = %d", v)
		} else {
			check("parseMemoryMax", err)
		}
		if v, err := parseSize(s); err == nil && v < 0 {
			t.Fatalf("parseSize = %d", v)
		} else {
			check("parseSize", err)
		}
		_, err := parseCFSQuota(s)
		check("parseCFSQuota", err)
		_, err = parseInts(s, 3)
		check("parseInts", err)
		_, err = parseCPUsAllowed(data)
		check("parseCPUsAllowed", err)
		_, err = parseCgroup(data)
		check("parseCgroup", err)
	})
}

// FuzzPlan builds a host tree from fuzzed file contents and a fuzzed target,
// then reads, plans and prints it: nothing may panic, and a valid target
// always yields a report whose watermarks are ordered.
func FuzzPlan(f *testing.F) {
	f.Add([]byte("0-1\n"), []byte("MemTotal: 1048576 kB\n"), []byte("Max open files 1024 4096 files\n"),
		[]byte("0::/a\n"), []byte("150000 100000\n"), []byte("4096 87380 6291456\n"), 10000, 512, 16, 0.5)
	f.Add([]byte(""), []byte(""), []byte(""), []byte("garbage"), []byte("max"), []byte("x"), 1, 1, 1, 1.0)
	f.Fuzz(func(t *testing.T, online, meminfo, limits, cgroup, cpumax, rmem []byte, conns, msg, inflight int, share float64) {
		fsys := fstest.MapFS{
			"sys/devices/system/cpu/online": {Data: online},
			"proc/meminfo":                  {Data: meminfo},
			"proc/self/limits":              {Data: limits},
			"proc/self/cgroup":              {Data: cgroup},
			"sys/fs/cgroup/a/cpu.max":       {Data: cpumax},
			"sys/fs/cgroup/a/memory.max":    {Data: cpumax},
			"proc/sys/net/ipv4/tcp_rmem":    {Data: rmem},
			"proc/sys/net/ipv4/tcp_mem":     {Data: rmem},
			"proc/sys/net/core/somaxconn":   {Data: online},
		}
		h := ReadHost(fsys, "fuzz")
		tg := Target{Conns: conns, MsgBytes: msg, InflightMsgs: inflight, MemShare: share}
		r, err := Plan(h, tg)
		if err != nil {
			if !errors.Is(err, ErrInvalidTarget) {
				t.Fatalf("Plan error %v is not ErrInvalidTarget", err)
			}
			return
		}
		b := r.Budgets
		if b.MaxConnsLow > b.MaxConns || b.OutQueueLowBytes >= b.OutQueueHighBytes || b.OutQueueBytes < 2*b.ReadBudgetBytes || b.Loops < 1 || b.Backlog < MinBacklog {
			t.Fatalf("bad budgets %+v", b)
		}
		if err := WriteText(io.Discard, r); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(io.Discard, r); err != nil {
			t.Fatal(err)
		}
	})
}
