package tune

import (
	"errors"
	"reflect"
	"testing"
)

func TestParseInts(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want []int64
		bad  bool
	}{
		{"4096\t131072\t6291456\n", 3, []int64{4096, 131072, 6291456}, false},
		{"128\n", 1, []int64{128}, false},
		{"  7 ", 1, []int64{7}, false},
		{"-1\n", 1, []int64{-1}, false},
		{"", 1, nil, true},
		{"4096 87380\n", 3, nil, true},
		{"1 2 3 4", 3, nil, true},
		{"12x\n", 1, nil, true},
		{"99999999999999999999\n", 1, nil, true},
	}
	for i, tc := range tests {
		got, err := parseInts(tc.in, tc.n)
		if tc.bad {
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%d: parseInts(%q) err = %v, want ErrMalformed", i, tc.in, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%d: parseInts(%q) = %v, %v; want %v", i, tc.in, got, err, tc.want)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want int
		bad  bool
	}{
		{"0\n", 1, false},
		{"0-1\n", 2, false},
		{"0-3,8,10-11", 7, false},
		{"0-63\n", 64, false},
		{"", 0, true},
		{"\n", 0, true},
		{"0-1,x", 0, true},
		{"3-1", 0, true},
		{"-1", 0, true},
		{"0-", 0, true},
		{"0,,1", 0, true},
		{"0-99999999", 0, true},
		{"0-65535,0-65535", 0, true}, // would count past maxCPUs
	}
	for i, tc := range tests {
		got, err := parseCPUList(tc.in)
		if tc.bad {
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%d: parseCPUList(%q) = %d, %v; want ErrMalformed", i, tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%d: parseCPUList(%q) = %d, %v; want %d", i, tc.in, got, err, tc.want)
		}
	}
}

