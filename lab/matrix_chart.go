package lab

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"time"

	"github.com/sluicenet/sluice/bench"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// WriteMatrixChart draws one mode and connection count of the matrix: a
// row per server, goodput ÷ capacity on the left and admitted p99 ÷
// reference p99 (log scale) on the right, against the offered load; one
// line per work per frame, the same colour in every panel, error bars from
// the smallest to the largest round, the targets dashed.
func (rep *MatrixReport) WriteMatrixChart(w io.Writer, mode string, conns int) error {
	var cells []*MatrixCell
	for i := range rep.Cells {
		if c := &rep.Cells[i]; c.Mode == mode && c.Conns == conns && c.Rounds > 0 {
			cells = append(cells, c)
		}
	}
	if len(cells) == 0 {
		return fmt.Errorf("%w: no %s cells with %d connections to chart", bench.ErrInvalidConfig, mode, conns)
	}
	servers := distinct(cells, func(c *MatrixCell) string { return c.Server })
	works := distinct(cells, func(c *MatrixCell) time.Duration { return c.Work })
	factors := distinct(cells, func(c *MatrixCell) float64 { return c.Factor })
	plots := make([][]*plot.Plot, len(servers))
	for row, srv := range servers {
		good, p99 := matrixPanel(srv+": goodput ÷ capacity", factors), matrixPanel(srv+": admitted p99 ÷ p99 at "+factorText(rep.Config.RefFraction), factors)
		good.Y.Label.Text = "goodput ÷ capacity"
		good.Y.Tick.Marker = percentTicks{}
		good.Legend.Top = false // goodput is high where it is good
		p99.Y.Label.Text = "p99 ÷ reference (log)"
		p99.Y.Scale = plot.LogScale{}
		p99.Y.Tick.Marker = ratioTicks{}
		gmax, plo, phi := 1.05, MatrixP99Target, MatrixP99Target
		for i, wk := range works {
			var gs, ps []matrixPoint
			for _, c := range cells {
				if c.Server != srv || c.Work != wk {
					continue
				}
				// Spread the works a little along x so that their error
				// bars do not hide each other.
				x := c.Factor * (1 + 0.03*(float64(i)-float64(len(works)-1)/2))
				gs = append(gs, matrixPoint{x: x, s: c.GoodputRatio})
				gmax = max(gmax, c.GoodputRatio.Max+0.05)
				if c.P99Ratio.Median > 0 {
					ps = append(ps, matrixPoint{x: x, s: c.P99Ratio})
					plo, phi = math.Min(plo, positiveMin(c.P99Ratio)), math.Max(phi, c.P99Ratio.Max)
				}
			}
			col, shape := plotutil.Color(i), plotutil.Shape(i)
			if err := addSeries(good, workText(wk), gs, col, shape); err != nil {
				return err
			}
			if err := addSeries(p99, "", ps, col, shape); err != nil {
				return err
			}
		}
		good.Y.Min, good.Y.Max = 0, gmax
		p99.Y.Min = math.Pow(10, math.Floor(math.Log10(plo)))
		p99.Y.Max = math.Pow(10, math.Ceil(math.Log10(phi*1.5)))
		if err := addTarget(good, MatrixGoodputTarget); err != nil {
			return err
		}
		if err := addTarget(p99, MatrixP99Target); err != nil {
			return err
		}
		plots[row] = []*plot.Plot{good, p99}
	}
	title := fmt.Sprintf("%s work, %d connections: medians, bars min–max, targets dashed", mode, conns)
	return drawTiles(w, plots, vg.Points(330), vg.Points(230), title)
}

// matrixPoint is one cell's spread at offered load x.
type matrixPoint struct {
	x float64
	s Spread
}

// matrixPoints is a series for a line, its scatter and its error bars;
// the lower bar stops at the median where the minimum is not positive (a
// log axis has no room for it).
type matrixPoints []matrixPoint

