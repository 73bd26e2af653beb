package loadcmd

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/sluicenet/sluice/bench"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// maxNines is how far right the percentile axis goes: 99.999% (five nines).
const maxNines = 5

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
// histogram's value at each percentile, on an axis of nines (0%, 90%, 99%,
// ... 99.999%), as HdrHistogram's plotter draws it, with the run's shape in
// the title.
func WriteLatencyChart(w io.Writer, res *bench.LoadResult) error {
	if res.HistogramV2 == "" {
		return errNoHistogram
	}
	h, err := hdrhistogram.Decode([]byte(res.HistogramV2))
	if err != nil {
		return fmt.Errorf("sluice: load: histogram: %w", err)
	}
	if h.TotalCount() == 0 {
		return errNoHistogram
	}
	pts := make(plotter.XYs, 0, maxNines*20+1)
	for i := 0; i <= maxNines*20; i++ {
		x := float64(i) / 20 // nines: p = 1 - 10^-x
		p := 100 * (1 - math.Pow(10, -x))
		pts = append(pts, plotter.XY{X: x, Y: float64(h.ValueAtPercentile(p)) / 1e3})
	}
	p := plot.New()
	cfg := &res.Config
	p.Title.Text = fmt.Sprintf("%s loop, %s, %d conns × %d in flight × %s B: %.0f msg/s",
		res.Mode, cfg.Codec, cfg.Conns, cfg.InFlight, cfg.Size, res.MsgsPerSec)
	p.X.Label.Text = "percentile"
	p.Y.Label.Text = "latency (µs)"
	p.X.Tick.Marker = ninesTicks{}
	p.Add(plotter.NewGrid())
	line, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	line.Color = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	line.Width = vg.Points(1.5)
	p.Add(line)
	p.Y.Min = 0
	img := vgsvg.New(vg.Points(640), vg.Points(400))
	dc := draw.New(img)
	dc.SetColor(color.White) // viewers with dark themes
	dc.Fill(dc.Rectangle.Path())
	p.Draw(dc)
	_, err = img.WriteTo(w)
	return err
}

// ninesTicks labels the nines axis: 0%, 90%, 99%, 99.9%, ...
type ninesTicks struct{}

// Ticks returns a labelled tick at every whole number of nines.
func (ninesTicks) Ticks(lo, hi float64) []plot.Tick {
	labels := []string{"0%", "90%", "99%", "99.9%", "99.99%", "99.999%"}
	var ticks []plot.Tick
	for i, l := range labels {
		if x := float64(i); x >= lo && x <= hi {
			ticks = append(ticks, plot.Tick{Value: x, Label: l})
		}
	}
	return ticks
}
