package bench

import (
	"testing"
)

// FuzzNextResponse: the response decoder never panics, never consumes more
// than its input, returns a payload inside the input, and decodes what
// appendRequest encodes.
func FuzzNextResponse(f *testing.F) {
	f.Add(uint8(1), []byte("\x00\x00\x00\x03abc"))
	f.Add(uint8(2), []byte("0000000000000001xx\nrest"))
	f.Add(uint8(1), []byte("\xff\xff\xff\xff"))
	f.Add(uint8(2), []byte(""))
	f.Fuzz(func(t *testing.T, codec uint8, buf []byte) {
		c := Codec(codec%2 + 1) // length or line
		payload, n, err := nextResponse(c, buf)
		if err != nil {
			if n != 0 || payload != nil {
				t.Fatalf("error with n %d", n)
			}
			return
		}
		if n < 0 || n > len(buf) {
			t.Fatalf("consumed %d of %d", n, len(buf))
		}
		if n > 0 && c.WireBytes(len(payload)) != n {
			t.Fatalf("payload %d bytes from %d wire bytes", len(payload), n)
		}
		// Round trip: a request built from the payload's size decodes back.
		if len(payload) <= 4096 {
			req := appendRequest(nil, c, 42, len(payload)+16, newFiller(len(payload)+16))
			p2, n2, err := nextResponse(c, req)
			if err != nil || n2 != len(req) || checkResponse(c, p2, 42, len(payload)+16, newFiller(len(payload)+16)) != nil {
				t.Fatalf("round trip: n %d of %d, err %v", n2, len(req), err)
			}
		}
	})
}

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
