// Package fuzzseed keeps a package's committed fuzz seed corpus
// (testdata/fuzz/FuzzX/name) in step with a Go table of seeds.
//
// It owns the encoding of seed values in Go's corpus file format (a
// "go test fuzz v1" line, then one line per fuzz argument: []byte, string,
// bool, the sized and unsized ints and uints, float32 and float64), writing
// the files, and checking them: Check reports each missing or stale file
// with a line diff, CheckStrict also each file the table does not name.
//
// It refuses to own the tables themselves, the -update-corpus flag (each
// test package declares its own, so importing this package registers no
// flags), the fuzz targets, and deleting files: a file the table no longer
// names is reported by CheckStrict, never removed. Values are written as Go
// writes them except that uint8 and int32 stay uint8(N) and int32(N) rather
// than byte('c') and rune('c'); go test reads both forms.
//
// Usage, in a package's _test.go:
//
//	var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz seed files from seedCorpus")
//
//	var seedCorpus = fuzzseed.Corpus{
//		"FuzzDecode": {
//			{"empty", []any{[]byte{}, uint16(0)}},
//			{"one-frame", []any{[]byte("\x00\x00\x00\x03abc"), uint16(16)}},
//		},
//	}
//
//	func TestSeedCorpus(t *testing.T) {
//		if err := fuzzseed.Sync(fuzzseed.Dir, seedCorpus, *updateCorpus); err != nil {
//			t.Error(err)
//		}
//	}
//
// and after changing the table: go test -run TestSeedCorpus ./pkg -args -update-corpus.
package fuzzseed
