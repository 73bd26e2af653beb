package admin

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/sluicenet/sluice/server/metrics"
)

// Defaults for zero Config fields.
const (
	DefaultShutdownTimeout   = 5 * time.Second
	DefaultReadHeaderTimeout = 5 * time.Second
	// DefaultWriteTimeout leaves room for /debug/pprof/profile and
	// /debug/pprof/trace, which stream for ?seconds=N (default 30): ask for
	// less than this.
	DefaultWriteTimeout = 2 * time.Minute
	// DefaultMaxScrapes bounds concurrent /metrics requests; more get 503.
	DefaultMaxScrapes = 4
	// DefaultScrapeTimeout bounds one /metrics gather.
	DefaultScrapeTimeout = 10 * time.Second
)

// Config configures an admin Server. Stats is required; every other zero
// field takes the default documented on it.
type Config struct {
	// Stats is the engine (*server.Engine) or any stats source. Required.
	Stats metrics.Source

	// Ready decides /readyz together with the draining flag. Nil:
	// GateReadiness(Stats).
	Ready Readiness

	// Metrics configures the collector registered on the server's registry
	// (const labels, admission and histogram sources, log suppression).
	// Its Admission source also feeds /debug/sluice.
	Metrics metrics.Options

	// OmitRuntimeMetrics leaves out the Go runtime (go_*) and process
	// (process_*: RSS, CPU, fds) collectors. Default: included.
	OmitRuntimeMetrics bool

	// Logger receives serve errors and scrape errors, never a line per
	// request. Nil logs nothing.
	Logger *slog.Logger

	// ShutdownTimeout bounds the graceful shutdown Serve performs when its
	// context ends. Default 5s.
	ShutdownTimeout time.Duration

	// ReadHeaderTimeout and WriteTimeout are the http.Server's. Defaults
	// 5s and 2m.
	ReadHeaderTimeout, WriteTimeout time.Duration

	// MaxScrapes bounds concurrent /metrics requests. Default 4.
	MaxScrapes int

	// ScrapeTimeout bounds one /metrics request. Default 10s.
	ScrapeTimeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.Ready == nil && c.Stats != nil {
		c.Ready = GateReadiness(c.Stats)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.ShutdownTimeout, DefaultShutdownTimeout)
	def(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&c.WriteTimeout, DefaultWriteTimeout)
	def(&c.ScrapeTimeout, DefaultScrapeTimeout)
	if c.MaxScrapes == 0 {
		c.MaxScrapes = DefaultMaxScrapes
	}
	return c
}

// Server is a running admin HTTP server. Its methods are safe for
// concurrent use.
type Server struct {
	cfg      Config
	reg      *prometheus.Registry
	ln       net.Listener
	srv      *http.Server
	handler  http.Handler
	draining atomic.Bool

	done chan struct{} // closed when the serve goroutine returns
	err  error         // its error other than http.ErrServerClosed; read after done
}

// New listens on addr ("127.0.0.1:9100"; port 0 picks a free port, read it
// back with Addr) and serves the admin endpoints on a goroutine of its own
// until Shutdown. It fails without cfg.Stats (ErrNilStats), when the
// collector cannot be registered, or when addr cannot be listened on.
func New(addr string, cfg Config) (*Server, error) {
	s, err := build(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s.ln = ln
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    16 << 10,
	}
	if lg := s.cfg.Logger; lg != nil {
		s.srv.ErrorLog = slog.NewLogLogger(lg.Handler(), slog.LevelWarn)
	}
	go s.serve()
	return s, nil
}

// build makes the registry and handler without listening.
func build(cfg Config) (*Server, error) {
	if cfg.Stats == nil {
		return nil, ErrNilStats
	}
	cfg = cfg.withDefaults()
	col, err := metrics.New(cfg.Stats, cfg.Metrics)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(col); err != nil {
		return nil, err
	}
	if !cfg.OmitRuntimeMetrics {
		if err := errors.Join(
			reg.Register(collectors.NewGoCollector()),
			reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
		); err != nil {
			return nil, err
		}
	}
	s := &Server{cfg: cfg, reg: reg, done: make(chan struct{})}
	s.handler = s.routes()
	return s, nil
}

func (s *Server) serve() {
	defer close(s.done)
	if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.err = err
		if lg := s.cfg.Logger; lg != nil {
			lg.Error("sluice: admin server failed", "addr", s.ln.Addr().String(), "err", err)
		}
	}
}

// Serve runs an admin server on addr until ctx ends, then shuts it down
// gracefully within cfg.ShutdownTimeout. It returns nil after a clean stop,
// the listen or serve error, or the shutdown's error.
func Serve(ctx context.Context, addr string, cfg Config) error {
	s, err := New(addr, cfg)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-s.done:
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	return s.Shutdown(sctx)
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Handler returns the server's mux, for tests or to mount the endpoints in
// another server.
func (s *Server) Handler() http.Handler { return s.handler }

// Registry returns the server's registry, to register more collectors.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// SetDraining sets the draining flag: while it is on, /readyz answers 503
// (ErrDraining). Set it when a graceful shutdown begins, so load balancers
// stop sending traffic before the listener closes.
func (s *Server) SetDraining(on bool) { s.draining.Store(on) }

// Draining reports the draining flag.
func (s *Server) Draining() bool { return s.draining.Load() }

// Shutdown stops accepting, waits for in-flight requests until ctx ends
// (then closes them), and returns after the serve goroutine has exited. It
// returns the serve error if serving had failed, else ctx's error if the
// wait was cut short, else nil. It is safe to call more than once.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	<-s.done
	return errors.Join(s.err, err)
}

// ready returns nil when /readyz should answer 200, else why not.
func (s *Server) ready() error {
	if s.draining.Load() {
		return ErrDraining
	}
	return s.cfg.Ready.Ready()
}
