package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sluicenet/sluice/server"
	"github.com/sluicenet/sluice/server/metrics"
)

// index is the body of GET /.
const index = `sluice admin
/metrics        Prometheus metrics
/healthz        process up
/readyz         ready for traffic: not draining, listen gate open
/debug/pprof/   Go profiles
/debug/sluice   engine stats (JSON)
`

// routes builds the server's own mux (never http.DefaultServeMux).
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		text(w, http.StatusOK, index)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{
		ErrorLog:            s.promLog(),
		ErrorHandling:       promhttp.ContinueOnError, // one bad optional source does not blank the scrape
		Registry:            s.reg,                    // promhttp_metric_handler_errors_total
		MaxRequestsInFlight: s.cfg.MaxScrapes,
		Timeout:             s.cfg.ScrapeTimeout,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		text(w, http.StatusOK, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := s.ready(); err != nil {
			text(w, http.StatusServiceUnavailable, "not ready: "+err.Error()+"\n")
			return
		}
		text(w, http.StatusOK, "ready\n")
	})
	mux.HandleFunc("GET /debug/sluice", s.debugSluice)
	mux.HandleFunc("/debug/pprof/", pprof.Index) // named profiles: /debug/pprof/heap, ...
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// text writes a short plain-text answer that no cache keeps.
func text(w http.ResponseWriter, code int, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
}

// promLogger adapts the slog logger to promhttp's.
type promLogger struct{ s *Server }

func (l promLogger) Println(v ...any) {
	if lg := l.s.cfg.Logger; lg != nil {
		lg.Warn("sluice: admin metrics error", "err", fmt.Sprint(v...))
	}
}

func (s *Server) promLog() promhttp.Logger {
	if s.cfg.Logger == nil {
		return nil
	}
	return promLogger{s}
}

// Snapshot is the JSON document of /debug/sluice. Stats is the engine's
// snapshot as server.Stats defines it (new fields appear without a change
// here), except the arrays Closed, AcceptErrnos and AcceptPauseErrnos,
// which are keyed by label. Draining is the server's draining flag
// (SetDraining); the engine's own is Stats.Draining.
type Snapshot struct {
	Time     time.Time `json:"time"`
	Ready    bool      `json:"ready"`
	NotReady string    `json:"not_ready,omitempty"`
	Draining bool      `json:"draining"`
	Stats    StatsView `json:"stats"`
	// Admission is present when Config.Metrics.Admission is set.
	Admission *metrics.AdmissionSnapshot `json:"admission,omitempty"`
}

// StatsView is server.Stats with the per-cause and per-errno arrays keyed
// by their label (CloseCause, AcceptErrno, PauseErrno names).
type StatsView struct {
	server.Stats
	Closed            map[string]uint64
	AcceptErrnos      map[string]uint64
	AcceptPauseErrnos map[string]uint64
}

// NewSnapshot builds the /debug/sluice document at now.
func (s *Server) NewSnapshot(now time.Time) Snapshot {
	st := s.cfg.Stats.Stats()
	snap := Snapshot{Time: now, Draining: s.draining.Load(), Stats: StatsView{Stats: st, Closed: make(map[string]uint64, len(st.Closed))}}
	for c, n := range st.Closed {
		snap.Stats.Closed[server.CloseCause(c).String()] = n
	}
	snap.Stats.AcceptErrnos = make(map[string]uint64, len(st.AcceptErrnos))
	for en, n := range st.AcceptErrnos {
		snap.Stats.AcceptErrnos[server.AcceptErrno(en).String()] = n
	}
	snap.Stats.AcceptPauseErrnos = make(map[string]uint64, len(st.AcceptPauseErrnos))
	for en, n := range st.AcceptPauseErrnos {
		snap.Stats.AcceptPauseErrnos[server.PauseErrno(en).String()] = n
	}
	if err := s.ready(); err != nil {
		snap.NotReady = err.Error()
	} else {
		snap.Ready = true
	}
	if a := s.cfg.Metrics.Admission; a != nil {
		as := a.AdmissionSnapshot()
		snap.Admission = &as
	}
	return snap
}

func (s *Server) debugSluice(w http.ResponseWriter, _ *http.Request) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s.NewSnapshot(time.Now())); err != nil {
		text(w, http.StatusInternalServerError, "encoding stats: "+err.Error()+"\n")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(buf.Bytes())
}
