package bench

import (
	"errors"
	"testing"
)

func TestMergeHistogramsEqualsOneHistogram(t *testing.T) {
	// Three loops record disjoint parts of one stream; the merge must be the
	// histogram of the whole stream.
	all := NewLatencyHistogram()
	parts := []*hdrHist{NewLatencyHistogram(), NewLatencyHistogram(), NewLatencyHistogram()}
	for i := int64(0); i < 30000; i++ {
		v := 1000 + (i*7919)%2_000_000 // 1 µs .. 2 ms, scattered
		if i%997 == 0 {
			v = 50_000_000 + i // a tail of 50 ms values
		}
		recordNanos(all, v)
		recordNanos(parts[i%3], v)
	}
	merged := MergeHistograms(parts[0], nil, parts[1], parts[2])
	if merged.TotalCount() != all.TotalCount() {
		t.Fatalf("merged count %d, want %d", merged.TotalCount(), all.TotalCount())
	}
	if !merged.Equals(all) {
		t.Fatalf("merged histogram differs from the histogram of the whole stream")
	}
	got, want := Summarize(merged), Summarize(all)
	if got != want {
		t.Fatalf("summary %+v, want %+v", got, want)
	}
	if got.P999Micros < 50_000 || got.MaxMicros < 50_000 {
		t.Fatalf("tail lost in merge: %+v", got)
	}
}

func TestRecordNanosClamps(t *testing.T) {
	h := NewLatencyHistogram()
	for i, v := range []int64{-5, 0, 1, HistogramMaxNanos, HistogramMaxNanos * 10} {
		recordNanos(h, v)
		if h.TotalCount() != int64(i+1) {
			t.Fatalf("%d: value %d dropped (count %d)", i, v, h.TotalCount())
		}
	}
	if h.Min() != 1 {
		t.Fatalf("min %d, want 1", h.Min())
	}
	if !h.ValuesAreEquivalent(h.Max(), HistogramMaxNanos) {
		t.Fatalf("max %d, want about %d", h.Max(), int64(HistogramMaxNanos))
	}
}

func TestSummarizeEmpty(t *testing.T) {
	if s := Summarize(NewLatencyHistogram()); s != (LatencySummary{}) {
		t.Fatalf("empty summary %+v", s)
	}
	if s := Summarize(nil); s != (LatencySummary{}) {
		t.Fatalf("nil summary %+v", s)
	}
}

func TestSummarizePercentiles(t *testing.T) {
	h := NewLatencyHistogram()
	for i := int64(1); i <= 1000; i++ {
		recordNanos(h, i*1000) // 1..1000 µs
	}
	s := Summarize(h)
	for i, c := range []struct{ got, want float64 }{
		{s.P50Micros, 500}, {s.P90Micros, 900}, {s.P99Micros, 990}, {s.P999Micros, 999}, {s.MaxMicros, 1000},
	} {
		if c.got < c.want*0.999 || c.got > c.want*1.001 {
			t.Errorf("%d: got %v µs, want %v µs ±0.1%%", i, c.got, c.want)
		}
	}
}

// TestEncodeDecodeHistogram: a histogram survives EncodeHistogram and
// DecodeHistogram whole, and merges with others after it; text that is
// not a histogram is an error.
func TestEncodeDecodeHistogram(t *testing.T) {
	a, b := NewLatencyHistogram(), NewLatencyHistogram()
	for i := int64(1); i <= 1000; i++ {
		recordNanos(a, i*1000)
		recordNanos(b, i*1_000_000)
	}
	enc, err := EncodeHistogram(a)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeHistogram(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equals(a) {
		t.Fatalf("decoded histogram differs: %+v, want %+v", Summarize(got), Summarize(a))
	}
	if s, want := Summarize(MergeHistograms(got, b)), Summarize(MergeHistograms(a, b)); s != want {
		t.Fatalf("merged after decoding %+v, want %+v", s, want)
	}
	for _, bad := range []string{"", "not base64!", "AAAA"} {
		if _, err := DecodeHistogram(bad); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("DecodeHistogram(%q): %v, want ErrInvalidConfig", bad, err)
		}
	}
}
