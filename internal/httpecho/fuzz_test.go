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

// fuzzSeeds are the inputs of the committed FuzzServe corpus (see
// TestSeedCorpus): every respond case and a pipeline.
func fuzzSeeds() [][]byte {
	var seeds [][]byte
	for _, tc := range respondCases {
		seeds = append(seeds, []byte(tc.in))
	}
	in, _ := pipeline()
	return append(seeds, []byte(in))
}

// frozenSeeds is how many committed FuzzServe seeds follow the respond
// cases' and precede the pipeline's: the inputs of the decode cases, whose
// table moved to protocol/http1 with the codec (FuzzServerDecode). They
// stay committed as they are; TestSeedCorpus keeps the others in step.
const frozenSeeds = 20

// FuzzServe serves an input as one read and as two reads split at any
// point: the responses must be byte for byte the same, each a complete
// HTTP/1.1 response, and a malformed request must close the connection.
func FuzzServe(f *testing.F) {
	for i, s := range fuzzSeeds() {
		f.Add(s, uint16(i*7))
	}
	h := NewHandler(Codec{http1.ServerCodec{Clock: fixedClock}})
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
		k := i // the seed's number in the committed corpus
		if i == len(respondCases) {
			k += frozenSeeds
		}
		files := map[string][]byte{
			filepath.Join("testdata", "fuzz", "FuzzServe", fmt.Sprintf("seed-%02d", k)): corpusFile(s, uint16(k*7)),
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
