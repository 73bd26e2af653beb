package procstat

import (
	"os"
	"runtime"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	// The command name may hold spaces and parentheses.
	stat := "4242 (my (odd) srv) S 1 4242 4242 0 -1 4194560 613 0 0 0 157 42 0 0 20 0 5 0 1234 0 0 0\n"
	got, err := parseProcStatCPU([]byte(stat))
	if err != nil || got != 199 {
		t.Fatalf("utime+stime = %d, %v; want 199", got, err)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 a b c"} {
		if _, err := parseProcStatCPU([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseStatusAndIO(t *testing.T) {
	status := "Name:\techo\nVmPeak:\t  10000 kB\nVmRSS:\t    6996 kB\nThreads:\t5\n"
	if v := parseStatusKiB([]byte(status), "VmRSS:"); v != 6996 {
		t.Fatalf("VmRSS %d", v)
	}
	if v := parseStatusKiB([]byte(status), "VmSwap:"); v != -1 {
		t.Fatalf("missing key gave %d", v)
	}
	io := "rchar: 100\nwchar: 200\nsyscr: 31\nsyscw: 17\nread_bytes: 0\n"
	if r, w := parseProcIO([]byte(io)); r != 31 || w != 17 {
		t.Fatalf("syscr %d syscw %d", r, w)
	}
}

func TestReadPeakRSS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	c, err := ReadProcCounters(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	hwm, err := ReadPeakRSSKiB(os.Getpid()) // after: the peak only grows
	if err != nil {
		t.Fatal(err)
	}
	if hwm <= 0 || hwm < c.RSSKiB {
		t.Fatalf("VmHWM %d KiB below VmRSS %d KiB", hwm, c.RSSKiB)
	}
}

func TestParseCoreTicks(t *testing.T) {
	stat := `cpu  100 0 50 1000 5 1 2 3 0 0
cpu0 10 1 20 300 4 5 6 7 0 0
cpu1 1 2 3 4 5 6 7 8 0 0
cpuX 1 2 3
intr 12345
`
	m := parseCoreTicks([]byte(stat))
	if len(m) != 2 {
		t.Fatalf("%d cpus parsed: %v", len(m), m)
	}
	if c := m[0]; c.Busy != 10+1+20+5+6 || c.Steal != 7 || c.Total != 42+300+4+7 {
		t.Fatalf("cpu0 %+v", c)
	}
}

func TestParseCPUList(t *testing.T) {
	got, err := ParseCPUList("0,2-4, 7")
	if err != nil || len(got) != 5 || got[0] != 0 || got[3] != 4 || got[4] != 7 {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"", "-1", "3-1", "a"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
