package api_test

import (
	"bytes"
	"image"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
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

// TestSVGUpload stores an SVG as sent when uploads.svg is on, serves it
// with a policy that runs nothing, and renders it as PNG; hostile SVGs are
// refused with a 415 naming what was found, and the loopback server they
// point at gets no request.
func TestSVGUpload(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	svg := []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="60" height="40"><rect width="30" height="40" fill="#f00"/></svg>`)
	off := newEnv(t, testConfig())
	if r := off.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, svg); r.StatusCode != 415 ||
		r.errMessage(t) != "Unsupported image type: image/svg+xml (uploads.svg is off)" {
		t.Errorf("uploads.svg off: %d %s", r.StatusCode, r.body)
	}
	e := newEnvWith(t, testConfig(), withEngine(t, engine.Config{Uploads: engine.Uploads{SVG: true}}))
	id := e.upload(svg)
	orig := e.get(e.tokenURL("/users/alice/images/"+id, userPriv))
	if orig.Header.Get("Content-Type") != "image/svg+xml" || !bytes.Equal(orig.body, svg) ||
		!strings.HasPrefix(orig.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("original: %s, CSP %q, same bytes %v", orig.Header.Get("Content-Type"), orig.Header.Get("Content-Security-Policy"), bytes.Equal(orig.body, svg))
	}
	png := e.get(e.tokenURL("/users/alice/images/"+id+".png?t[]=resize:width=120", userPriv))
	if png.StatusCode != 200 || png.Header.Get("X-Service-OutputWidth") != "120" {
		t.Fatalf(".png: %d %s", png.StatusCode, png.body)
	}
	px := vipsPixels(t, png.body)
	if c := px.NRGBAAt(20, 40); c.R < 250 || c.G > 5 || c.A < 250 {
		t.Errorf("left half %v, want red", c)
	}
	if c := px.NRGBAAt(100, 40); c.A > 5 {
		t.Errorf("right half %v, want transparent", c)
	}
	for name, doc := range map[string]string{
		"script":   `<svg xmlns="http://www.w3.org/2000/svg"><script>fetch("` + srv.URL + `")</script></svg>`,
		"image":    `<svg xmlns="http://www.w3.org/2000/svg"><image href="` + srv.URL + `/x.png" width="9" height="9"/></svg>`,
		"entities": `<!DOCTYPE svg [<!ENTITY x SYSTEM "` + srv.URL + `/x">]><svg xmlns="http://www.w3.org/2000/svg">&x;</svg>`,
	} {
		r := e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, []byte(doc))
		if r.StatusCode != 415 || !strings.HasPrefix(r.errMessage(t), "SVG refused: ") {
			t.Errorf("%s: %d %s", name, r.StatusCode, r.body)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("the loopback server got %d requests", hits.Load())
	}
}

// TestConvertSetsTheFormat: t[]=convert:type=webp answers WebP for a
// PNG asked for without an extension (it used to be ignored), whatever
// Accept says; an extension in the path still wins.
func TestConvertSetsTheFormat(t *testing.T) {
	e := newEnv(t, testConfig())
	id := e.upload(pngImage(t, 32, 24, 4))
	for _, c := range []struct{ path, accept, want string }{
		{"/users/alice/images/" + id + "?t[]=convert:type=webp", "", "image/webp"},
		{"/users/alice/images/" + id + "?t[]=convert:type=jpg", "image/png", "image/jpeg"},
		{"/users/alice/images/" + id + ".png?t[]=convert:type=webp", "", "image/png"},
		{"/users/alice/images/" + id + "?t[]=convert:type=png", "", "image/png"},
	} {
		r := e.get(e.tokenURL(c.path, userPriv), "Accept", c.accept)
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != c.want {
			t.Errorf("%s (Accept %q): %d %s, want %s", c.path, c.accept, r.StatusCode, r.Header.Get("Content-Type"), c.want)
		}
	}
}
