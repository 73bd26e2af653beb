package lab

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicenet/sluice/bench"
)

// Scenario is one cell row of the comparison matrix.
type Scenario struct {
	// Name is the scenario's flag name: "CONNSxINFLIGHTxBYTES" for a closed
	// loop ("256x16x64"), "openNN" for an open loop at NN% of the peak.
	Name string `json:"name"`
	// Title is the human label used in tables and charts.
	Title string `json:"title"`
	// Conns, InFlight and Size shape the load. In an open loop InFlight is the
	// cap per connection.
	Conns    int            `json:"conns"`
	InFlight int            `json:"in_flight"`
	Size     bench.SizeSpec `json:"size"`
	// LoadFraction, when positive, makes the scenario open-loop at this
	// fraction of the peak of the Ref scenario (see CompareConfig.OpenRef).
	LoadFraction float64 `json:"load_fraction,omitempty"`
	// Ref is the closed-loop scenario whose throughput is the peak.
	Ref string `json:"ref,omitempty"`
}

// Open reports whether the scenario is open-loop.
func (s Scenario) Open() bool { return s.LoadFraction > 0 }

// OpenRefScenario is the closed-loop scenario whose peak sets the rate of the
// open-loop scenarios, and OpenConns and OpenSize are their shape: the same
// 64 connections of 64 bytes, so the open loop asks "what latency at x% of
// the rate this shape can reach".
const (
	OpenRefScenario = "64x1x64"
	OpenConns       = 64
	OpenSize        = 64
)

// DefaultScenarios is the default matrix: latency-bound, pipelined
// (throughput-bound), bandwidth, many connections, and an open loop at 50%
// and 90% of the peak.
func DefaultScenarios() []Scenario {
	names := []string{"64x1x64", "256x16x64", "64x1x4096", "1000x1x128", "open50", "open90"}
	out := make([]Scenario, len(names))
	for i, n := range names {
		out[i], _ = ParseScenario(n) // constant names; TestDefaultScenarios parses them
	}
	return out
}

// ParseScenario parses "CONNSxINFLIGHTxBYTES" (BYTES may be a range such as
// 64-4096, or use a k suffix) or "openNN" (NN percent, 1-100).
func ParseScenario(name string) (Scenario, error) {
	if pct, ok := strings.CutPrefix(name, "open"); ok {
		v, err := strconv.Atoi(pct)
		if err != nil || v < 1 || v > 100 {
			return Scenario{}, fmt.Errorf("%w: scenario %q (want openNN, NN 1-100)", bench.ErrInvalidConfig, name)
		}
		return Scenario{
			Name:         name,
			Title:        fmt.Sprintf("open loop %d%% of peak, %d conns × %d B", v, OpenConns, OpenSize),
			Conns:        OpenConns,
			InFlight:     bench.DefaultOpenInFlight,
			Size:         bench.FixedSize(OpenSize),
			LoadFraction: float64(v) / 100,
			Ref:          OpenRefScenario,
		}, nil
	}
	parts := strings.Split(name, "x")
	if len(parts) != 3 {
		return Scenario{}, fmt.Errorf("%w: scenario %q (want CONNSxINFLIGHTxBYTES or openNN)", bench.ErrInvalidConfig, name)
	}
	conns, err1 := strconv.Atoi(parts[0])
	inflight, err2 := strconv.Atoi(parts[1])
	size, err3 := bench.ParseSize(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || conns < 1 || inflight < 1 {
		return Scenario{}, fmt.Errorf("%w: scenario %q (want CONNSxINFLIGHTxBYTES or openNN)", bench.ErrInvalidConfig, name)
	}
	return Scenario{
		Name:     name,
		Title:    fmt.Sprintf("%d conns × %d in flight × %s B", conns, inflight, size),
		Conns:    conns,
		InFlight: inflight,
		Size:     size,
	}, nil
}

// ParseScenarios parses a comma-separated list; "" or "default" is the
// default matrix.
func ParseScenarios(list string) ([]Scenario, error) {
	if list == "" || list == "default" {
		return DefaultScenarios(), nil
	}
	var out []Scenario
	seen := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		s, err := ParseScenario(n)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no scenario in %q", bench.ErrInvalidConfig, list)
	}
	return out, nil
}
