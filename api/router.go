package api

import (
	"net/http"
	"regexp"
	"sort"
	"strings"

	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
)

// Why a small router of our own instead of http.ServeMux: the service must
// answer unknown paths, unknown methods (501), BREW (418) and known paths
// with the wrong method (405) with its JSON error model, and must peel
// `.json` and image extensions off the last segment; ServeMux writes its own
// plain-text 404 and 405 bodies.

// route is one resource: a path pattern and its handlers per method.
type route struct {
	name string
	// segs are literal segments or `{param}` placeholders.
	segs []string
	// jsonExt allows a `.json` suffix on the last segment.
	jsonExt bool
	// imageExt lets the last segment carry an image extension.
	imageExt bool
	// byURL makes an upload's body the JSON document naming the image's
	// URL, whatever its Content-Type (urlupload.go).
	byURL    bool
	handlers map[string]handler
}

// handler serves one method of one route.
type handler func(c *call) error

var segmentPatterns = map[string]*regexp.Regexp{
	"user":  namePattern,
	"image": regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`),
	"id":    regexp.MustCompile(`^[a-zA-Z0-9]{7}$`),
	"pk":    namePattern,
	"group": regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`),
	"rule":  regexp.MustCompile(`^[0-9]{1,18}$`),
	// webhook is a subscription's id, delivery one of its deliveries.
	"webhook":  regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`),
	"delivery": regexp.MustCompile(`^[0-9]{1,18}$`),
	"token":    regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`),
	// upload is a resumable upload's id (tus.go).
	"upload": uploadIDPattern,
	// entry is a blocklist entry's id.
	"entry": regexp.MustCompile(`^[0-9]{1,18}$`),
	// filter is a filter's name (wasm-sdk/ABI.md, filter.json).
	"filter": regexp.MustCompile(`^[a-z][a-zA-Z0-9_-]{0,63}$`),
}

// routeMatch is a matched route with its path parameters.
type routeMatch struct {
	route  *route
	params map[string]string
	ext    string // without the dot; "json" or an image extension
}

// match finds the route for a path: 404 for an unknown path, 400 naming
// the rule for a path that only its user segment keeps from matching (a
// user name is not a path the service lacks, so a bare 404 would mislead).
func match(routes []*route, path string) (routeMatch, error) {
	trimmed := strings.Trim(path, "/")
	var parts []string
	if trimmed != "" {
		parts = strings.Split(trimmed, "/")
	}
	badUser, found := "", false
	for _, rt := range routes {
		m, bad, ok := rt.match(parts)
		if ok && bad == "" {
			return m, nil
		}
		if ok && !found {
			badUser, found = bad, true
		}
	}
	if found {
		return routeMatch{}, invalidUserName(badUser)
	}
	return routeMatch{}, errorf(http.StatusNotFound, "Not Found")
}

// invalidUserName is the 400 for a user name namePattern refuses (api/README.md,
// User names).
func invalidUserName(name string) error {
	return errorf(http.StatusBadRequest, "Invalid user name '%s': a user name is 1 to 64 characters, "+
		"each a letter (a-z, A-Z), a digit, '_' or '-'", name)
}

// match matches parts against the route. A user segment that breaks its
// pattern is returned as badUser with ok true, so that match can tell a bad
// name from an unknown path.
func (rt *route) match(parts []string) (m routeMatch, badUser string, ok bool) {
	if len(rt.segs) != len(parts) {
		return m, "", false
	}
	m = routeMatch{route: rt, params: map[string]string{}}
	for i, seg := range rt.segs {
		part := parts[i]
		if i == len(parts)-1 {
			if part, ok = m.peelExt(rt, seg, part); !ok {
				return m, "", false
			}
		}
		if !strings.HasPrefix(seg, "{") {
			if seg != part {
				return m, "", false
			}
			continue
		}
		name := seg[1 : len(seg)-1]
		if !segmentPatterns[name].MatchString(part) {
			if name != "user" {
				return m, "", false
			}
			badUser = part
		}
		m.params[name] = part
	}
	return m, badUser, true
}

// peelExt takes the extension off the last segment: an image extension
// where the route serves images, `.json` where it answers JSON. A user
// segment keeps any other dot, so that `bob.smith` is refused as a name.
func (m *routeMatch) peelExt(rt *route, seg, part string) (string, bool) {
	base, ext, found := strings.Cut(part, ".")
	switch {
	case !found:
		return part, true
	case rt.imageExt && ext != "":
		m.ext = strings.ToLower(ext)
		return base, true
	case rt.jsonExt && ext == "json":
		m.ext = "json"
		return base, true
	case seg == "{user}":
		return part, true
	}
	return part, false
}

// handler returns the route's handler for method; HEAD is served by the
// GET handler where the route has no HEAD handler of its own.
func (rt *route) handler(method string) (handler, bool) {
	h, ok := rt.handlers[method]
	if !ok && method == http.MethodHead {
		h, ok = rt.handlers[http.MethodGet]
	}
	return h, ok
}

// allowed lists a route's methods for the Allow header.
func (rt *route) allowed() string {
	ms := make([]string, 0, len(rt.handlers)+1)
	for m := range rt.handlers {
		ms = append(ms, m)
		if _, head := rt.handlers[http.MethodHead]; m == http.MethodGet && !head {
			ms = append(ms, http.MethodHead)
		}
	}
	sort.Strings(ms)
	return strings.Join(ms, ", ")
}

// knownMethods are the methods the service routes; others answer 501.
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodDelete: true, http.MethodOptions: true, "SEARCH": true, http.MethodPatch: true,
}

// pattern is the route's path template, as OpenTelemetry's http.route
// wants it: /users/{user}/images/{imageIdentifier}.
func (rt *route) pattern() string { return "/" + strings.Join(rt.segs, "/") }

// nameSpan names the request's server span (otelhttp's, when tracing is
// on) after its route rather than its path, which holds image ids.
func nameSpan(r *http.Request, rt *route) {
	span := trace.SpanFromContext(r.Context())
	if !span.IsRecording() {
		return
	}
	p := rt.pattern()
	span.SetName(r.Method + " " + p)
	span.SetAttributes(semconv.HTTPRoute(p))
}
