package loadcmd

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/sluicenet/sluice/bench"
)

// TestWriteLatencyChart draws a known histogram (900 × 100 µs, 90 × 200 µs,
// 9 × 1 ms, 1 × 5 ms) and reads the SVG back: well-formed, titled with the
// run's shape, the nines on x, one point per twentieth of a nine from left to
// right, latency never falling, and p99.9 (1 ms) drawn at a fifth of p100's
// (5 ms) height.
func TestWriteLatencyChart(t *testing.T) {
	h := bench.NewLatencyHistogram()
	for _, r := range []struct{ n, us int64 }{{900, 100}, {90, 200}, {9, 1000}, {1, 5000}} {
		if err := h.RecordValues(r.us*1e3, r.n); err != nil {
			t.Fatal(err)
		}
	}
	enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	res := &bench.LoadResult{Mode: "closed", MsgsPerSec: 1234, HistogramV2: string(enc),
		Config: bench.LoadConfig{Codec: bench.CodecLength, Conns: 8, InFlight: 4, Size: bench.FixedSize(64)}}
	var out bytes.Buffer
	if err := WriteLatencyChart(&out, res); err != nil {
		t.Fatal(err)
	}
	svg := out.String()

	var points string
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			for _, a := range se.Attr {
				if a.Name.Local == "points" {
					points = a.Value
				}
			}
		}
	}
	for _, want := range append(ninesLabels[:], "closed loop, length, 8 conns × 4 in flight × 64 B: 1234 msg/s", "percentile", "latency (µs)") {
		if !strings.Contains(svg, ">"+want+"<") {
			t.Errorf("no text %q in the chart", want)
		}
	}

	fields := strings.Fields(points)
	if len(fields) != maxNines*pointsPerNine+1 {
		t.Fatalf("%d points, want %d", len(fields), maxNines*pointsPerNine+1)
	}
	xs, ys := make([]float64, len(fields)), make([]float64, len(fields))
	for i, f := range fields {
		x, y, ok := strings.Cut(f, ",")
		var errX, errY error
		xs[i], errX = strconv.ParseFloat(x, 64)
		ys[i], errY = strconv.ParseFloat(y, 64)
		if !ok || errX != nil || errY != nil {
			t.Fatalf("point %d: %q", i, f)
		}
	}
	bottom := float64(chartH - marginBot)
	if xs[0] != marginL || xs[len(xs)-1] != chartW-marginR {
		t.Errorf("x from %v to %v, want the plot area %d to %d", xs[0], xs[len(xs)-1], marginL, chartW-marginR)
	}
	for i := 1; i < len(xs); i++ {
		if xs[i] <= xs[i-1] || ys[i] > ys[i-1] {
			t.Fatalf("point %d (%v,%v) after (%v,%v): x must grow and latency must not fall", i, xs[i], ys[i], xs[i-1], ys[i-1])
		}
	}
	if ys[0] >= bottom || ys[len(ys)-1] < marginTop {
		t.Errorf("line from y %v to %v, outside the plot area %d to %v", ys[0], ys[len(ys)-1], marginTop, bottom)
	}
	p999, p100 := bottom-ys[3*pointsPerNine], bottom-ys[len(ys)-1]
	if r := p999 / p100; math.Abs(r-0.2) > 0.01 {
		t.Errorf("p99.9 drawn at %.3f of p100's height, want 0.2 (1 ms of 5 ms)", r)
	}
}

// TestWriteLatencyChartNoHistogram: a result without latencies has no chart.
func TestWriteLatencyChartNoHistogram(t *testing.T) {
	empty, err := bench.NewLatencyHistogram().Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range []*bench.LoadResult{{}, {HistogramV2: string(empty)}} {
		if err := WriteLatencyChart(io.Discard, res); !errors.Is(err, errNoHistogram) {
			t.Errorf("histogram %q: %v, want errNoHistogram", res.HistogramV2, err)
		}
	}
}

// TestYTicks: the y axis steps by 1, 2 or 5 times a power of ten, about five
// steps up to the first tick at or above the highest value.
func TestYTicks(t *testing.T) {
	for _, c := range []struct{ top, step, end float64 }{
		{0, 1, 1}, {4.2, 1, 5}, {123, 50, 150}, {5003, 2000, 6000}, {4999, 1000, 5000}, {0.3, 0.1, 0.3},
	} {
		step, end := yTicks(c.top)
		if math.Abs(step-c.step) > 1e-9*c.step || math.Abs(end-c.end) > 1e-9*c.end {
			t.Errorf("yTicks(%v) = %v, %v; want %v, %v", c.top, step, end, c.step, c.end)
		}
	}
}
