package metrics_test

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/sluicenet/sluice/server"
	"github.com/sluicenet/sluice/server/metrics"
)

const (
	dashboardPath     = "../../docs/grafana/sluice-dashboard.json"
	observabilityPath = "../../docs/OBSERVABILITY.md"
)

// exported returns every family name the collector can export with all
// optional sources set, with the series names Prometheus derives from
// histograms, plus the Go and process collectors' names that the admin
// server registers by default.
func exported(t *testing.T) (families map[string]bool, series map[string]bool) {
	t.Helper()
	s := scripted()
	h := scriptedHistograms()
	full := server.Histogram{Buckets: []float64{1}, Counts: []uint64{1, 1}}
	h.LoopLagSeconds, h.OutQueueBytes, h.RequestSeconds = full, full, full
	reg := register(t, newCollector(t, metrics.SourceFunc(func() server.Stats { return s }), metrics.Options{
		Admission:  metrics.AdmissionFunc(scriptedAdmission),
		Histograms: metrics.HistogramFunc(func() server.EngineHistograms { return h }),
		Logs:       suppressed(1),
	}))
	_, fams := values(t, reg)
	families, series = map[string]bool{}, map[string]bool{}
	for name, mf := range fams {
		families[name] = true
		series[name] = true
		if mf.GetType().String() == "HISTOGRAM" {
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				series[name+suf] = true
			}
		}
	}
	rt := prometheus.NewRegistry()
	rt.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mfs, err := rt.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		series[mf.GetName()] = true
	}
	return families, series
}

var metricName = regexp.MustCompile(`\b(?:sluice|process|go)_[a-z0-9_]+`)

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		Expr       string `json:"expr"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
	} `json:"targets"`
}

// TestDashboard checks that docs/grafana/sluice-dashboard.json is a
// dashboard Grafana can import with a datasource variable, that its panels
// do not overlap, and that every metric it queries is one the collector
// (or the admin server's runtime collectors) exports.
func TestDashboard(t *testing.T) {
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID        string  `json:"uid"`
		Title      string  `json:"title"`
		Schema     int     `json:"schemaVersion"`
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name, Type string
				Query      any
			}
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	if d.UID == "" || d.Title == "" || d.Schema < 30 {
		t.Errorf("uid %q title %q schemaVersion %d", d.UID, d.Title, d.Schema)
	}
	hasDS := false
	for _, v := range d.Templating.List {
		if v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus" {
			hasDS = true
		}
	}
	if !hasDS {
		t.Error("no datasource variable of type datasource for prometheus")
	}

	_, series := exported(t)
	ids := map[int]bool{}
	var grid [200][24]int // panel id per cell
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel %q: duplicate id %d", p.Title, p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.W < 1 || g.H < 1 || g.X < 0 || g.X+g.W > 24 || g.Y < 0 || g.Y+g.H > len(grid) {
			t.Errorf("panel %q: gridPos %+v out of bounds", p.Title, g)
			continue
		}
		for y := g.Y; y < g.Y+g.H; y++ {
			for x := g.X; x < g.X+g.W; x++ {
				if other := grid[y][x]; other != 0 {
					t.Errorf("panel %q overlaps panel %d at (%d,%d)", p.Title, other, x, y)
				}
				grid[y][x] = p.ID
			}
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %+v, want uid ${datasource}", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q: no targets", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: target datasource %+v", p.Title, tg.Datasource)
			}
			if !strings.Contains(tg.Expr, `instance=~"$instance"`) {
				t.Errorf("panel %q: %q ignores the instance variable", p.Title, tg.Expr)
			}
			for _, name := range metricName.FindAllString(tg.Expr, -1) {
				if !series[name] {
					t.Errorf("panel %q: %s is not exported", p.Title, name)
				}
			}
		}
	}
}

// TestObservabilityDoc checks that docs/OBSERVABILITY.md lists every metric
// family the collector exports, and, outside its "Proposed" section, no
// sluice_ metric that it does not.
func TestObservabilityDoc(t *testing.T) {
	raw, err := os.ReadFile(observabilityPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	// Names under "## Proposed" are reserved, not exported yet.
	current, _, _ := strings.Cut(doc, "\n## Proposed")
	families, series := exported(t)
	var missing []string
	for name := range families {
		if !regexp.MustCompile("`" + name + "[`{]").MatchString(current) {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	for _, name := range missing {
		t.Errorf("docs/OBSERVABILITY.md does not list `%s`", name)
	}
	for _, name := range metricName.FindAllString(current, -1) {
		if strings.HasPrefix(name, "sluice_") && !series[name] && !strings.HasSuffix(name, "_") {
			t.Errorf("docs/OBSERVABILITY.md names %s, which is not exported", name)
		}
	}
}