func TestCountProcessors(t *testing.T) {
	tests := []struct {
		in   string
		want int
		bad  bool
	}{
		{"processor\t: 0\nmodel name\t: x\n\nprocessor\t: 1\n", 2, false},
		{"processor : 0\n", 1, false},
		// arm64 kernels print a "Processor" header line in some versions:
		// only the lower-case key counts stanzas.
		{"Processor\t: AArch64\nprocessor\t: 0\n", 1, false},
		{"model name\t: x\n", 0, true},
		{"", 0, true},
	}
	for i, tc := range tests {
		got, err := countProcessors([]byte(tc.in))
		if tc.bad != (err != nil) || got != tc.want {
			t.Errorf("%d: countProcessors(%q) = %d, %v; want %d (bad %v)", i, tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestParseMeminfo(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		bad  bool
	}{
		{"MemTotal:       24683620 kB\nMemFree: 1 kB\n", 24683620 * 1024, false},
		{"MemFree: 1 kB\nMemTotal: 1024 kB\n", 1 << 20, false},
		{"MemTotal: 4096\n", 4096, false}, // no unit: bytes
		{"MemTotal:       lots kB\n", 0, true},
		{"MemTotal: 1 MB\n", 0, true},
		{"MemTotal:\n", 0, true},
		{"MemTotal: -5 kB\n", 0, true},
		{"MemTotal: 9223372036854775807 kB\n", 0, true}, // overflows in bytes
		{"MemFree: 1 kB\n", 0, true},
		{"", 0, true},
	}
	for i, tc := range tests {
		got, err := parseMeminfo([]byte(tc.in), "MemTotal")
		if tc.bad != (err != nil) || got != tc.want {
			t.Errorf("%d: parseMeminfo(%q) = %d, %v; want %d (bad %v)", i, tc.in, got, err, tc.want, tc.bad)
		}
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Errorf("%d: err %v is not ErrMalformed", i, err)
		}
	}
}

func TestParseNoFile(t *testing.T) {
	const head = "Limit                     Soft Limit           Hard Limit           Units     \n"
	tests := []struct {
		in         string
		soft, hard int64
		bad        bool
	}{
		{head + "Max open files            20000                20000                files     \n", 20000, 20000, false},
		{head + "Max open files            1024                 4096                 files     \n", 1024, 4096, false},
		{head + "Max open files            unlimited            unlimited            files     \n", Unlimited, Unlimited, false},
		{head + "Max open files            1024                 unlimited            files     \n", 1024, Unlimited, false},
		{head + "Max open files            4096                 1024                 files     \n", 0, 0, true},
		{head + "Max open files            many                 1024                 files     \n", 0, 0, true},
		{head + "Max open files            1024\n", 0, 0, true},
		{head + "Max stack size            8388608              unlimited            bytes\n", 0, 0, true},
		{"", 0, 0, true},
	}
	for i, tc := range tests {
		s, h, err := parseNoFile([]byte(tc.in))
		if tc.bad != (err != nil) || s != tc.soft || h != tc.hard {
			t.Errorf("%d: parseNoFile = %d, %d, %v; want %d, %d (bad %v)", i, s, h, err, tc.soft, tc.hard, tc.bad)
		}
	}
}

func TestParseCPUMax(t *testing.T) {
	tests := []struct {
		in            string
		quota, period int64
		bad           bool
	}{
		{"max 100000\n", Unlimited, 100000, false},
		{"150000 100000\n", 150000, 100000, false},
		{"max\n", 0, 0, true},
		{"abc 100000\n", 0, 0, true},
		{"0 100000\n", 0, 0, true},
		{"100000 0\n", 0, 0, true},
		{"", 0, 0, true},
	}
	for i, tc := range tests {
		q, p, err := parseCPUMax(tc.in)
		if tc.bad != (err != nil) || q != tc.quota || p != tc.period {
			t.Errorf("%d: parseCPUMax(%q) = %d, %d, %v; want %d, %d (bad %v)", i, tc.in, q, p, err, tc.quota, tc.period, tc.bad)
		}
	}
}

func TestParseCFS(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		bad  bool
	}{
		{"-1\n", Unlimited, false},
		{"200000\n", 200000, false},
		{"0\n", 0, true},
		{"-2\n", 0, true},
		{"x\n", 0, true},
	}
	for i, tc := range tests {
		got, err := parseCFSQuota(tc.in)
		if tc.bad != (err != nil) || got != tc.want {
			t.Errorf("%d: parseCFSQuota(%q) = %d, %v; want %d (bad %v)", i, tc.in, got, err, tc.want, tc.bad)
		}
	}
	if p, err := parseCFSPeriod("100000\n"); err != nil || p != 100000 {
		t.Errorf("parseCFSPeriod = %d, %v", p, err)
	}
	if _, err := parseCFSPeriod("-1\n"); !errors.Is(err, ErrMalformed) {
		t.Errorf("parseCFSPeriod(-1) err = %v, want ErrMalformed", err)
	}
}

func TestParseMemoryMax(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		bad  bool
	}{
		{"max\n", Unlimited, false},
		{"2147483648\n", 2 << 30, false},
		{"9223372036854771712\n", Unlimited, false}, // cgroup v1 "no limit"
		{"0\n", 0, false},
		{"-1\n", 0, true},
		{"2G\n", 0, true},
		{"", 0, true},
	}
	for i, tc := range tests {
		got, err := parseMemoryMax(tc.in)
		if tc.bad != (err != nil) || got != tc.want {
			t.Errorf("%d: parseMemoryMax(%q) = %d, %v; want %d (bad %v)", i, tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestParseCgroup(t *testing.T) {
	got, err := parseCgroup([]byte("12:memory:/a/b\n4:cpu,cpuacct:/a\n0::/c\n\n"))
	want := []cgroupLine{
		{controllers: []string{"memory"}, path: "/a/b"},
		{controllers: []string{"cpu", "cpuacct"}, path: "/a"},
		{controllers: nil, path: "/c"},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("parseCgroup = %+v, %v; want %+v", got, err, want)
	}
	for i, bad := range []string{"0::c\n", "x::/\n", "0:/\n", "garbage\n"} {
		if _, err := parseCgroup([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%d: parseCgroup(%q) err = %v, want ErrMalformed", i, bad, err)
		}
	}
}

func TestCgroupCandidates(t *testing.T) {
	tests := []struct {
		mount, path string
		want        []string
	}{
		{"sys/fs/cgroup", "", []string{"sys/fs/cgroup"}},
		{"sys/fs/cgroup", "/", []string{"sys/fs/cgroup"}},
		{"sys/fs/cgroup", "/a/b", []string{"sys/fs/cgroup/a/b", "sys/fs/cgroup/a", "sys/fs/cgroup"}},
		{"sys/fs/cgroup/memory", "/../../etc", []string{"sys/fs/cgroup/memory/etc", "sys/fs/cgroup/memory"}},
	}
	for i, tc := range tests {
		if got := cgroupCandidates(tc.mount, tc.path); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%d: cgroupCandidates(%q, %q) = %q; want %q", i, tc.mount, tc.path, got, tc.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		bad  bool
	}{
		{"512", 512, false},
		{"4KiB", 4096, false},
		{"4K", 4096, false},
		{"1.5GiB", 3 << 29, false},
		{"2 GiB", 2 << 30, false},
		{"10B", 10, false},
		{"", 0, true},
		{"GiB", 0, true},
		{"-1", 0, true},
		{"1XB", 0, true},
		{"NaN", 0, true},
		{"1e30", 0, true},
	}
	for i, tc := range tests {
		got, err := parseSize(tc.in)
		if tc.bad != (err != nil) || got != tc.want {
			t.Errorf("%d: parseSize(%q) = %d, %v; want %d (bad %v)", i, tc.in, got, err, tc.want, tc.bad)
		}
		if err != nil && !errors.Is(err, ErrUsage) {
			t.Errorf("%d: err %v is not ErrUsage", i, err)
		}
	}
}

func TestHostErrorIs(t *testing.T) {
	err := malformed("what", "text")
	if !errors.Is(err, ErrMalformed) || errors.Is(err, ErrMissing) {
		t.Fatalf("malformed error %v: Is(ErrMalformed) must hold, Is(ErrMissing) must not", err)
	}
	r := failed("proc/x", err)
	if r.Status != StatusMalformed || r.Path != "proc/x" || r.OK() {
		t.Fatalf("failed() = %+v", r)
	}
	if want := `sluice: tune: malformed host value: proc/x: what: "text"`; r.Err.Error() != want {
		t.Fatalf("error text %q, want %q", r.Err.Error(), want)
	}
}
