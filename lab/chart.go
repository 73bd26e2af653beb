package lab

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"sort"

	"github.com/sluicenet/sluice/bench"
	"github.com/sluicenet/sluice/internal/human"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart file names, written by WriteReport into the output directory.
const (
	ThroughputChart = "throughput.svg"
	LatencyChart    = "latency.svg"
)

// serverColor gives every server the same colour in every chart.
func (r *Report) serverColor(name string) (color.Color, int) {
	for i, s := range r.Servers {
		if s.Name == name {
			return plotutil.Color(i), i
		}
	}
	return color.Gray{Y: 128}, len(r.Servers)
}

// WriteThroughputChart draws one panel per closed-loop scenario: a bar per
// server at its median msgs/s, the min–max range of the rounds as an error
// bar, and the value (with the ratio to gnet) above it.
func (r *Report) WriteThroughputChart(w io.Writer) error {
	closed, _ := r.splitCells()
	var order []string
	byScenario := map[string][]Cell{}
	for _, c := range closed {
		if byScenario[c.Scenario] == nil {
			order = append(order, c.Scenario)
		}
		byScenario[c.Scenario] = append(byScenario[c.Scenario], c)
	}
	if len(order) == 0 {
		return fmt.Errorf("%w: no closed-loop results to chart", bench.ErrInvalidConfig)
	}
	titles := r.titles()
	cols := min(2, len(order))
	rows := (len(order) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for k, name := range order {
		p := plot.New()
		p.Title.Text = titles[name]
		p.Title.TextStyle.Font.Size = vg.Points(11)
		p.Y.Label.Text = "messages/s (median of rounds)"
		p.Y.Min = 0
		p.Y.Tick.Marker = rateTicks{}
		cells := byScenario[name]
		var names []string
		top := 0.0
		for i, c := range cells {
			names = append(names, c.Server)
			s := c.Summary
			if s == nil {
				continue
			}
			bar, err := plotter.NewBarChart(plotter.Values{s.MsgsPerSec.Median}, vg.Points(36))
			if err != nil {
				return err
			}
			bar.XMin = float64(i)
			bar.Color, _ = r.serverColor(c.Server)
			bar.LineStyle.Width = 0
			p.Add(bar)
			eb, err := plotter.NewYErrorBars(spreadBar{x: float64(i), s: s.MsgsPerSec})
			if err != nil {
				return err
			}
			p.Add(eb)
			label := human.Rate(s.MsgsPerSec.Median)
			if s.VsGnet != nil && c.Server != ServerGnet {
				label += fmt.Sprintf(" (%.2f× gnet)", s.VsGnet.Median)
			}
			lb, err := plotter.NewLabels(plotter.XYLabels{
				XYs:    plotter.XYs{{X: float64(i), Y: s.MsgsPerSec.Max}},
				Labels: []string{label},
			})
			if err != nil {
				return err
			}
			lb.Offset = vg.Point{X: 0, Y: vg.Points(3)}
			for j := range lb.TextStyle {
				lb.TextStyle[j].XAlign = draw.XCenter
				lb.TextStyle[j].Font.Size = vg.Points(8)
			}
			p.Add(lb)
			top = math.Max(top, s.MsgsPerSec.Max)
		}
		p.NominalX(names...)
		if top > 0 {
			p.Y.Max = top * 1.18
		} else {
			p.Y.Max = 1
		}
		plots[k/cols][k%cols] = p
	}
	return drawTiles(w, plots, vg.Points(300), vg.Points(230), "Throughput per scenario (closed loop; error bars: min–max over rounds)")
}

// WriteLatencyChart draws p50, p99 and p99.9 against the offered load of the
// open-loop scenarios, one line per server, on a logarithmic latency axis.
func (r *Report) WriteLatencyChart(w io.Writer) error {
	_, open := r.splitCells()
	type point struct{ x, p50, p99, p999 float64 }
	series := map[string][]point{}
	var servers []string
	for _, c := range open {
		s := c.Summary
		if s == nil || s.OfferedPerSec <= 0 || s.Latency.Count == 0 {
			continue
		}
		if series[c.Server] == nil {
			servers = append(servers, c.Server)
		}
		series[c.Server] = append(series[c.Server], point{s.OfferedPerSec, s.Latency.P50Micros, s.Latency.P99Micros, s.Latency.P999Micros})
	}
	if len(servers) == 0 {
		return fmt.Errorf("%w: no open-loop results to chart", bench.ErrInvalidConfig)
	}
	panels := []struct {
		title string
		get   func(point) float64
	}{
		{"p50", func(p point) float64 { return p.p50 }},
		{"p99", func(p point) float64 { return p.p99 }},
		{"p99.9", func(p point) float64 { return p.p999 }},
	}
	plots := [][]*plot.Plot{make([]*plot.Plot, len(panels))}
	for k, pan := range panels {
		p := plot.New()
		p.Title.Text = pan.title + " latency"
		p.X.Label.Text = "offered load (messages/s)"
		p.X.Tick.Marker = rateTicks{}
		p.Y.Label.Text = "latency (log scale)"
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = latencyTicks{}
		p.Legend.Top = true
		p.Legend.Left = true
		p.Legend.XOffs = vg.Points(8)
		p.Legend.YOffs = -vg.Points(22) // below the panel title, inside the axes
		lo, hi := math.Inf(1), 0.0
		xlo, xhi := math.Inf(1), 0.0
		for _, srv := range servers {
			pts := series[srv]
			sort.Slice(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
			xys := make(plotter.XYs, 0, len(pts))
			for _, pt := range pts {
				v := math.Max(pan.get(pt), 0.1)
				xys = append(xys, plotter.XY{X: pt.x, Y: v})
				lo, hi = math.Min(lo, v), math.Max(hi, v)
				xlo, xhi = math.Min(xlo, pt.x), math.Max(xhi, pt.x)
			}
			line, scatter, err := plotter.NewLinePoints(xys)
			if err != nil {
				return err
			}
			col, idx := r.serverColor(srv)
			line.Color = col
			line.Width = vg.Points(1.5)
			scatter.Color = col
			scatter.Shape = plotutil.Shape(idx)
			scatter.Radius = vg.Points(3.5)
			p.Add(line, scatter)
			if k == 0 {
				p.Legend.Add(srv, line, scatter)
			}
		}
		// Decades around the data so that log ticks always have a range.
		p.Y.Min = math.Pow(10, math.Floor(math.Log10(lo)))
		p.Y.Max = math.Pow(10, math.Ceil(math.Log10(hi*1.5)))
		pad := math.Max((xhi-xlo)*0.1, xhi*0.05)
		p.X.Min, p.X.Max = math.Max(0, xlo-pad), xhi+pad
		plots[0][k] = p
	}
	return drawTiles(w, plots, vg.Points(260), vg.Points(260), "Open-loop latency against offered load (from intended send times)")
}

// drawTiles lays plots out in a grid under a title and writes the SVG.
func drawTiles(w io.Writer, plots [][]*plot.Plot, tileW, tileH vg.Length, title string) error {
	rows, cols := len(plots), len(plots[0])
	titleH := vg.Points(28)
	img := vgsvg.New(tileW*vg.Length(cols), tileH*vg.Length(rows)+titleH)
	dc := draw.New(img)
	// White background (viewers with dark themes).
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	head := draw.TextStyle{Color: color.Black, XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plot.DefaultTextHandler}
	head.Font = plot.DefaultFont
	head.Font.Size = vg.Points(13)
	dc.FillText(head, vg.Point{X: dc.Center().X, Y: dc.Max.Y - vg.Points(6)}, title)
	body := dc
	body.Max.Y -= titleH
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(14), PadY: vg.Points(14),
		PadTop: vg.Points(4), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(10)}
	canvases := plot.Align(plots, t, body)
	for j := range plots {
		for i := range plots[j] {
			if plots[j][i] != nil {
				plots[j][i].Draw(canvases[j][i])
			}
		}
	}
	_, err := img.WriteTo(w)
	return err
}

// spreadBar is one error bar from a Spread.
type spreadBar struct {
	x float64
	s Spread
}

func (b spreadBar) Len() int                  { return 1 }
func (b spreadBar) XY(int) (float64, float64) { return b.x, b.s.Median }
func (b spreadBar) YError(int) (float64, float64) {
	return b.s.Median - b.s.Min, b.s.Max - b.s.Median
}

// rateTicks labels a rate axis with k and M suffixes.
type rateTicks struct{}

func (rateTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = shortRate(ticks[i].Value)
		}
	}
	return ticks
}

