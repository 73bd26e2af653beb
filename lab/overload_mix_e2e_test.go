//go:build linux

package lab_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/sluicenet/sluice/lab"
)

// TestOverloadMixEndToEnd runs the priorities and fairness parts once on
// loopback with short windows (three tenants) and checks the report's
// accounts: every generator ran and got answers, the classified server
// and the one without classes both ran, and the tenants' shares add up to
// their number. It judges no target: those are the bench's, not a timed
// test's. The windows stretch by spinSlowness, as in TestMatrixEndToEnd: the
// capacity run's queue is sized from the nominal work.
func TestOverloadMixEndToEnd(t *testing.T) {
	cpus := pinnedRunCPUs(t, "starts servers and generators for about five seconds")
	const work = 200 * time.Microsecond
	slow := spinSlowness(work)
	t.Logf("spin.For runs %.2f× its nominal time here: windows of %v", slow, stretch(300*time.Millisecond, slow))
	cfg := lab.OverloadConfig{
		BenchBin:   os.Args[0],
		BenchEnv:   []string{childEnv},
		Parts:      []string{lab.PartPriorities, lab.PartFairness},
		Rounds:     1,
		ServerCPUs: cpus[:1],
		ClientCPUs: cpus[1:2],
		Conns:      8,
		Factor:     3,
		Tenants:    3,
		Work:       work,
		Warmup:     stretch(100*time.Millisecond, slow),
		Duration:   stretch(300*time.Millisecond, slow),
		Progress:   testLog{t},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := lab.Overload(ctx, cfg)
	if err != nil {
		t.Fatalf("overload: %v", err)
	}
	if len(rep.Priorities) != 2 || len(rep.Fairness) != 1 {
		t.Fatalf("%d priority cells and %d fairness cells, want 2 and 1", len(rep.Priorities), len(rep.Fairness))
	}
	for _, c := range append(append([]lab.MixCell(nil), rep.Priorities...), rep.Fairness...) {
		if len(c.Runs) != 1 || c.Runs[0].Error != "" || c.Runs[0].Capacity <= 0 {
			t.Fatalf("%s: runs %+v", c.Label, c.Runs)
		}
		var fair float64
		for _, l := range c.Runs[0].Loads {
			if l.Error != "" || l.Result == nil || l.Result.Intended == 0 || l.Result.Msgs+l.Result.Rejected == 0 {
				t.Errorf("%s %s: error %q, result %+v", c.Label, l.Name, l.Error, l.Result)
				continue
			}
			fair += l.FairRatio
		}
		if n := float64(len(c.Runs[0].Loads)); fair < n-0.01 || fair > n+0.01 {
			t.Errorf("%s: shares add up to %.3f, want %v", c.Label, fair, n)
		}
	}
	if n := len(rep.Fairness[0].Summary); n != 3 {
		t.Errorf("%d tenants in the fairness summary, want 3", n)
	}
	if n := len(rep.Priorities[0].Summary); n != 3 {
		t.Errorf("%d classes in the priorities summary, want 3", n)
	}
}
