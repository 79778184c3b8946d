package api

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// statusTimeout bounds the backend checks of GET /status, so that it
// answers within a second even when a backend hangs.
const statusTimeout = 800 * time.Millisecond

// checkBackends pings the database and the blob store at once, each for
// at most statusTimeout.
func (s *Server) checkBackends(ctx context.Context) (dbOK, storageOK bool) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); dbOK = s.dbHealth.Ping(ctx) == nil }()
	go func() { defer wg.Done(); storageOK = s.blobHealth.Ping(ctx) == nil }()
	wg.Wait()
	return dbOK, storageOK
}

// Drain marks the server as shutting down: /readyz answers 503 so that load
// balancers stop sending requests, while requests keep being served.
func (s *Server) Drain() { s.draining.Store(true) }

// serveProbe answers the orchestrator probes, outside routing, access
// control and events: GET /healthz (liveness: the process serves HTTP) and
// GET /readyz (readiness: 503 while starting, while a filter a request may
// need has failed, and while draining, with the reasons one a line). It
// reports whether it answered.
func (s *Server) serveProbe(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	var why []string
	switch r.URL.Path {
	case "/healthz":
	case "/readyz":
		why = s.unready()
	default:
		return false
	}
	status := http.StatusOK
	if len(why) > 0 {
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", cacheNone)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	if r.Method == http.MethodGet {
		_, _ = w.Write([]byte(http.StatusText(status) + "\n"))
		for _, line := range why {
			_, _ = w.Write([]byte(line + "\n"))
		}
	}
	return true
}

// unready returns why the instance is not ready; none when it is.
func (s *Server) unready() []string {
	if s.draining.Load() {
		return []string{"shutting down"}
	}
	if s.readiness != nil {
		return s.readiness()
	}
	return nil
}
