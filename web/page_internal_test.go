package web

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a-h/templ"
)

// TestPageRenderFailure: a page that fails half-way through rendering
// writes nothing, so the error page that follows is a clean 500 rather than
// the half page under 200.
func TestPageRenderFailure(t *testing.T) {
	half := templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, _ = io.WriteString(w, "<html><body>half a page")
		return errors.New("template exploded")
	})
	whole := templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := io.WriteString(w, "<html><body>all of it</body></html>")
		return err
	})
	cases := []struct {
		name       string
		page       templ.Component
		wantStatus int
		want, not  string
	}{
		{"render error", half, http.StatusInternalServerError, "Something went wrong", "half a page"},
		{"rendered", whole, http.StatusOK, "all of it", "Something went wrong"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := &UI{cfg: Config{Prefix: "/admin", Logger: slog.New(slog.DiscardHandler)}}
			rec := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodGet, "/admin/x", nil)
			if err := writePage(rec, r, http.StatusOK, tc.page); err != nil {
				u.fail(rec, r, err)
			}
			body := rec.Body.String()
			if rec.Code != tc.wantStatus || !strings.Contains(body, tc.want) || strings.Contains(body, tc.not) {
				t.Errorf("status %d, body %.300q; want %d with %q and without %q", rec.Code, body, tc.wantStatus, tc.want, tc.not)
			}
		})
	}
}