func (p matrixPoints) Len() int                    { return len(p) }
func (p matrixPoints) XY(i int) (float64, float64) { return p[i].x, p[i].s.Median }
func (p matrixPoints) YError(i int) (float64, float64) {
	lo := p[i].s.Median - p[i].s.Min
	if p[i].s.Min <= 0 {
		lo = 0
	}
	return lo, p[i].s.Max - p[i].s.Median
}

func positiveMin(s Spread) float64 {
	if s.Min > 0 {
		return s.Min
	}
	return s.Median
}

// matrixPanel is an empty panel with the offered load on a logarithmic
// x axis (2×, 5× and 10× evenly apart).
func matrixPanel(title string, factors []float64) *plot.Plot {
	lo, hi := math.Inf(1), 0.0
	for _, f := range factors {
		lo, hi = math.Min(lo, f), math.Max(hi, f)
	}
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(10)
	p.X.Label.Text = "offered load (× capacity, log)"
	p.X.Scale = plot.LogScale{}
	p.X.Min, p.X.Max = lo/1.3, hi*1.3
	p.X.Tick.Marker = factorTicks(factors)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(6)
	p.Legend.YOffs = vg.Points(4)
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	return p
}

// addSeries adds a line with points and error bars, named in the legend
// unless name is empty.
func addSeries(p *plot.Plot, name string, pts []matrixPoint, col color.Color, shape draw.GlyphDrawer) error {
	if len(pts) == 0 {
		return nil
	}
	line, scatter, err := plotter.NewLinePoints(matrixPoints(pts))
	if err != nil {
		return err
	}
	line.Color, line.Width = col, vg.Points(1.5)
	scatter.Color, scatter.Radius, scatter.Shape = col, vg.Points(3), shape
	eb, err := plotter.NewYErrorBars(matrixPoints(pts))
	if err != nil {
		return err
	}
	eb.LineStyle.Color = col
	p.Add(line, scatter, eb)
	if name != "" {
		p.Legend.Add(name, line, scatter)
	}
	return nil
}

// addTarget draws a dashed grey line at y across the panel; the axis
// labels y.
func addTarget(p *plot.Plot, y float64) error {
	l, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: y}, {X: p.X.Max, Y: y}})
	if err != nil {
		return err
	}
	l.Color, l.Width = color.Gray{Y: 110}, vg.Points(1)
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(l)
	return nil
}

// factorTicks labels the offered loads the matrix ran.
type factorTicks []float64

func (f factorTicks) Ticks(lo, hi float64) []plot.Tick {
	var t []plot.Tick
	for _, v := range f {
		if v >= lo && v <= hi {
			t = append(t, plot.Tick{Value: v, Label: factorText(v)})
		}
	}
	return t
}

// percentTicks labels a ratio axis in percent every 25% and at the
// goodput target.
type percentTicks struct{}

func (percentTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for v := 0.0; v <= hi+1e-9; v += 0.25 {
		if v >= lo {
			ticks = append(ticks, plot.Tick{Value: v, Label: fmt.Sprintf("%.0f%%", 100*v)})
		}
	}
	if MatrixGoodputTarget >= lo && MatrixGoodputTarget <= hi {
		ticks = append(ticks, plot.Tick{Value: MatrixGoodputTarget, Label: fmt.Sprintf("%.0f%%", 100*MatrixGoodputTarget)})
	}
	return ticks
}

// ratioTicks labels a logarithmic ratio axis at every decade (0.1×, 1×,
// 10×) and at the p99 target, with unlabelled ticks at 2-9 times each
// decade.
type ratioTicks struct{}

func (ratioTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	if lo <= 0 || hi <= lo {
		return ticks
	}
	for d := math.Pow(10, math.Floor(math.Log10(lo))); d <= hi; d *= 10 {
		if d >= lo {
			ticks = append(ticks, plot.Tick{Value: d, Label: trimZero(fmt.Sprintf("%.3f", d)) + "×"})
		}
		for m := 2.0; m < 10; m++ {
			if v := m * d; v >= lo && v <= hi {
				t := plot.Tick{Value: v}
				if v == MatrixP99Target {
					t.Label = timesText(v) + "×"
				}
				ticks = append(ticks, t)
			}
		}
	}
	return ticks
}
