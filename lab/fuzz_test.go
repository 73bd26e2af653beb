package lab

import (
	"testing"
)

// FuzzParseStraceSummary: the strace table parser never panics and reports
// non-negative counts.
func FuzzParseStraceSummary(f *testing.F) {
	f.Add("% time     seconds  usecs/call     calls    errors syscall\n------ ---\n 52.10    0.171234           3     51234       120 read\n100.00 0.3 2 114234 120 total\n")
	f.Add("% x\n1 2 3 4 name\n1 2 3 -4 5 name\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		calls, err := parseStraceSummary(text)
		if err != nil {
			return
		}
		for _, c := range calls {
			if c.Calls < 0 || c.Errors < 0 || c.Name == "" || c.Name == "total" {
				t.Fatalf("bad line %+v", c)
			}
		}
	})
}

// FuzzParseScenario: scenario names never panic and parse to runnable shapes.
func FuzzParseScenario(f *testing.F) {
	for _, s := range []string{"64x1x64", "256x16x64", "64x1x4k", "8x2x64-128", "open50", "open", "1x1x0", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		s, err := ParseScenario(name)
		if err != nil {
			return
		}
		if s.Conns < 1 || s.InFlight < 1 || s.Size.Validate() != nil || s.Title == "" {
			t.Fatalf("%q parsed to %+v", name, s)
		}
	})
}
