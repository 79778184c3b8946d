package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/api/openapitest"
)

// documentedOnly are paths the document describes that the API handler
// does not serve itself: `vitrine serve` serves /metrics beside it.
var documentedOnly = map[string]bool{"/metrics": true}

// TestOpenAPICoversEveryRoute fails when a route or method is added to the
// server without its description in api/openapi.yaml, or described without
// being served.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(api.OpenAPIYAML(), &doc); err != nil {
		t.Fatal(err)
	}
	described := map[string]bool{}
	for path, item := range doc.Paths {
		if ref, ok := item["$ref"].(string); ok {
			target := strings.ReplaceAll(strings.ReplaceAll(strings.TrimPrefix(ref, "#/paths/"), "~1", "/"), "~0", "~")
			item = doc.Paths[target]
		}
		for m := range item {
			switch m {
			case "get", "head", "post", "put", "delete", "options", "patch":
				described[strings.ToUpper(m)+" "+path] = true
			}
		}
	}
	served := map[string]bool{}
	e := newEnv(t, testConfig())
	for _, rt := range e.srv.Routes() {
		for _, m := range rt.Methods {
			served[m+" "+rt.Path] = true
		}
	}
	if len(served) < 20 {
		t.Fatalf("Routes lists only %d routes", len(served))
	}
	var missing, extra []string
	for r := range served {
		if !described[r] {
			missing = append(missing, r)
		}
	}
	for r := range described {
		if !served[r] && !documentedOnly[strings.SplitN(r, " ", 2)[1]] {
			extra = append(extra, r)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("routes served but not described in api/openapi.yaml:\n\t%s", strings.Join(missing, "\n\t"))
	}
	if len(extra) > 0 {
		t.Errorf("routes described in api/openapi.yaml but not served:\n\t%s", strings.Join(extra, "\n\t"))
	}
}

// TestOpenAPIServed checks GET /openapi.json: the YAML document as JSON,
// public, cacheable, with a 304 on a matching ETag.
func TestOpenAPIServed(t *testing.T) {
	e := newEnv(t, testConfig())
	resp, err := http.Get(e.url + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi.json = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	var want map[string]any
	if err := yaml.Unmarshal(api.OpenAPIYAML(), &want); err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	if string(wantJSON) != string(body) {
		t.Fatal("GET /openapi.json differs from api/openapi.yaml")
	}
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi = %v", doc["openapi"])
	}
	etag := resp.Header.Get("ETag")
	if etag == "" || !strings.Contains(resp.Header.Get("Cache-Control"), "max-age") {
		t.Fatalf("cache headers: ETag %q, Cache-Control %q", etag, resp.Header.Get("Cache-Control"))
	}
	req, _ := http.NewRequest(http.MethodGet, e.url+"/openapi.json", nil)
	req.Header.Set("If-None-Match", etag)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Fatalf("with If-None-Match: %d, want 304", resp.StatusCode)
	}
}

// TestOpenAPICheckerRejects makes sure the checking the tests rely on can
// fail: a response body off the document, an undescribed route answered
// 200, and an out-of-range parameter the server accepted.
func TestOpenAPICheckerRejects(t *testing.T) {
	c, err := openapitest.New()
	if err != nil {
		t.Fatal(err)
	}
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	cases := []struct {
		name, method, url string
		status            int
		body              string
		want              string
	}{
		{"body off the schema", "GET", "/users/alice", 200, `{"user":"alice","numImages":"three","lastModified":"x"}`, "numImages"},
		{"undescribed route", "GET", "/nowhere", 200, `{}`, "does not describe this route"},
		{"parameter out of range", "GET", "/users/alice/images?limit=5000", 200,
			`{"search":{"hits":0,"page":1,"limit":20,"count":0},"images":[]}`, "limit"},
		{"error without its body", "GET", "/nowhere", 404, `nope`, "JSON error body"},
	}
	for _, tc := range cases {
		x := openapitest.Exchange{Request: httptest.NewRequest(tc.method, tc.url, nil), Status: tc.status,
			Header: jsonHeader, ResponseBody: []byte(tc.body)}
		err := c.Check(x)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Check = %v, want an error mentioning %q", tc.name, err, tc.want)
		}
	}
	ok := openapitest.Exchange{Request: httptest.NewRequest("GET", "/users/alice.json", nil), Status: 200,
		Header: jsonHeader, ResponseBody: []byte(userBody(""))}
	if err := c.Check(ok); err != nil {
		t.Errorf("a conforming exchange: %v", err)
	}
}

