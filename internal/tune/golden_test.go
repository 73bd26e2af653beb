package tune

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenCases are the fixture hosts (testdata/NAME, built by
// testdata/mkfixtures.sh) and the target each is planned for.
var goldenCases = []struct {
	name string
	args []string
}{
	{"small", []string{"-conns", "10000"}},
	{"large", []string{"-conns", "500000", "-msg-bytes", "1KiB", "-inflight", "8", "-conn-rate", "20000", "-rate", "2000000"}},
	{"container", []string{"-conns", "50000", "-msg-bytes", "256", "-mem-share", "0.8"}},
	{"broken", nil},
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases {
		for _, format := range []string{"txt", "json"} {
			t.Run(tc.name+"."+format, func(t *testing.T) {
				args := append([]string{"-root", filepath.Join("testdata", tc.name)}, tc.args...)
				if format == "json" {
					args = append(args, "-json")
				}
				var stdout, stderr bytes.Buffer
				if code := Main(args, &stdout, &stderr, DirFS); code != 0 {
					t.Fatalf("Main(%q) = %d, stderr %q", args, code, stderr.String())
				}
				if stderr.Len() > 0 {
					t.Errorf("stderr: %q", stderr.String())
				}
				golden := filepath.Join("testdata", tc.name+"."+format+".golden")
				if *update {
					if err := os.WriteFile(golden, stdout.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test ./internal/tune -run TestGolden -update)", err)
				}
				if !bytes.Equal(stdout.Bytes(), want) {
					t.Errorf("output differs from %s (rerun with -update if the change is intended):\n%s", golden, diff(string(want), stdout.String()))
				}
				if format == "json" {
					var r Report
					if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
						t.Fatalf("JSON does not decode into Report: %v", err)
					}
					if r.Host.Root != filepath.Join("testdata", tc.name) || len(r.Settings) == 0 || r.Config == "" {
						t.Errorf("decoded report is incomplete: root %q, %d settings", r.Host.Root, len(r.Settings))
					}
				}
			})
		}
	}
}

// diff shows the first differing line of two texts with a little context.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl
		}
	}
	return "(no line differs)"
}

// TestFixtureHosts pins what ReadHost finds in each fixture, independently
// of the report's wording.
func TestFixtureHosts(t *testing.T) {
	tests := []struct {
		name         string
		cores        int
		coresWhy     string
		mem          int64
		memWhy       string
		soft, hard   int64
		quota        Status
		cgroupMem    Status
		missingCount int // sysctls not found
		badCount     int // sysctls malformed
	}{
		{"small", 1, "online CPUs", 1014600 << 10, "MemTotal", 1024, 4096, StatusOK, StatusOK, 0, 0},
		{"large", 64, "online CPUs", 256 << 30, "MemTotal", 1 << 20, 1 << 20, StatusOK, StatusOK, 0, 0},
		{"container", 2, "cgroup CPU quota 150000/100000 us = 1.50 cores, rounded up", 2 << 30, "cgroup memory limit", 65536, 65536, StatusOK, StatusOK, 4, 0},
		{"broken", 0, "unknown", 0, "unknown", 0, 0, StatusMalformed, StatusMissing, 13, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := ReadHost(DirFS(filepath.Join("testdata", tc.name)), tc.name)
			if h.CPU.Cores != tc.cores || !strings.HasPrefix(h.CPU.Why, tc.coresWhy) {
				t.Errorf("cores %d (%s), want %d (%s)", h.CPU.Cores, h.CPU.Why, tc.cores, tc.coresWhy)
			}
			if h.Memory.Bytes != tc.mem || !strings.HasPrefix(h.Memory.Why, tc.memWhy) {
				t.Errorf("memory %d (%s), want %d (%s)", h.Memory.Bytes, h.Memory.Why, tc.mem, tc.memWhy)
			}
			soft, _ := h.NoFile.Int(0)
			hard, _ := h.NoFile.Int(1)
			if soft != tc.soft || hard != tc.hard {
				t.Errorf("nofile %d/%d, want %d/%d", soft, hard, tc.soft, tc.hard)
			}
			if h.CPU.Quota.Status != tc.quota || h.Memory.Cgroup.Status != tc.cgroupMem {
				t.Errorf("cgroup cpu %s, mem %s; want %s, %s", h.CPU.Quota.Status, h.Memory.Cgroup.Status, tc.quota, tc.cgroupMem)
			}
			var missing, bad int
			for name, r := range h.Sysctls {
				switch r.Status {
				case StatusMissing:
					missing++
				case StatusMalformed:
					bad++
				case StatusOK:
				default:
					t.Errorf("%s: status %s", name, r.Status)
				}
			}
			if missing != tc.missingCount || bad != tc.badCount {
				t.Errorf("sysctls missing %d, malformed %d; want %d, %d", missing, bad, tc.missingCount, tc.badCount)
			}
		})
	}
}
