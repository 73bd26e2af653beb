package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/server"
	"github.com/sluicenet/sluice/server/admin"
	"github.com/sluicenet/sluice/server/metrics"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// client never keeps connections, so no transport goroutine outlives a test.
var client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// scriptedStats is a Stats source whose gate the test flips.
type scriptedStats struct{ gateClosed, engineDraining atomic.Bool }

func (s *scriptedStats) Stats() server.Stats {
	st := server.Stats{Loops: 2, ConnsOpen: 3, Accepted: 100, BytesIn: 4096, GateOpen: !s.gateClosed.Load(),
		Draining: s.engineDraining.Load(), AcceptErrors: 2, AcceptPauses: 1}
	st.Closed[server.CausePeerClosed] = 90
	st.Closed[server.CauseIdleTimeout] = 7
	st.AcceptErrnos[server.AcceptEPERM] = 2
	st.AcceptPauseErrnos[server.PauseEMFILE] = 1
	return st
}

func startAdmin(t *testing.T, cfg admin.Config) *admin.Server {
	t.Helper()
	s, err := admin.New("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s
}

type response struct {
	code  int
	ctype string
	body  string
}

func do(t *testing.T, method, url string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	return response{resp.StatusCode, resp.Header.Get("Content-Type"), string(b)}
}

func TestEndpoints(t *testing.T) {
	src := &scriptedStats{}
	s := startAdmin(t, admin.Config{Stats: src})
	base := "http://" + s.Addr().String()
	for i, tc := range []struct {
		method, path string
		code         int
		ctype        string // prefix
		contains     []string
	}{
		{"GET", "/", 200, "text/plain", []string{"/metrics", "/readyz"}},
		{"GET", "/healthz", 200, "text/plain; charset=utf-8", []string{"ok"}},
		{"HEAD", "/healthz", 200, "text/plain; charset=utf-8", nil},
		{"GET", "/readyz", 200, "text/plain; charset=utf-8", []string{"ready"}},
		{"GET", "/metrics", 200, "text/plain", []string{
			"# TYPE sluice_connections_accepted_total counter",
			"sluice_connections_accepted_total 100",
			`sluice_connections_closed_total{cause="idle_timeout"} 7`,
			"sluice_gate_open 1",
			"go_goroutines ", "process_resident_memory_bytes ",
		}},
		{"GET", "/debug/sluice", 200, "application/json", []string{`"ready": true`, `"peer_closed": 90`}},
		{"GET", "/debug/pprof/", 200, "text/html", []string{"goroutine"}},
		{"GET", "/debug/pprof/goroutine?debug=1", 200, "text/plain", []string{"goroutine profile"}},
		{"GET", "/debug/pprof/cmdline", 200, "text/plain", nil},
		{"GET", "/nope", 404, "text/plain", nil},
		{"POST", "/healthz", 405, "text/plain", nil},
	} {
		r := do(t, tc.method, base+tc.path)
		if r.code != tc.code {
			t.Errorf("%d: %s %s: status %d, want %d (body %.200q)", i, tc.method, tc.path, r.code, tc.code, r.body)
		}
		if !strings.HasPrefix(r.ctype, tc.ctype) {
			t.Errorf("%d: %s %s: Content-Type %q, want prefix %q", i, tc.method, tc.path, r.ctype, tc.ctype)
		}
		for _, c := range tc.contains {
			if !strings.Contains(r.body, c) {
				t.Errorf("%d: %s %s: body lacks %q", i, tc.method, tc.path, c)
			}
		}
	}
}

func TestDebugSluiceJSON(t *testing.T) {
	src := &scriptedStats{}
	snap := metrics.AdmissionSnapshot{}
	snap.Decisions[admission.ReasonTenant] = 5
	s := startAdmin(t, admin.Config{Stats: src, Metrics: metrics.Options{
		Admission: metrics.AdmissionFunc(func() metrics.AdmissionSnapshot { return snap }),
	}})
	s.SetDraining(true)
	r := do(t, "GET", "http://"+s.Addr().String()+"/debug/sluice")
	var got struct {
		Ready    bool
		NotReady string `json:"not_ready"`
		Draining bool
		Stats    struct {
			Accepted  uint64
			ConnsOpen int64
			GateOpen  bool
			Closed    map[string]uint64

			AcceptErrnos, AcceptPauseErrnos map[string]uint64
		}
		Admission *struct{ Decisions []uint64 }
	}
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatalf("decode: %v\n%s", err, r.body)
	}
	if got.Ready || !got.Draining || !strings.Contains(got.NotReady, "draining") {
		t.Errorf("ready %v draining %v not_ready %q: want not ready, draining", got.Ready, got.Draining, got.NotReady)
	}
	if got.Stats.Accepted != 100 || got.Stats.ConnsOpen != 3 || !got.Stats.GateOpen {
		t.Errorf("stats %+v", got.Stats)
	}
	if got.Stats.Closed["peer_closed"] != 90 || got.Stats.Closed["idle_timeout"] != 7 || len(got.Stats.Closed) != int(server.NumCloseCauses) {
		t.Errorf("closed %v: want every cause by name", got.Stats.Closed)
	}
	if got.Stats.AcceptErrnos["EPERM"] != 2 || len(got.Stats.AcceptErrnos) != int(server.NumAcceptErrnos) ||
		got.Stats.AcceptPauseErrnos["EMFILE"] != 1 || len(got.Stats.AcceptPauseErrnos) != int(server.NumPauseErrnos) {
		t.Errorf("accept errnos %v, pauses %v: want every errno by name", got.Stats.AcceptErrnos, got.Stats.AcceptPauseErrnos)
	}
	if got.Admission == nil || got.Admission.Decisions[admission.ReasonTenant] != 5 {
		t.Errorf("admission %+v: want decisions with tenant=5", got.Admission)
	}
}