// userBody is a GET /users/alice answer the document describes, with
// extra appended to its fields.
func userBody(extra string) string {
	return `{"user":"alice","numImages":3,"lastModified":"Tue, 24 Nov 2026 05:00:00 GMT",` +
		`"quota":{"images":100,"bytes":0,"variantsPerImage":50},` +
		`"usage":{"images":3,"bytes":900,"variants":2,"variantBytes":80,"maxVariantsPerImage":1,"variations":0,"variationBytes":0}` + extra + `}`
}

// tbRecorder is a testing.TB that keeps the errors reported to it, so a
// test can check that the validating middleware fails a test.
type tbRecorder struct {
	testing.TB
	errs []string
}

func (r *tbRecorder) Error(args ...any) { r.errs = append(r.errs, fmt.Sprint(args...)) }

// TestOpenAPIMiddlewareStrict: the validating middleware the api tests
// wrap their server with fails the test on a response field the document
// does not describe and on a /filters entry whose stat has the wrong type,
// and passes a /filters answer the document describes.
func TestOpenAPIMiddlewareStrict(t *testing.T) {
	c, err := openapitest.New()
	if err != nil {
		t.Fatal(err)
	}
	filter := func(stats string) string {
		return `{"filters":[{"name":"sepia","source":"dir","state":"ready","loaded":true,"contentHash":"9f86d081884c7d659a2feaa0c55ad015",` +
			`"manifest":{"name":"sepia","version":"1.0.0","abi":1,"kind":"transformation",` +
			`"params":{"amount":{"type":"number","min":0,"max":1,"default":0.5}},"settings":{"tone":{"r":1}},` +
			`"limits":{"memoryMB":64,"timeoutMs":2000,"instances":2,"queue":8,"queueMs":2000}},` +
			`"stats":` + stats + `,"counters":{"sepia.frames":3}}],"deployed":[],"instances":[]}`
	}
	const goodStats = `{"calls":12,"errors":0,"timeouts":0,"rejections":1,"p50Ms":3.2,"p99Ms":9.8,"busy":0,"instances":2,"waiting":1}`
	cases := []struct {
		name, path, body string
		want             string // "" for a conforming exchange
	}{
		{"undocumented field", "/users/alice", userBody(`,"secret":"leaked"`), "secret"},
		{"conforming user", "/users/alice", userBody(""), ""},
		{"undocumented nested field", "/filters",
			filter(`{"calls":12,"errors":0,"timeouts":0,"rejections":1,"p50Ms":3.2,"p99Ms":9.8,"busy":0,"instances":2,"waiting":1,"extra":1}`), "extra"},
		{"wrongly typed stat", "/filters", filter(strings.Replace(goodStats, `"busy":0`, `"busy":"none"`, 1)), "busy"},
		{"missing stat", "/filters", filter(strings.Replace(goodStats, `,"waiting":1`, "", 1)), "waiting"},
		{"conforming filters", "/filters", filter(goodStats), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, tc.body)
			})
			rec := &tbRecorder{TB: t}
			c.Handler(rec, h).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, tc.path, nil))
			got := strings.Join(rec.errs, "\n")
			switch {
			case tc.want == "" && got != "":
				t.Errorf("a conforming exchange failed the test: %s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("the middleware reported %q, want an error mentioning %q", got, tc.want)
			}
		})
	}
}
