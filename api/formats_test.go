package api_test

import (
	"image"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
)

// withEngine is a newEnvWith hook that gives the server an engine built
// from cfg.
func withEngine(t *testing.T, cfg engine.Config) func(*api.Deps) {
	return func(d *api.Deps) {
		eng, err := engine.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		d.Engine = eng
	}
}

// vipsPixels decodes encoded bytes with libvips (any format it loads) to
// 8-bit RGBA.
func vipsPixels(t *testing.T, data []byte) *image.NRGBA {
	t.Helper()
	ref, err := vips.NewImageFromBuffer(data)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	if !ref.HasAlpha() {
		if err := ref.AddAlpha(); err != nil {
			t.Fatal(err)
		}
	}
	px, err := ref.ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	w, h := ref.Width(), ref.Height()
	if len(px) != w*h*4 {
		t.Fatalf("decoded %d bytes for %dx%d RGBA", len(px), w, h)
	}
	return &image.NRGBA{Pix: px, Stride: 4 * w, Rect: image.Rect(0, 0, w, h)}
}

// meanAbsDiff is the mean absolute RGB difference of two same-size images.
func meanAbsDiff(t *testing.T, a, b *image.NRGBA) float64 {
	t.Helper()
	if a.Rect != b.Rect {
		t.Fatalf("sizes differ: %v vs %v", a.Rect, b.Rect)
	}
	var sum float64
	for i := 0; i < len(a.Pix); i += 4 {
		for c := 0; c < 3; c++ {
			sum += math.Abs(float64(a.Pix[i+c]) - float64(b.Pix[i+c]))
		}
	}
	return sum / float64(len(a.Pix)/4*3)
}

// TestJXLOutput uploads a JPEG, fetches it as JPEG XL by extension and by
// Accept, decodes the answer with libvips and compares its pixels with the
// JPEG's; compress sets the quality.
func TestJXLOutput(t *testing.T) {
	e := newEnv(t, testConfig())
	src := jpegImage(t, 200, 150)
	id := e.upload(src)
	want := vipsPixels(t, src)
	base := "/users/alice/images/" + id
	r := e.get(e.tokenURL(base+".jxl", userPriv))
	if r.StatusCode != 200 || r.Header.Get("Content-Type") != "image/jxl" {
		t.Fatalf(".jxl: %d %s %s", r.StatusCode, r.Header.Get("Content-Type"), r.body)
	}
	if d := meanAbsDiff(t, want, vipsPixels(t, r.body)); d > 3 {
		t.Errorf(".jxl: mean abs error %.2f against the JPEG, want <= 3", d)
	}
	low := e.get(e.tokenURL(base+".jxl?t[]=compress:level=20", userPriv))
	if low.StatusCode != 200 || len(low.body) >= len(r.body) {
		t.Errorf("compress:level=20: %d, %d bytes; the default quality gave %d", low.StatusCode, len(low.body), len(r.body))
	}
	// Named in Accept (never picked from a wildcard): JPEG XL, with Vary.
	acc := e.get(e.tokenURL(base+"?t[]=resize:width=100", userPriv), "Accept", "image/jxl,image/*;q=0.8")
	if acc.Header.Get("Content-Type") != "image/jxl" || !strings.Contains(acc.Header.Get("Vary"), "Accept") {
		t.Errorf("Accept image/jxl: %s, Vary %q", acc.Header.Get("Content-Type"), acc.Header.Get("Vary"))
	}
	wild := e.get(e.tokenURL(base+"?t[]=resize:width=100", userPriv), "Accept", "image/*")
	if wild.Header.Get("Content-Type") != "image/jpeg" {
		t.Errorf("Accept image/*: %s, want the original's image/jpeg", wild.Header.Get("Content-Type"))
	}
}

// TestJXLInput stores a JPEG XL upload when uploads.formats lists jxl and
// refuses it (415) otherwise.
func TestJXLInput(t *testing.T) {
	ref, err := vips.NewImageFromBuffer(pngImage(t, 120, 80, 9))
	if err != nil {
		t.Fatal(err)
	}
	jxl, _, err := ref.ExportJxl(&vips.JxlExportParams{Distance: 1, Effort: 3})
	ref.Close()
	if err != nil {
		t.Fatal(err)
	}
	off := newEnv(t, testConfig())
	if r := off.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, jxl); r.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("jxl not listed: %d %s", r.StatusCode, r.body)
	}
	on := newEnvWith(t, testConfig(), withEngine(t, engine.Config{Uploads: engine.Uploads{Formats: []string{"jpg", "jxl"}}}))
	id := on.upload(jxl)
	orig := on.get(on.tokenURL("/users/alice/images/"+id, userPriv))
	if orig.Header.Get("Content-Type") != "image/jxl" || string(orig.body) != string(jxl) {
		t.Errorf("original: %s, %d bytes (uploaded %d)", orig.Header.Get("Content-Type"), len(orig.body), len(jxl))
	}
	png := on.get(on.tokenURL("/users/alice/images/"+id+".png", userPriv))
	if png.StatusCode != 200 {
		t.Fatalf(".png: %d %s", png.StatusCode, png.body)
	}
	if d := meanAbsDiff(t, vipsPixels(t, jxl), vipsPixels(t, png.body)); d > 0.5 {
		t.Errorf("jxl served as png: mean abs error %.2f", d)
	}
}
