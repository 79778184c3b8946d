package engine

import (
	"bytes"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

// TestSearchProxy checks the proxies' geometry: nine full-resolution
// squares on a 16-pixel grid for the mosaic, a 384-pixel downscale for
// WebP, and none for an output under twice the proxy's area.
func TestSearchProxy(t *testing.T) {
	newTestEngine(t, Config{})
	img, err := vips.NewImageFromBuffer(source(t, 1200, 700, "png", false))
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close()
	px, w, _, err := rgbPixels(img)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := searchProxyOf(img, "jpg")
	if err != nil || sp == nil || sp.kind != "mosaic" {
		t.Fatalf("jpg proxy %+v, %v", sp, err)
	}
	mp, mw, mh, err := rgbPixels(sp.img)
	sp.img.Close()
	if err != nil || mw != 384 || mh != 384 {
		t.Fatalf("mosaic %dx%d, %v", mw, mh, err)
	}
	for r := 0; r < 3; r++ {
		for c := 0; c < 3; c++ {
			x := (w - 128) * (2*c + 1) / 6 / 16 * 16
			y := (700 - 128) * (2*r + 1) / 6 / 16 * 16
			for row := 0; row < 128; row += 31 {
				got := mp[3*((r*128+row)*mw+c*128) : 3*((r*128+row)*mw+c*128+128)]
				want := px[3*((y+row)*w+x) : 3*((y+row)*w+x+128)]
				if !bytes.Equal(got, want) {
					t.Fatalf("square %d,%d row %d differs from the image at %d,%d", c, r, row, x, y+row)
				}
			}
		}
	}
	sp, err = searchProxyOf(img, "webp")
	if err != nil || sp == nil || sp.kind != "downscaled" || sp.img.Width() != 384 {
		t.Fatalf("webp proxy %+v, %v", sp, err)
	}
	sp.img.Close()
	small, err := vips.NewImageFromBuffer(source(t, 500, 400, "png", false))
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	if sp, err := searchProxyOf(small, "jpg"); sp != nil || err != nil {
		t.Errorf("500x400: proxy %+v, %v; want none", sp, err)
	}
}

// TestPredictQuality checks that the predicted start rises with the
// target and stays a quality.
func TestPredictQuality(t *testing.T) {
	for _, f := range AutoQualityFormats() {
		prev := 0
		for target := 40.0; target <= 100; target += 2.5 {
			q := predictQuality(f, target)
			if q < prev || q < 1 || q > 100 {
				t.Errorf("%s: target %g predicts q%d after q%d", f, target, q, prev)
			}
			prev = q
		}
	}
}
