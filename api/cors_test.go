package api_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestCORS(t *testing.T) {
	cfg := testConfig()
	cfg.CORS.AllowedOrigins = []string{"https://app.example"}
	e := newEnv(t, cfg)
	id := e.upload(pngImage(t, 10, 10, 1))
	path := "/users/alice/images/" + id

	r := e.request(http.MethodOptions, e.url+path, nil, "Origin", "https://app.example",
		"Access-Control-Request-Headers", "x-service-publickey, x-evil")
	h := r.Header
	if r.StatusCode != 204 || h.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		h.Get("Access-Control-Allow-Methods") != "OPTIONS, GET, HEAD" || h.Get("Access-Control-Max-Age") != "3600" ||
		h.Get("Access-Control-Allow-Headers") != "Content-Type, Accept, X-Service-Publickey" ||
		!strings.Contains(h.Get("Vary"), "Origin") {
		t.Fatalf("preflight: %d %v", r.StatusCode, h)
	}
	r = e.request(http.MethodOptions, e.url+path, nil, "Origin", "https://evil.example")
	if r.StatusCode != 204 || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight from another origin: %d %v", r.StatusCode, r.Header)
	}
	r = e.get(e.tokenURL(path, userPriv), "Origin", "https://app.example")
	expose := r.Header.Get("Access-Control-Expose-Headers")
	if r.StatusCode != 200 || r.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(expose, "X-Service-Originalwidth") || !strings.Contains(expose, "X-Service-Imageidentifier") {
		t.Fatalf("GET: %d %v", r.StatusCode, r.Header)
	}
	// Errors carry CORS headers too.
	r = e.get(e.url+path, "Origin", "https://app.example")
	if r.StatusCode != 400 || r.Header.Get("Access-Control-Allow-Origin") == "" ||
		!strings.Contains(r.Header.Get("Access-Control-Expose-Headers"), "X-Service-Error-Message") {
		t.Fatalf("error: %d %v", r.StatusCode, r.Header)
	}
	// Writes are not in the default method list.
	r = e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, pngImage(t, 5, 5, 2), "Origin", "https://app.example")
	if r.StatusCode != 201 || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("POST: %d %v", r.StatusCode, r.Header)
	}
}

func TestCORSOffByDefault(t *testing.T) {
	e := newEnv(t, testConfig())
	r := e.request(http.MethodOptions, e.url+"/status", nil, "Origin", "https://app.example")
	if r.StatusCode != 405 || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("OPTIONS without CORS: %d %v", r.StatusCode, r.Header)
	}
}
