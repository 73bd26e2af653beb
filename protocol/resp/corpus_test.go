package resp_test

import (
	"flag"
	"testing"

	"github.com/sluicenet/sluice/internal/fuzzseed"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz seed files from seedCorpus")

// TestSeedCorpus checks that every seed in seedCorpus is committed, byte for
// byte, under testdata/fuzz (or rewrites them with -update-corpus). After
// changing seedCorpus run:
//
//	go test -run TestSeedCorpus ./protocol/resp -args -update-corpus
func TestSeedCorpus(t *testing.T) {
	if err := fuzzseed.Sync(fuzzseed.Dir, seedCorpus, *updateCorpus); err != nil {
		t.Error(err)
	}
}
