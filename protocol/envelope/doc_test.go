package envelope

import (
	"bytes"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// docFrames extracts the example frames from the untagged code blocks of
// docs/ENVELOPE.md: on each line, the leading run of hex tokens.
func docFrames(t *testing.T, doc string) [][]byte {
	var frames [][]byte
	var cur []byte
	in := false
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case line == "```" && !in:
			in, cur = true, nil
			continue
		case strings.HasPrefix(line, "```") && !in:
			in, cur = true, []byte("skip")
			continue
		case line == "```" && in:
			if cur != nil && string(cur) != "skip" {
				frames = append(frames, cur)
			}
			in = false
			continue
		}
		if !in || string(cur) == "skip" {
			continue
		}
		for _, tok := range strings.Fields(line) {
			b, err := hex.DecodeString(tok)
			if err != nil {
				break
			}
			cur = append(cur, b...)
		}
	}
	return frames
}

// TestDocExamples checks that the examples in docs/ENVELOPE.md are exactly
// the golden frames, in order, so the page cannot drift from the code.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/ENVELOPE.md")
	if err != nil {
		t.Fatalf("docs/ENVELOPE.md: %v", err)
	}
	frames := docFrames(t, string(doc))
	if len(frames) != len(goldens) {
		t.Fatalf("docs/ENVELOPE.md has %d example frames; want %d", len(frames), len(goldens))
	}
	for i, g := range goldens {
		if want := mustHex(t, g.hex); !bytes.Equal(frames[i], want) {
			t.Errorf("%d %s: doc example\n%x\nwant\n%x", i, g.name, frames[i], want)
		}
	}
}
