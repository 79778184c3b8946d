package web_test

import (
	"bytes"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/web"
)

// malformedAnswer wraps the API so that a request of method whose path ends
// in suffix succeeds (201) with body, which is not the document the API
// documents; every other request reaches the API.
func malformedAnswer(method, suffix, body string) func(*storage.DB, http.Handler) http.Handler {
	return func(_ *storage.DB, h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != method || !strings.HasSuffix(r.URL.Path, suffix) {
				h.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(body))
		})
	}
}

// TestMalformedAnswerMakesNoEmptyLink: an answer of the API that cannot be
// read, or that names no identifier, fails the page (500) instead of
// linking to an image or a short URL with an empty identifier, or showing
// the service down; a posted filter.json that is no JSON is said to be so.
func TestMalformedAnswerMakesNoEmptyLink(t *testing.T) {
	quiet := web.Config{Logger: slog.New(slog.DiscardHandler)}
	for _, body := range []string{"not JSON", "{}"} {
		t.Run("upload "+body, func(t *testing.T) {
			e := newEnvWith(t, quiet, malformedAnswer(http.MethodPost, "/users/alice/images", body))
			b := e.browser(t)
			b.signIn("admin", adminPriv)
			p := b.uploadForm("alice", pngBytes(t, 4))
			if p.status != http.StatusInternalServerError || strings.Contains(p.body, `/users/alice/images/"`) {
				t.Fatalf("upload answered %q: %d, want 500 without an empty link\n%s", body, p.status, p.body)
			}
			var form bytes.Buffer
			mw := multipart.NewWriter(&form)
			_ = mw.WriteField("csrf", b.token("/admin/upload"))
			_ = mw.WriteField("user", "alice")
			_ = mw.WriteField("format", "json")
			fw, _ := mw.CreateFormFile("images", "a.png")
			_, _ = fw.Write(pngBytes(t, 4))
			_ = mw.Close()
			p = b.do(http.MethodPost, "/admin/upload", nil, http.Header{"Content-Type": {mw.FormDataContentType()}}, &form)
			if p.status != http.StatusInternalServerError || strings.Contains(p.body, `"href"`) {
				t.Fatalf("upload (format=json) answered %q: %d, want 500 without a link\n%s", body, p.status, p.body)
			}
		})
		t.Run("short URL "+body, func(t *testing.T) {
			e := newEnvWith(t, quiet, malformedAnswer(http.MethodPost, "/shorturls", body))
			b := e.browser(t)
			b.signIn("admin", adminPriv)
			data := pngBytes(t, 5)
			b.uploadForm("alice", data)
			imagePage := "/admin/users/alice/images/" + md5Hex(data)
			p := b.do(http.MethodPost, imagePage+"/shorturls", url.Values{"csrf": {b.token(imagePage)},
				"query": {""}, "extension": {"png"}}, nil)
			if p.status != http.StatusInternalServerError || strings.Contains(p.header.Get("Location"), "short=&") ||
				strings.HasSuffix(p.header.Get("Location"), "short=") {
				t.Fatalf("short URL answered %q: %d %s, want 500 without a link\n%s", body, p.status, p.header.Get("Location"), p.body)
			}
		})
	}
	t.Run("deploy", func(t *testing.T) {
		// Not the API's answer but the posted filter.json, read for the
		// filter's name when the form gives none.
		e := newEnv(t, quiet)
		b := e.browser(t)
		b.signIn("admin", adminPriv)
		var form bytes.Buffer
		mw := multipart.NewWriter(&form)
		_ = mw.WriteField("csrf", b.token("/admin/filters"))
		for field, data := range map[string]string{"manifest": "{not JSON", "module": "\x00asm"} {
			fw, _ := mw.CreateFormFile(field, field)
			_, _ = fw.Write([]byte(data))
		}
		_ = mw.Close()
		p := b.do(http.MethodPost, "/admin/filters/deploy", nil, http.Header{"Content-Type": {mw.FormDataContentType()}}, &form)
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, "The filter.json could not be read") {
			t.Fatalf("deploy of a filter.json that is no JSON: %d, want 400 saying so\n%s", p.status, p.body)
		}
	})
	t.Run("overview", func(t *testing.T) {
		e := newEnvWith(t, quiet, func(_ *storage.DB, h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/status" {
					_, _ = w.Write([]byte("<html>"))
					return
				}
				h.ServeHTTP(w, r)
			})
		})
		b := e.browser(t)
		b.signIn("admin", adminPriv)
		if p := b.do(http.MethodGet, "/admin/", nil, nil); p.status != http.StatusInternalServerError || strings.Contains(p.body, "badge-bad") {
			t.Fatalf("overview with an unreadable /status: %d, want 500, not a service shown down\n%s", p.status, p.body)
		}
	})
}
