package bench

import (
	"fmt"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Latency histograms record nanoseconds from 1 ns to HistogramMaxNanos at
// three significant digits (0.1% resolution), about 220 KiB each.
const (
	HistogramMaxNanos  = 60_000_000_000
	histogramSigDigits = 3
)

// NewLatencyHistogram returns an empty histogram with the geometry every
// latency histogram of this package uses, so they can be merged.
func NewLatencyHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, HistogramMaxNanos, histogramSigDigits)
}

// recordNanos records one latency, clamped to the histogram's range so that no
// value is ever dropped (a latency above the range is recorded as the range's
// top and still counts).
func recordNanos(h *hdrhistogram.Histogram, nanos int64) {
	if nanos < 1 {
		nanos = 1
	} else if nanos > HistogramMaxNanos {
		nanos = HistogramMaxNanos
	}
	_ = h.RecordValue(nanos) // in range by construction
}

// MergeHistograms returns a new histogram holding every value of hs. Each
// event loop of the generator records into its own histogram without locks;
// they are merged once, after the loops have stopped.
func MergeHistograms(hs ...*hdrhistogram.Histogram) *hdrhistogram.Histogram {
	out := NewLatencyHistogram()
	for _, h := range hs {
		if h != nil {
			out.Merge(h)
		}
	}
	return out
}

// EncodeHistogram returns h as LoadResult carries its histograms
// (HistogramV2, RejectHistogramV2): HdrHistogram V2 compressed, base64.
func EncodeHistogram(h *hdrhistogram.Histogram) (string, error) {
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// DecodeHistogram decodes a histogram EncodeHistogram (or a LoadResult)
// encoded, so that the results of several generators can be merged
// (MergeHistograms) and summarised (Summarize) as one. It returns an error
// wrapping ErrInvalidConfig for text that is not such a histogram.
func DecodeHistogram(s string) (*hdrhistogram.Histogram, error) {
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("%w: latency histogram: %v", ErrInvalidConfig, err)
	}
	return h, nil
}

// LatencySummary is the latency of a run in microseconds.
type LatencySummary struct {
	Count      int64   `json:"count"`
	MeanMicros float64 `json:"mean_us"`
	P50Micros  float64 `json:"p50_us"`
	P90Micros  float64 `json:"p90_us"`
	P99Micros  float64 `json:"p99_us"`
	P999Micros float64 `json:"p999_us"`
	MaxMicros  float64 `json:"max_us"`
}

// Summarize returns the count, mean, p50, p90, p99, p99.9 and maximum of h.
// An empty histogram gives a zero summary.
func Summarize(h *hdrhistogram.Histogram) LatencySummary {
	if h == nil || h.TotalCount() == 0 {
		return LatencySummary{}
	}
	v := h.ValueAtPercentilesSlice([]float64{50, 90, 99, 99.9})
	return LatencySummary{
		Count:      h.TotalCount(),
		MeanMicros: h.Mean() / 1e3,
		P50Micros:  float64(v[0]) / 1e3,
		P90Micros:  float64(v[1]) / 1e3,
		P99Micros:  float64(v[2]) / 1e3,
		P999Micros: float64(v[3]) / 1e3,
		MaxMicros:  float64(h.Max()) / 1e3,
	}
}
