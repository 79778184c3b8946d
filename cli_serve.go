package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"
)

const serveUsage = `usage:
  vitrine serve [--config FILE] [--listen ADDR] [--data DIR]
serves the API, the admin UI under /admin and, when configured, the metrics; SIGTERM or SIGINT
drains and stops it, SIGHUP reloads the filters
`

// serve is `vitrine serve`: New, then Run until SIGTERM or SIGINT.
func serve(ctx context.Context, args []string) error {
	cmd := newCommand("serve", serveUsage)
	var f commonFlags
	f.register(cmd.FlagSet)
	listen := cmd.String("listen", "", "address to listen on (default 127.0.0.1:8080)")
	if _, err := cmd.parse(args, 0, 0); err != nil {
		return err
	}
	cfg, err := loadConfig(f.config, f.data)
	if err != nil {
		return err
	}
	if *listen != "" {
		cfg.Listen = *listen
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return New(cfg, f.data, slog.New(slog.NewJSONHandler(os.Stderr, nil)), os.Stdout).Run(ctx)
}

// raiseGOMAXPROCS lets the Go scheduler run at least n goroutines at once,
// unless the operator set GOMAXPROCS. Why: a goroutine in a cgo call (a
// libvips pipeline) or running guest code keeps its P until the runtime's
// monitor takes it back, which can be milliseconds, so with one P per CPU
// and every P held by a render, the HTTP code and the next request's
// database lookups wait. On 2 CPUs with 4 pipelines, 200 px thumbnails from
// stored variations at 16 concurrent requests: p99 224 ms with GOMAXPROCS
// 2, 72 ms with 4, at the same throughput (e2e/README.md, Performance).
func raiseGOMAXPROCS(n int) {
	if os.Getenv("GOMAXPROCS") == "" && n > runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(n)
	}
}

// routes serves the admin UI under /admin, the metrics at GET /metrics when
// metrics is not nil, and everything else from the API. Why not a ServeMux:
// it would clean and redirect paths the API must see as sent.
// Every request's context ends after timeout (requestTimeout): the
// renders, queries and blob reads it started stop with it.
func routes(apiHandler, ui, metrics http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		r = r.WithContext(ctx)
		switch {
		case r.URL.Path == "/admin" || strings.HasPrefix(r.URL.Path, "/admin/"):
			ui.ServeHTTP(w, r)
		case metrics != nil && r.URL.Path == "/metrics" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			metrics.ServeHTTP(w, r)
		default:
			apiHandler.ServeHTTP(w, r)
		}
	})
}
