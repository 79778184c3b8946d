package api

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// requestIDs makes request ids: a random per-process prefix and a counter,
// unique across instances without a random read per request.
type requestIDs struct {
	prefix string
	n      atomic.Uint64
}

func newRequestIDs() *requestIDs {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return &requestIDs{prefix: hex.EncodeToString(b) + "-"}
}

func (g *requestIDs) next() string {
	return g.prefix + strconv.FormatUint(g.n.Add(1), 36)
}

// saneRequestID accepts an incoming X-Request-Id of 1 to 128 letters,
// digits, '-', '_', '.', ':' or '/' only, so that it is safe in headers and
// logs.
func saneRequestID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '_', c == '.', c == ':', c == '/':
		default:
			return false
		}
	}
	return true
}

// recorder is the ResponseWriter of one request: it remembers the status
// and size for the metrics and the access log.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// begin starts observing a request: it sets X-Request-Id (the client's when
// sane) and, when metrics or the access log are on, wraps w.
func (s *Server) begin(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *recorder, string) {
	id := r.Header.Get("X-Request-Id")
	if !saneRequestID(id) {
		id = s.ids.next()
	}
	w.Header().Set("X-Request-Id", id)
	if s.metrics == nil && s.accessLog == nil && s.usage == nil {
		return w, nil, id
	}
	if s.metrics != nil {
		s.metrics.inflight.Inc()
	}
	rec := &recorder{ResponseWriter: w}
	return rec, rec, id
}

// end records a finished request in the metrics and the access log.
func (s *Server) end(rec *recorder, r *http.Request, route, id string, start time.Time) {
	if rec == nil {
		return
	}
	d := time.Since(start)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	if route == "" {
		route = "unknown"
	}
	if s.metrics != nil {
		s.metrics.inflight.Dec()
		s.metrics.observeRequest(route, r.Method, rec.status, d)
	}
	if s.accessLog != nil {
		s.accessLog.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("id", id), slog.String("method", r.Method), slog.String("path", redactToken(r.URL.Path)),
			slog.String("route", route), slog.Int("status", rec.status), slog.Int64("bytes", rec.bytes),
			slog.Float64("ms", float64(d.Microseconds())/1000), slog.String("remote", r.RemoteAddr))
	}
}

// redactToken hides an upload token named in a path (DELETE
// /users/<user>/uploadtokens/<token>): a revocation that failed leaves the
// token usable, so the access log must not hold it.
func redactToken(path string) string {
	const seg = "/uploadtokens/" + uploadTokenPrefix
	i := strings.Index(path, seg)
	if i < 0 {
		return path
	}
	return path[:i+len(seg)] + "…"
}
