package api

import (
	"crypto/md5"
	_ "embed" // the OpenAPI document
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// openAPIYAML is the API reference, api/openapi.yaml.
//
//go:embed openapi.yaml
var openAPIYAML []byte

// OpenAPIYAML returns the OpenAPI 3.1 document describing every route the
// Server answers (api/openapi.yaml).
func OpenAPIYAML() []byte { return append([]byte(nil), openAPIYAML...) }

// openAPIJSON is the document converted to JSON once, with its ETag.
var openAPIJSON = sync.OnceValues(func() (jsonDoc, error) {
	var doc any
	if err := yaml.Unmarshal(openAPIYAML, &doc); err != nil {
		return jsonDoc{}, fmt.Errorf("api: openapi.yaml: %w", err)
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return jsonDoc{}, fmt.Errorf("api: openapi.yaml as JSON: %w", err)
	}
	sum := md5.Sum(body)
	return jsonDoc{body: body, etag: `"` + hex.EncodeToString(sum[:]) + `"`}, nil
})

// jsonDoc is a JSON body and its ETag.
type jsonDoc struct {
	body []byte
	etag string
}

// openAPIPath is where the document is served.
const openAPIPath = "/openapi.json"

// serveOpenAPI answers GET and HEAD /openapi.json with the document, outside
// routing and access control: it is public and the same for every client.
// It reports whether it answered.
func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path != openAPIPath || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return false
	}
	doc, err := openAPIJSON()
	if err != nil { // the embedded document is checked by the tests
		s.log.Error("openapi document", "err", err)
		http.Error(w, "OpenAPI document unavailable", http.StatusInternalServerError)
		return true
	}
	body, etag := doc.body, doc.etag
	h := w.Header()
	h.Set("Cache-Control", "public, max-age=3600")
	h.Set("ETag", etag)
	h.Set("Access-Control-Allow-Origin", "*")
	if inm := r.Header.Get("If-None-Match"); inm != "" && strings.Contains(inm, etag) {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
	return true
}

// Route is one path the Server answers and the methods it serves there.
// Paths use OpenAPI templating (`/users/{user}`); every route with GET
// also answers HEAD, and JSON routes also answer with a `.json` suffix.
type Route struct {
	Path    string
	Methods []string
	// Name is the resource's prefix (image, webhooks): a method's
	// resource is Name.<method>; "" for the probes and the reference.
	Name string
	// Scope is how a rule's users bound the route (scope.go): public,
	// path, any, owned or service.
	Scope string
}

// Routes lists every path and method the Server answers, for checking the
// API reference (api/openapi.yaml) against the server.
func (s *Server) Routes() []Route {
	out := []Route{
		{Path: "/healthz", Methods: []string{http.MethodGet}, Scope: "public"},
		{Path: "/readyz", Methods: []string{http.MethodGet}, Scope: "public"},
		{Path: openAPIPath, Methods: []string{http.MethodGet}, Scope: "public"},
	}
	for _, rt := range s.routes {
		ms := make([]string, 0, len(rt.handlers))
		for m := range rt.handlers {
			ms = append(ms, m)
		}
		sort.Strings(ms)
		out = append(out, Route{Path: "/" + strings.Join(rt.segs, "/"), Methods: ms, Name: rt.name,
			Scope: scopeNames[routeScopes[rt.name]]})
	}
	return out
}
