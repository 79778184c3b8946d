package main

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"os"
	"testing"
)

// sample is pigo's test portrait (testdata/sample.jpg, from pigo's
// repository, MIT licence): one face, frontal, in the middle.
func sample(t testing.TB) image.Image {
	t.Helper()
	b, err := os.ReadFile("testdata/sample.jpg")
	if err != nil {
		t.Fatal(err)
	}
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestFindPortrait(t *testing.T) {
	d, err := newDetector()
	if err != nil {
		t.Fatal(err)
	}
	faces := d.find(sample(t), defaults)
	if len(faces) != 1 {
		t.Fatalf("%d faces, want 1: %+v", len(faces), faces)
	}
	f := faces[0]
	cx, cy := f.X+f.Width/2, f.Y+f.Height/2
	// The face of the 320x400 portrait is about 200 pixels wide, centred
	// at about (160, 200).
	if cx < 130 || cx > 190 || cy < 160 || cy > 250 || f.Width < 120 || f.Width > 280 {
		t.Errorf("face %+v, want one about 200 pixels wide around (160, 200)", f)
	}
	if f.Source != "faces" || f.Quality < defaults.MinQuality {
		t.Errorf("face %+v", f)
	}
}

func TestFindNone(t *testing.T) {
	d, err := newDetector()
	if err != nil {
		t.Fatal(err)
	}
	img := image.NewRGBA(image.Rect(0, 0, 400, 300))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.RGBA{90, 140, 200, 255}), image.Point{}, draw.Src)
	draw.Draw(img, image.Rect(50, 50, 150, 120), image.NewUniform(color.RGBA{250, 250, 20, 255}), image.Point{}, draw.Src)
	if faces := d.find(img, defaults); len(faces) != 0 {
		t.Errorf("faces in a picture of rectangles: %+v", faces)
	}
	if faces := d.find(image.NewGray(image.Rect(0, 0, 10, 10)), defaults); faces != nil {
		t.Errorf("faces in a 10x10 picture: %+v", faces)
	}
}

// TestFindScaled checks that faces found on a picture scaled down before the
// search are reported in the stored image's pixels.
func TestFindScaled(t *testing.T) {
	d, err := newDetector()
	if err != nil {
		t.Fatal(err)
	}
	img := sample(t)
	full := d.find(img, settings{MaxSide: 400, MinQuality: 5})
	half := d.find(img, settings{MaxSide: 200, MinQuality: 5})
	if len(full) != 1 || len(half) != 1 {
		t.Fatalf("faces at 400: %+v, at 200: %+v", full, half)
	}
	a, b := full[0], half[0]
	if abs(a.X-b.X) > 30 || abs(a.Y-b.Y) > 30 || abs(a.Width-b.Width) > 40 {
		t.Errorf("at 400: %+v, at 200 (scaled back): %+v", a, b)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func TestMerge(t *testing.T) {
	had := []map[string]any{{"cx": 5, "cy": 6}, {"x": 1, "y": 2, "width": 3, "height": 4, "source": "faces"}}
	got := merge(had, []face{{X: 10, Y: 20, Width: 30, Height: 30, Quality: 9, Source: "faces"}})
	if len(got) != 2 {
		t.Fatalf("merge: %+v", got)
	}
	if p, ok := got[0].(map[string]any); !ok || p["cx"] != 5 {
		t.Errorf("the client's point is not first: %+v", got)
	}
	if f, ok := got[1].(face); !ok || f.X != 10 {
		t.Errorf("the new face is not second: %+v", got)
	}
	if merge(nil, nil) != nil {
		t.Error("nothing to write gave a list")
	}
}

// BenchmarkFind measures a search on a 12 MP JPEG, decode included, as the
// listener does it; the time per megapixel is ns/op / 12e6 * 1e3 ms/MP.
// (The WebAssembly build's cost is in wasm-sdk/README.md.)
func BenchmarkFind(b *testing.B) {
	d, err := newDetector()
	if err != nil {
		b.Fatal(err)
	}
	src := sample(b)
	big := image.NewRGBA(image.Rect(0, 0, 4000, 3000))
	for y := 0; y < 3000; y += 400 {
		for x := 0; x < 4000; x += 320 {
			draw.Draw(big, image.Rect(x, y, x+320, y+400), src, image.Point{}, draw.Src)
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, big, &jpeg.Options{Quality: 85}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		img, err := jpeg.Decode(bytes.NewReader(buf.Bytes()))
		if err != nil {
			b.Fatal(err)
		}
		d.find(img, defaults)
	}
}
