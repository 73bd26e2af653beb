package loadcmd

import (
	"bufio"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"strconv"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/sluicenet/sluice/bench"
)

// maxNines is how far right the percentile axis goes: 99.999% (five nines).
const maxNines = 5

// pointsPerNine is how many points of the line each nine of the x axis has.
const pointsPerNine = 20

// The chart's size and the plot area's margins, in SVG user units (pixels).
const (
	chartW, chartH                         = 640, 400
	marginL, marginR, marginTop, marginBot = 70, 20, 40, 50
)

// ninesLabels label the x axis at every whole number of nines.
var ninesLabels = [maxNines + 1]string{"0%", "90%", "99%", "99.9%", "99.99%", "99.999%"}

// errNoHistogram reports a result without the encoded histogram a chart
// needs.
var errNoHistogram = errors.New("sluice: load: the result has no latency histogram")

// writeChartFile writes res's latency chart to path.
func writeChartFile(path string, res *bench.LoadResult) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteLatencyChart(f, res); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// WriteLatencyChart writes res's latency by percentile as an SVG: the HDR
// histogram's value at each percentile (y, µs from 0), on a log axis of
// nines (x: 0%, 90%, 99%, ... 99.999%), with the run's shape in the title.
// A handshake-mode result is charted by its handshakes' latency.
func WriteLatencyChart(w io.Writer, res *bench.LoadResult) error {
	cfg := &res.Config
	enc := res.HistogramV2
	title := fmt.Sprintf("%s loop, %s, %d conns × %d in flight × %s B: %.0f msg/s",
		res.Mode, cfg.Codec, cfg.Conns, cfg.InFlight, cfg.Size, res.MsgsPerSec)
	if res.Mode == "handshakes" {
		// The handshake mode's subject is the handshake's latency, not its
		// one request's.
		enc = res.HandshakeHistogramV2
		title = fmt.Sprintf("handshakes, %s, %d workers: %.0f handshakes/s, %.0f%% resumed",
			cfg.Codec, cfg.Conns, res.HandshakesPerSec, 100*res.ResumedShare)
	}
	if enc == "" {
		return errNoHistogram
	}
	h, err := hdrhistogram.Decode([]byte(enc))
	if err != nil {
		return fmt.Errorf("sluice: load: histogram: %w", err)
	}
	if h.TotalCount() == 0 {
		return errNoHistogram
	}
	ys := make([]float64, 0, maxNines*pointsPerNine+1)
	for i := 0; i <= maxNines*pointsPerNine; i++ {
		x := float64(i) / pointsPerNine // nines: p = 1 - 10^-x
		ys = append(ys, float64(h.ValueAtPercentile(100*(1-math.Pow(10, -x))))/1e3)
	}
	return writeSVG(w, title, ys)
}

// writeSVG draws ys (µs, evenly spaced from 0 to maxNines nines) as a line
// under title, with a grid, the nines on x and latency from 0 on y.
func writeSVG(w io.Writer, title string, ys []float64) error {
	top := 0.0
	for _, y := range ys {
		top = max(top, y)
	}
	step, yMax := yTicks(top)
	plotW, plotH := float64(chartW-marginL-marginR), float64(chartH-marginTop-marginBot)
	px := func(nines float64) float64 { return marginL + nines/maxNines*plotW }
	py := func(us float64) float64 { return marginTop + plotH*(1-us/yMax) }

	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", chartW, chartH, chartW, chartH)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", chartW, chartH) // viewers with dark themes
	fmt.Fprintf(b, `<text x="%d" y="24" text-anchor="middle" font-size="14">%s</text>`+"\n", chartW/2, html.EscapeString(title))
	for i, label := range ninesLabels {
		x := px(float64(i))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, marginTop, x, marginTop+plotH)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, marginTop+plotH+16, label)
	}
	for i := 0; i <= int(math.Round(yMax/step)); i++ {
		v := float64(i) * step
		y := py(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", marginL, y, marginL+plotW, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", marginL-6, y+4, strconv.FormatFloat(v, 'g', 6, 64))
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="black"/>`+"\n", marginL, marginTop, plotW, plotH)
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">percentile</text>`+"\n", marginL+plotW/2, chartH-10)
	fmt.Fprintf(b, `<text x="16" y="%.1f" text-anchor="middle" transform="rotate(-90 16 %.1f)">latency (µs)</text>`+"\n", marginTop+plotH/2, marginTop+plotH/2)
	b.WriteString(`<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="`)
	for i, y := range ys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(b, "%.2f,%.2f", px(float64(i)*maxNines/float64(len(ys)-1)), py(y))
	}
	b.WriteString("\"/>\n</svg>\n")
	return b.Flush()
}

// yTicks returns the spacing of the y axis's ticks for values up to top (a
// 1, 2 or 5 times a power of ten, about five ticks) and the axis's end, the
// first tick at or above top.
func yTicks(top float64) (step, end float64) {
	if top <= 0 {
		return 1, 1
	}
	raw := top / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step = mag
	for _, m := range []float64{2, 5, 10} {
		if step >= raw {
			break
		}
		step = m * mag
	}
	return step, math.Ceil(top/step) * step
}
