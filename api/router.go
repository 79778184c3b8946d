package api

import (
	"net/http"
	"regexp"
	"sort"
	"strings"
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
}

// routeMatch is a matched route with its path parameters.
type routeMatch struct {
	route  *route
	params map[string]string
	ext    string // without the dot; "json" or an image extension
}

// match finds the route for a path; ok is false for unknown paths.
func match(routes []*route, path string) (routeMatch, bool) {
	trimmed := strings.Trim(path, "/")
	var parts []string
	if trimmed != "" {
		parts = strings.Split(trimmed, "/")
	}
	for _, rt := range routes {
		if len(rt.segs) != len(parts) {
			continue
		}
		m := routeMatch{route: rt, params: map[string]string{}}
		ok := true
		for i, seg := range rt.segs {
			part := parts[i]
			if i == len(parts)-1 {
				if base, ext, found := strings.Cut(part, "."); found {
					switch {
					case rt.imageExt && ext != "":
						m.ext = strings.ToLower(ext)
						part = base
					case rt.jsonExt && ext == "json":
						m.ext = "json"
						part = base
					default:
						ok = false
					}
				}
			}
			if !ok {
				break
			}
			if strings.HasPrefix(seg, "{") {
				name := seg[1 : len(seg)-1]
				if !segmentPatterns[name].MatchString(part) {
					ok = false
					break
				}
				m.params[name] = part
			} else if seg != part {
				ok = false
				break
			}
		}
		if ok {
			return m, true
		}
	}
	return routeMatch{}, false
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
	http.MethodDelete: true, http.MethodOptions: true, "SEARCH": true,
}
