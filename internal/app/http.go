package app

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// Check is one readiness check; nil means ready.
type Check func(ctx context.Context) error

// httpShutdownTimeout bounds how long a stopping HTTP server waits for the
// requests it is serving.
const httpShutdownTimeout = 5 * time.Second

// HTTPServer is a running /metrics, /healthz and /readyz server
// (StartHTTP).
type HTTPServer struct {
	srv  *http.Server
	addr string
	log  zerolog.Logger
}

// StartHTTP serves /metrics (reg), /healthz (the process is alive) and
// /readyz (every check passes within 2s; 503 naming the first that fails)
// on addr until Shutdown. Unlike ServeHTTP it does not stop with a context:
// a worker keeps it up while it drains, so its last counters are scraped.
func StartHTTP(addr string, reg *prometheus.Registry, checks map[string]Check, log zerolog.Logger) (*HTTPServer, error) {
	return startHTTP(addr, reg, func() map[string]Check { return checks }, log)
}

// startHTTP is StartHTTP with the checks read at each /readyz request: nil
// (a worker still connecting) answers 503 "starting: not ready".
func startHTTP(addr string, reg *prometheus.Registry, checksNow func() map[string]Check, log zerolog.Logger) (*HTTPServer, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		cctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		checks := checksNow()
		if checks == nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("starting: not ready\n"))
			return
		}
		for name, check := range checks {
			if err := check(cctx); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(name + ": not ready\n"))
				log.Debug().Err(err).Str("check", name).Msg("not ready")
				return
			}
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &HTTPServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, addr: ln.Addr().String(), log: log}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("http server")
		}
	}()
	return s, nil
}

// Addr is the address the server listens on (useful with ":0").
func (s *HTTPServer) Addr() string { return s.addr }

// Shutdown stops the server, letting the requests it serves finish for up
// to 5s.
func (s *HTTPServer) Shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		s.log.Debug().Err(err).Msg("http server shutdown")
	}
}

// ServeHTTP is StartHTTP until ctx ends. It returns the bound address
// (useful with ":0").
func ServeHTTP(ctx context.Context, addr string, reg *prometheus.Registry, checks map[string]Check, log zerolog.Logger) (string, error) {
	s, err := StartHTTP(addr, reg, checks, log)
	if err != nil {
		return "", err
	}
	go func() {
		<-ctx.Done()
		s.Shutdown()
	}()
	return s.Addr(), nil
}
