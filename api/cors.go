package api

import (
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// CORS configures cross-origin access for browsers, as Imbo's Cors listener
// does. It
// is off while AllowedOrigins is empty.
type CORS struct {
	// AllowedOrigins lists origins (`https://app.example.com`) allowed to
	// call the service; `*` allows any.
	AllowedOrigins []string `yaml:"allowedOrigins"`
	// AllowedMethods maps resources (index, image, images, globalimages,
	// metadata, status, stats, user, globalshorturl, shorturl, shorturls,
	// keys, groups, group, accessrules, accessrule) to the methods browsers
	// may use. Default: GET and HEAD on the read resources.
	AllowedMethods map[string][]string `yaml:"allowedMethods"`
	// MaxAge is how long, in seconds, browsers may cache a preflight (3600).
	MaxAge int `yaml:"maxAge"`
}

var defaultCORSMethods = func() map[string][]string {
	m := map[string][]string{}
	for _, r := range []string{"index", "image", "images", "globalimages", "metadata", "status", "stats",
		"user", "globalshorturl", "shorturl", "shorturls"} {
		m[r] = []string{http.MethodGet, http.MethodHead}
	}
	return m
}()

func (c CORS) enabled() bool { return len(c.AllowedOrigins) > 0 }

func (c *CORS) defaults() {
	src := c.AllowedMethods
	if src == nil {
		src = defaultCORSMethods
	}
	// A fresh map: the configured one and the defaults stay untouched.
	c.AllowedMethods = make(map[string][]string, len(src))
	for r, ms := range src {
		up := make([]string, len(ms))
		for i, m := range ms {
			up[i] = strings.ToUpper(m)
		}
		c.AllowedMethods[r] = up
	}
	if c.MaxAge == 0 {
		c.MaxAge = 3600
	}
}

// allowOrigin returns the Access-Control-Allow-Origin value for origin, or
// "" when it is not allowed.
func (c CORS) allowOrigin(origin string) string {
	for _, o := range c.AllowedOrigins {
		if o == "*" {
			if origin == "" {
				return "*"
			}
			return origin
		}
		if origin != "" && strings.EqualFold(o, origin) {
			return origin
		}
	}
	return ""
}

// applyCORS adds CORS headers to a request on a route browsers may use and
// answers preflights itself (before access control: browsers send no
// credentials on a preflight). handled is true when the response is written.
func (s *Server) applyCORS(c *call) (handled bool) {
	methods, ok := s.cfg.CORS.AllowedMethods[c.route.name]
	if !ok {
		return false
	}
	c.varyOrigin = true
	allow := s.cfg.CORS.allowOrigin(c.r.Header.Get("Origin"))
	h := c.w.Header()
	if c.method == http.MethodOptions {
		if allow != "" {
			h.Set("Access-Control-Allow-Origin", allow)
			h.Set("Access-Control-Allow-Methods", strings.Join(append([]string{http.MethodOptions}, methods...), ", "))
			allowed := []string{"Content-Type", "Accept"}
			for _, req := range strings.Split(c.r.Header.Get("Access-Control-Request-Headers"), ",") {
				req = http.CanonicalHeaderKey(strings.TrimSpace(req))
				if strings.HasPrefix(req, "X-Service-") || strings.HasPrefix(req, "X-Imbo-") ||
					strings.HasPrefix(req, s.cfg.HeaderPrefix+"-") {
					allowed = append(allowed, req)
				}
			}
			h.Set("Access-Control-Allow-Headers", strings.Join(allowed, ", "))
			h.Set("Access-Control-Max-Age", strconv.Itoa(s.cfg.CORS.MaxAge))
		}
		c.commonHeaders()
		c.w.WriteHeader(http.StatusNoContent)
		return true
	}
	method := c.method
	if method == http.MethodHead && !slices.Contains(methods, method) {
		method = http.MethodGet
	}
	if allow != "" && slices.Contains(methods, method) {
		h.Set("Access-Control-Allow-Origin", allow)
		c.w = &exposeWriter{ResponseWriter: c.w, prefix: s.cfg.HeaderPrefix + "-"}
	}
	return false
}

// exposeWriter lists every service header of the response in
// Access-Control-Expose-Headers when the headers are written.
type exposeWriter struct {
	http.ResponseWriter
	prefix  string
	written bool
}

func (w *exposeWriter) WriteHeader(code int) {
	if !w.written {
		w.written = true
		var names []string
		for k := range w.Header() {
			if strings.HasPrefix(k, w.prefix) || slices.Contains(tusHeaders, k) {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		if len(names) > 0 {
			w.Header().Set("Access-Control-Expose-Headers", strings.Join(names, ", "))
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *exposeWriter) Write(b []byte) (int, error) {
	if !w.written {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *exposeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
