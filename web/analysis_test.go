package web_test

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/web"
)

// gradientPNG is a w×h picture with a smooth gradient and a disc, the same
// picture at any size (so its perceptual hash stays near); invert makes a
// different picture.
func gradientPNG(t *testing.T, w, h int, invert bool) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			v := uint8(40 + 180*fx)
			if math.Hypot(fx-.3, fy-.4) < .2 {
				v = 240
			}
			if invert {
				v = 255 - v
			}
			img.Set(x, y, color.NRGBA{v, uint8(60 + 120*fy), 255 - v, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestPlaceholdersAndSimilar: grid tiles carry the average colour (an SVG,
// which needs no inline style) and the BlurHash for app.js; the image page
// shows the colours, the BlurHash and the similar images with their
// distance, and no strip for an image nothing is near.
func TestPlaceholdersAndSimilar(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	big, small, other := gradientPNG(t, 160, 120, false), gradientPNG(t, 80, 60, false), gradientPNG(t, 160, 120, true)
	b.uploadForm("alice", big, small, other)

	grid := b.do(http.MethodGet, "/admin/users/alice", nil, nil)
	tiles := regexp.MustCompile(`<svg class="ph"[^>]*><rect width="1" height="1" fill="#[0-9a-f]{6}"></rect></svg>\s*<img [^>]*data-blurhash="[^"]{10,}" data-ratio="1.333"`)
	if n := len(tiles.FindAllString(grid.body, -1)); n != 3 {
		t.Fatalf("grid: %d tiles with a colour and a BlurHash, want 3\n%s", n, grid.body)
	}
	if strings.Contains(grid.body, "style=") {
		t.Error("the grid has an inline style, which the Content-Security-Policy refuses")
	}

	p := b.do(http.MethodGet, "/admin/users/alice/images/"+md5Hex(big), nil, nil)
	_, similar, ok := strings.Cut(p.body, `id="similar"`)
	if !ok {
		t.Fatalf("no similar images on the page of an image with a near copy:\n%s", p.body)
	}
	similar, _, _ = strings.Cut(similar, "</section>")
	if !strings.Contains(similar, "/admin/users/alice/images/"+md5Hex(small)) || !strings.Contains(similar, "apart") ||
		strings.Contains(similar, md5Hex(other)) {
		t.Errorf("similar strip:\n%s", similar)
	}
	_, colours, _ := strings.Cut(p.body, `id="colours"`)
	colours, _, _ = strings.Cut(colours, "</section>")
	if !regexp.MustCompile(`id="blurhash">[^<]{10,}<`).MatchString(colours) ||
		!regexp.MustCompile(`<ul class="swatches" id="palette"[^>]*><li><svg class="swatch"[^>]*aria-label="Colour #[0-9a-f]{6}"`).MatchString(colours) {
		t.Errorf("placeholder and colours:\n%s", colours)
	}
	if p := b.do(http.MethodGet, "/admin/users/alice/images/"+md5Hex(other), nil, nil); strings.Contains(p.body, `id="similar"`) {
		t.Error("a similar-images strip on the page of an image nothing is near")
	}
}

// TestEXIFOnImagePage: the image page summarises metadata.exif (camera,
// exposure, dates, dimensions) and lists every tag; the position only
// appears when the tags hold one; once a metadata change drops the tags it
// says so, not that the original has none.
func TestEXIFOnImagePage(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	data := gradientPNG(t, 64, 48, false)
	b.uploadForm("alice", data)
	page := "/admin/users/alice/images/" + md5Hex(data)
	if p := b.do(http.MethodGet, page, nil, nil); !strings.Contains(p.body, "The metadata holds no exif key") {
		t.Errorf("an image without EXIF does not say so")
	}
	for _, c := range []struct {
		exif string
		want []string
		gps  bool
	}{
		{`{"Make": "Canon", "Model": "Canon EOS 5D", "LensModel": "EF50mm f/1.8 <II>", "ExposureTime": 0.004,
			"FNumber": 2.8, "ISOSpeedRatings": 400, "FocalLength": 50, "DateTimeOriginal": "2024-05-01T13:45:10",
			"PixelXDimension": 64, "PixelYDimension": 48, "IPTC:Keywords": ["snow", "night"]}`,
			[]string{"<dt>Camera</dt><dd>Canon EOS 5D</dd>", "<dt>Lens</dt><dd>EF50mm f/1.8 &lt;II&gt;</dd>",
				"<dt>Exposure</dt><dd>1/250 s · f/2.8 · ISO 400 · 50 mm</dd>", "<dt>Taken</dt><dd>2024-05-01 13:45:10</dd>",
				"<dt>Dimensions</dt><dd>64 × 48 px</dd>", `IPTC:Keywords</th><td class="wrap">snow, night</td>`}, false},
		{`{"Make": "Nikon", "Model": "D750", "GPSLatitude": -1.5, "GPSLongitude": 2.25, "GPSAltitude": 35}`,
			[]string{"<dt>Camera</dt><dd>Nikon D750</dd>", "<dt>Position (GPS)</dt><dd>-1.50000, 2.25000 · 35 m</dd>"}, true},
	} {
		doc := `{"exif": ` + c.exif + `}`
		if p := b.do(http.MethodPost, page+"/metadata", url.Values{"csrf": {b.token(page)}, "metadata": {doc}}, nil); p.status != http.StatusSeeOther {
			t.Fatalf("save metadata: %d", p.status)
		}
		p := b.do(http.MethodGet, page, nil, nil)
		_, exif, _ := strings.Cut(p.body, `id="exif"`)
		exif, _, _ = strings.Cut(exif, "</section>")
		for _, w := range c.want {
			if !strings.Contains(exif, w) {
				t.Errorf("EXIF section lacks %s:\n%s", w, exif)
			}
		}
		if got := strings.Contains(exif, "Position (GPS)"); got != c.gps {
			t.Errorf("position shown: %v, want %v", got, c.gps)
		}
	}
	// A metadata change without the exif key drops the tags: the page says
	// the metadata holds none, not that the original has none, and how to
	// copy them again.
	if p := b.do(http.MethodPost, page+"/metadata", url.Values{"csrf": {b.token(page)}, "metadata": {`{"album": "x"}`}}, nil); p.status != http.StatusSeeOther {
		t.Fatalf("save metadata: %d", p.status)
	}
	_, exif, _ := strings.Cut(b.do(http.MethodGet, page, nil, nil).body, `id="exif"`)
	exif, _, _ = strings.Cut(exif, "</section>")
	if strings.Contains(exif, "original carries no") || !strings.Contains(exif, "The metadata holds no exif key") ||
		!strings.Contains(exif, "vitrine analyze --force --user alice") {
		t.Errorf("EXIF section after a metadata change without exif:\n%s", exif)
	}
}
