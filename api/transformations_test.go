package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

func TestTransformations(t *testing.T) {
	e := newEnv(t, testConfig())
	for _, path := range []string{"/transformations", "/transformations.json"} {
		t.Run(path, func(t *testing.T) {
			r := e.get(e.url + path)
			if r.StatusCode != 200 {
				t.Fatalf("%d %s", r.StatusCode, r.body)
			}
			var got struct{ Transformations []engine.Description }
			if err := json.Unmarshal(r.body, &got); err != nil {
				t.Fatal(err)
			}
			byName := map[string]engine.Description{}
			for _, d := range got.Transformations {
				byName[d.Name] = d
			}
			if len(byName) != len(engine.NewRegistry().Names()) {
				t.Fatalf("%d transformations, want every registered one", len(byName))
			}
			c, ok := byName["crop"]
			if !ok || c.Kind != "native" || len(c.Params) == 0 || c.Params[0].Name != "width" || !c.Params[0].Required {
				t.Fatalf("crop: %+v", c)
			}
			// The gravity of thumbnail and crop and the text transformation's
			// parameters are served with their values and descriptions.
			param := func(tr, name string) engine.ParamDesc {
				for _, p := range byName[tr].Params {
					if p.Name == name {
						return p
					}
				}
				t.Fatalf("%s has no parameter %s: %+v", tr, name, byName[tr])
				return engine.ParamDesc{}
			}
			for _, tr := range []string{"thumbnail", "crop"} {
				if g := param(tr, "gravity"); len(g.Values) != 12 || g.Description == "" {
					t.Errorf("%s gravity: %+v", tr, g)
				}
			}
			for _, name := range []string{"text", "font", "size", "color", "opacity", "gravity", "x", "y", "background", "padding", "width"} {
				if p := param("text", name); p.Description == "" {
					t.Errorf("text %s has no description", name)
				}
			}
			if f := param("text", "font"); f.Default != "DejaVu Sans" {
				t.Errorf("text font default %v", f.Default)
			}
		})
	}
}

// TestTransformationPresets: GET /transformations lists the configured
// presets by name with the chains they expand to; none is an empty list.
func TestTransformationPresets(t *testing.T) {
	for _, presets := range []map[string][]string{nil, {
		"thumb":  {"thumbnail:width=100,height=100", "desaturate"},
		"avatar": {"crop:width=10,height=10"},
	}} {
		ctx := context.Background()
		dir := t.TempDir()
		db, err := storage.Open(ctx, "sqlite://"+filepath.Join(dir, "v.db"), storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		blobs, err := storage.OpenBlobs(ctx, "mem://")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { blobs.Close() })
		eng, err := engine.New(engine.Config{Presets: presets})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := api.New(testConfig(), api.Deps{DB: db, Blobs: blobs, Engine: eng})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/transformations", nil))
		var got struct {
			Presets []struct {
				Name            string
				Transformations []string
			}
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Presets == nil {
			t.Fatalf("presets %v: %v %s", presets, err, rec.Body)
		}
		if len(got.Presets) != len(presets) {
			t.Fatalf("presets: %+v, want %v", got.Presets, presets)
		}
		if len(presets) > 0 && (got.Presets[0].Name != "avatar" || got.Presets[1].Name != "thumb" ||
			strings.Join(got.Presets[1].Transformations, " ") != "thumbnail:width=100,height=100 desaturate") {
			t.Fatalf("presets: %+v", got.Presets)
		}
	}
}
