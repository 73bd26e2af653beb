package httpecho

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicenet/sluice/protocol/http1"
)

// fuzzSeeds are the inputs of the committed corpora (see
// TestSeedCorpus): every respond case, a pipeline, and the decode cases.
func fuzzSeeds() [][]byte {
	var seeds [][]byte
	for _, tc := range respondCases {
		seeds = append(seeds, []byte(tc.in))
	}
	for _, tc := range decodeCases {
		seeds = append(seeds, []byte(tc.in))
	}
	in, _ := pipeline()
	return append(seeds, []byte(in))
}

// FuzzDecode checks Codec.Decode against the strict http1 Decode: it never
// fails and never consumes more than its input; where strict frames a
// request, Decode cuts the same frame; where strict fails, Decode either
// passes all of the input through or cuts a frame the handler refuses with
// the same status; and a frame the fast pass cut where strict wants more
// input is one the handler refuses.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	var c Codec
	strict := c.limited()
	h := NewHandler(Codec{Clock: fixedClock})
	f.Fuzz(func(t *testing.T, in []byte) {
		frame, n, err := c.Decode(in)
		if err != nil || n < 0 || n > len(in) || len(frame) != n || !bytes.Equal(frame, in[:n]) {
			t.Fatalf("Decode = %q, %d, %v", frame, n, err)
		}
		_, sn, serr := strict.Decode(in)
		switch {
		case serr != nil && n != len(in):
			// The fast pass cut a frame of a request strict refuses: the
			// handler's strict parse of the frame must refuse it too, with
			// the same status.
			_, closeAfter, cause := h.Respond(nil, frame, t0)
			if cause == nil || !closeAfter || http1.StatusFor(cause) != http1.StatusFor(serr) {
				t.Fatalf("strict error %v; Decode cut %d of %d bytes, which the handler answers with cause %v", serr, n, len(in), cause)
			}
		case serr == nil && sn > 0 && n != sn:
			t.Fatalf("strict frames %d bytes, Decode %d", sn, n)
		case serr == nil && sn == 0 && n > 0:
			if _, closeAfter, cause := h.Respond(nil, frame, t0); cause == nil || !closeAfter {
				t.Fatalf("fast pass cut %d bytes strict needs more of, and the handler accepted them", n)
			}
		}
	})
}

// FuzzServe serves an input as one read and as two reads split at any
// point: the responses must be byte for byte the same, each a complete
// HTTP/1.1 response, and a malformed request must close the connection.
func FuzzServe(f *testing.F) {
	for i, s := range fuzzSeeds() {
		f.Add(s, uint16(i*7))
	}
	h := NewHandler(Codec{Clock: fixedClock})
	f.Fuzz(func(t *testing.T, in []byte, split uint16) {
		whole, closedWhole := serveStream(t, h, in)
		k := 0
		if len(in) > 0 {
			k = int(split) % (len(in) + 1)
		}
		parts, closedParts := serveStream(t, h, in[:k], in[k:])
		if !bytes.Equal(whole, parts) || closedWhole != closedParts {
			t.Fatalf("split at %d changes the responses:\n%q (closed %v)\n%q (closed %v)", k, whole, closedWhole, parts, closedParts)
		}
		if len(whole) > 0 && (!bytes.HasPrefix(whole, []byte("HTTP/1.1 ")) || !bytes.Contains(whole, []byte("\r\n\r\n"))) {
			t.Fatalf("not an HTTP/1.1 response: %q", whole)
		}
		out, closeAfter, cause := h.Respond(nil, in, t0)
		if cause != nil && (!closeAfter || http1.StatusFor(cause) < 400) {
			t.Fatalf("malformed frame: closeAfter %v, cause %v, %q", closeAfter, cause, out)
		}
		if !bytes.HasPrefix(out, []byte("HTTP/1.1 ")) {
			t.Fatalf("Respond wrote %q", out)
		}
	})
}

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the committed fuzz seed corpus from fuzzSeeds")

// corpusFile is a seed in Go's corpus file format.
func corpusFile(args ...any) []byte {
	b := []byte("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			b = fmt.Appendf(b, "[]byte(%q)\n", v)
		case uint16:
			b = fmt.Appendf(b, "uint16(%d)\n", v)
		}
	}
	return b
}

// TestSeedCorpus keeps testdata/fuzz in step with fuzzSeeds (go test
// -run TestSeedCorpus -update-corpus rewrites it), so CI's short fuzz runs
// start from every seed.
func TestSeedCorpus(t *testing.T) {
	for i, s := range fuzzSeeds() {
		files := map[string][]byte{
			filepath.Join("testdata", "fuzz", "FuzzDecode", fmt.Sprintf("seed-%02d", i)): corpusFile(s),
			filepath.Join("testdata", "fuzz", "FuzzServe", fmt.Sprintf("seed-%02d", i)):  corpusFile(s, uint16(i*7)),
		}
		for path, want := range files {
			if *updateCorpus {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: committed seed missing or stale (%v); run with -update-corpus", path, err)
			}
		}
	}
}
