//go:build linux

package lab

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestShareSampler reads sluice_refuse_share_ratio from a /metrics that
// changes between reads: the window keeps the readings of its last part
// only, and failed reads are reported with the figure of those that
// succeeded.
func TestShareSampler(t *testing.T) {
	var n atomic.Int64
	var fail atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		if fail.Load() {
			http.Error(w, "scrape failed", http.StatusInternalServerError)
			return
		}
		i := n.Add(1)
		fmt.Fprintf(w, "# TYPE sluice_refuse_share_ratio gauge\nsluice_refuse_share_ratio %g\n", 0.1*float64(i))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	s := sampleRefuseShare(addr, 0)
	time.Sleep(3*RefuseShareEvery + RefuseShareEvery/2) // readings 0.1, 0.2, 0.3, 0.4
	rs, err := s.finish(time.Minute)
	if err != nil || rs == nil || rs.Samples != int(n.Load()) || rs.Samples < 2 {
		t.Fatalf("%+v (%d reads): %v", rs, n.Load(), err)
	}
	k := float64(rs.Samples)
	if want := 0.1 * (k + 1) / 2; math.Abs(rs.Mean-want) > 1e-9 || math.Abs(rs.Max-0.1*k) > 1e-9 {
		t.Errorf("%+v, want mean %v max %v", rs, want, 0.1*k)
	}

	// a window that holds no reading is no figure
	n.Store(0)
	s = sampleRefuseShare(addr, 0)
	time.Sleep(RefuseShareEvery + RefuseShareEvery/2)
	if rs, err := s.finish(RefuseShareEvery / 5); rs != nil || err == nil || !strings.Contains(err.Error(), "no reading") {
		t.Errorf("short window: %+v, %v", rs, err)
	}

	fail.Store(true)
	s = sampleRefuseShare(addr, 0)
	time.Sleep(RefuseShareEvery / 2)
	if rs, err := s.finish(time.Minute); rs != nil || err == nil || !strings.Contains(err.Error(), "1 of 1 reads") || !strings.Contains(err.Error(), "500") {
		t.Errorf("failing endpoint: %+v, %v", rs, err)
	}
}