// TestReadyz flips the gate and the draining flag through a table.
func TestReadyz(t *testing.T) {
	src := &scriptedStats{}
	s := startAdmin(t, admin.Config{Stats: src})
	url := "http://" + s.Addr().String() + "/readyz"
	for i, tc := range []struct {
		gateClosed, draining, engineDraining bool
		code                                 int
		why                                  string
	}{
		{false, false, false, 200, "ready"},
		{true, false, false, 503, "listen gate closed"},
		{false, false, false, 200, "ready"},
		{false, true, false, 503, "draining"},
		{true, true, false, 503, "draining"},
		{false, false, false, 200, "ready"},
		{false, false, true, 503, "draining"}, // the engine's shutdown, before its gate closes
		{true, false, true, 503, "draining"},
	} {
		src.gateClosed.Store(tc.gateClosed)
		src.engineDraining.Store(tc.engineDraining)
		s.SetDraining(tc.draining)
		if s.Draining() != tc.draining {
			t.Errorf("%d: Draining() = %v", i, s.Draining())
		}
		r := do(t, "GET", url)
		if r.code != tc.code || !strings.Contains(r.body, tc.why) {
			t.Errorf("%d: gate closed %v draining %v: %d %q, want %d %q", i, tc.gateClosed, tc.draining, r.code, r.body, tc.code, tc.why)
		}
		// /healthz does not depend on readiness
		if h := do(t, "GET", "http://"+s.Addr().String()+"/healthz"); h.code != 200 {
			t.Errorf("%d: healthz %d", i, h.code)
		}
	}
}

func TestCustomReadiness(t *testing.T) {
	errDB := errors.New("database down")
	var down atomic.Bool
	s := startAdmin(t, admin.Config{Stats: &scriptedStats{}, Ready: admin.ReadinessFunc(func() error {
		if down.Load() {
			return errDB
		}
		return nil
	})})
	url := "http://" + s.Addr().String() + "/readyz"
	if r := do(t, "GET", url); r.code != 200 {
		t.Fatalf("up: %d", r.code)
	}
	down.Store(true)
	if r := do(t, "GET", url); r.code != 503 || !strings.Contains(r.body, "database down") {
		t.Fatalf("down: %d %q", r.code, r.body)
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := admin.New("127.0.0.1:0", admin.Config{}); !errors.Is(err, admin.ErrNilStats) {
		t.Errorf("nil Stats: %v, want ErrNilStats", err)
	}
	if err := admin.Serve(t.Context(), "127.0.0.1:0", admin.Config{}); !errors.Is(err, admin.ErrNilStats) {
		t.Errorf("Serve nil Stats: %v, want ErrNilStats", err)
	}
	if _, err := admin.New("256.0.0.1:0", admin.Config{Stats: &scriptedStats{}}); err == nil {
		t.Error("bad address accepted")
	}
	s := startAdmin(t, admin.Config{Stats: &scriptedStats{}})
	if _, err := admin.New(s.Addr().String(), admin.Config{Stats: &scriptedStats{}}); err == nil {
		t.Error("listening twice on one address succeeded")
	}
}

func TestServeStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- admin.Serve(ctx, "127.0.0.1:0", admin.Config{Stats: &scriptedStats{}}) }()
	time.Sleep(20 * time.Millisecond) // let it listen; a cancel before that is fine too
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
}

func TestShutdownTwice(t *testing.T) {
	s, err := admin.New("127.0.0.1:0", admin.Config{Stats: &scriptedStats{}, OmitRuntimeMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	if r := do(t, "GET", "http://"+s.Addr().String()+"/metrics"); strings.Contains(r.body, "go_goroutines") {
		t.Error("OmitRuntimeMetrics: go_goroutines present")
	}
	for i := range 2 {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown %d: %v", i, err)
		}
	}
	if _, err := client.Get("http://" + s.Addr().String() + "/healthz"); err == nil {
		t.Error("server answers after Shutdown")
	}
}
