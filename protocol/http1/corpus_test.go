package http1_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz seed files from seedCorpus")

// seed is one named seed corpus entry: the arguments of a fuzz target.
type seed struct {
	name string
	args []any
}

// corpusFile renders args in Go's fuzz corpus format.
func corpusFile(args []any) []byte {
	var b bytes.Buffer
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		default:
			fmt.Fprintf(&b, "%T(%v)\n", v, v)
		}
	}
	return b.Bytes()
}

// TestSeedCorpus checks that every seed in seedCorpus is committed, byte for
// byte, under testdata/fuzz (or rewrites them with -update-corpus). After
// changing seedCorpus run:
//
//	go test -run TestSeedCorpus ./protocol/http1 -args -update-corpus
func TestSeedCorpus(t *testing.T) {
	for target, seeds := range seedCorpus {
		for i, s := range seeds {
			path := filepath.Join("testdata", "fuzz", target, s.name)
			want := corpusFile(s.args)
			if *updateCorpus {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s %d %s: committed seed missing or stale (%v); run with -update-corpus", target, i, s.name, err)
			}
		}
	}
}