// latencyTicks labels a logarithmic microsecond axis at every decade (1µs,
// 10µs, ..., 1s) with unlabelled ticks at 2-9 times each decade.
type latencyTicks struct{}

func (latencyTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	if lo <= 0 || hi <= lo {
		return ticks
	}
	for d := math.Pow(10, math.Floor(math.Log10(lo))); d <= hi; d *= 10 {
		if d >= lo {
			ticks = append(ticks, plot.Tick{Value: d, Label: decadeMicros(d)})
		}
		for m := 2.0; m < 10; m++ {
			if v := m * d; v >= lo && v <= hi {
				ticks = append(ticks, plot.Tick{Value: v})
			}
		}
	}
	return ticks
}

// decadeMicros names a power of ten of microseconds: 100µs, 1ms, 10s.
func decadeMicros(us float64) string {
	switch {
	case us >= 1e6:
		return shortRate(us/1e6) + "s"
	case us >= 1e3:
		return shortRate(us/1e3) + "ms"
	}
	return shortRate(us) + "µs"
}

// shortRate formats an axis value: 0, 500, 20k, 1.5M.
func shortRate(v float64) string {
	switch {
	case v >= 1e6:
		return trimZero(fmt.Sprintf("%.2f", v/1e6)) + "M"
	case v >= 1e3:
		return trimZero(fmt.Sprintf("%.1f", v/1e3)) + "k"
	}
	return trimZero(fmt.Sprintf("%.1f", v))
}

func trimZero(s string) string {
	for len(s) > 1 && s[len(s)-1] == '0' && containsDot(s) {
		s = s[:len(s)-1]
	}
	if n := len(s); n > 0 && s[n-1] == '.' {
		s = s[:n-1]
	}
	return s
}

func containsDot(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return true
		}
	}
	return false
}

// titles maps scenario names to titles.
func (r *Report) titles() map[string]string {
	m := map[string]string{}
	for _, s := range r.Scenarios {
		m[s.Name] = s.Title
	}
	return m
}
