package api_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

func TestProbes(t *testing.T) {
	e := newEnv(t, testConfig())
	for _, c := range []struct {
		path string
		want int
	}{{"/healthz", 200}, {"/readyz", 200}} {
		if r := e.get(e.url + c.path); r.StatusCode != c.want || r.Header.Get("Cache-Control") == "" {
			t.Fatalf("%s = %d %v, want %d", c.path, r.StatusCode, r.Header, c.want)
		}
	}
	e.srv.Drain()
	if r := e.get(e.url + "/readyz"); r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/readyz while draining = %d, want 503", r.StatusCode)
	}
	// Draining does not stop service.
	if r := e.get(e.url + "/healthz"); r.StatusCode != 200 {
		t.Fatalf("/healthz while draining = %d", r.StatusCode)
	}
	if r := e.get(e.url + "/status"); r.StatusCode != 200 {
		t.Fatalf("/status while draining = %d", r.StatusCode)
	}
}

// TestStatusStorageHangs points the blob store at an S3 endpoint that
// accepts connections and never answers: /status must still answer, 503
// with storage false, instead of hanging with it.
func TestStatusStorageHangs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never answered
		}
	}()
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "y")
	ctx := context.Background()
	db, err := storage.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "v.db"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	blobs, err := storage.OpenBlobs(ctx, "s3://b?endpoint=http://"+ln.Addr().String()+"&region=us-east-1&use_path_style=true")
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	eng, err := engine.New(engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(api.Config{}, api.Deps{DB: db, Blobs: blobs, Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/status.json", nil))
	body := w.Body.String()
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(body, `"storage":false`) || !strings.Contains(body, `"database":true`) {
		t.Fatalf("/status with a hanging store = %d %s; want 503, storage false, database true", w.Code, body)
	}
}
