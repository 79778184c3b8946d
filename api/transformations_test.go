package api_test

import (
	"encoding/json"
	"testing"

	"github.com/vitrine/vitrine/engine"
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
