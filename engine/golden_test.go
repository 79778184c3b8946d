package engine

import (
	"flag"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

var update = flag.Bool("update", false, "rewrite golden images under testdata/golden")

// assertGolden compares img (any encoded format libvips reads) with
// testdata/golden/<name>.png: equal dimensions and a mean absolute error per
// channel (0-255 scale) within tol. With -update it rewrites the golden. On
// failure it writes actual.png and diff.png under testdata/failed/<name>/.
func assertGolden(t *testing.T, name string, encoded []byte, tol float64) {
	t.Helper()
	got := decodeRGBA(t, encoded)
	path := filepath.Join("testdata", "golden", name+".png")
	if *update {
		writePNG(t, path, got)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run go test -update to create it)", name, err)
	}
	defer f.Close()
	wantImg, err := png.Decode(f)
	if err != nil {
		t.Fatalf("golden %s: %v", name, err)
	}
	want := toNRGBA(wantImg)
	if want.Bounds() != got.Bounds() {
		dump(t, name, got, nil)
		t.Fatalf("%s: size %v, golden %v", name, got.Bounds().Size(), want.Bounds().Size())
	}
	mae, diff := compare(want, got)
	if mae > tol {
		dump(t, name, got, diff)
		t.Fatalf("%s: mean absolute error %.2f > %.2f (see testdata/failed/%s)", name, mae, tol, name)
	}
}

// decodeRGBA decodes any libvips-readable bytes to 8-bit RGBA pixels.
func decodeRGBA(t *testing.T, encoded []byte) *image.NRGBA {
	t.Helper()
	ref, err := vips.NewImageFromBuffer(encoded)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	defer ref.Close()
	if err := ref.ToColorSpace(vips.InterpretationSRGB); err != nil {
		t.Fatalf("colourspace: %v", err)
	}
	if !ref.HasAlpha() {
		if err := ref.AddAlpha(); err != nil {
			t.Fatalf("alpha: %v", err)
		}
	}
	if err := ref.Cast(vips.BandFormatUchar); err != nil {
		t.Fatalf("cast: %v", err)
	}
	pix, err := ref.ToBytes()
	if err != nil {
		t.Fatalf("pixels: %v", err)
	}
	img := image.NewNRGBA(image.Rect(0, 0, ref.Width(), ref.Height()))
	copy(img.Pix, pix)
	return img
}

func toNRGBA(src image.Image) *image.NRGBA {
	b := src.Bounds()
	out := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			out.Set(x, y, color.NRGBAModel.Convert(src.At(b.Min.X+x, b.Min.Y+y)))
		}
	}
	return out
}

// compare returns the mean absolute error over all channels and a diff image
// whose brightness is the per-pixel error.
func compare(a, b *image.NRGBA) (float64, *image.NRGBA) {
	diff := image.NewNRGBA(a.Bounds())
	var sum float64
	for i := 0; i < len(a.Pix); i += 4 {
		var px float64
		for c := 0; c < 4; c++ {
			px += math.Abs(float64(a.Pix[i+c]) - float64(b.Pix[i+c]))
		}
		sum += px
		v := uint8(math.Min(255, px*4))
		diff.Pix[i], diff.Pix[i+1], diff.Pix[i+2], diff.Pix[i+3] = v, v, v, 255
	}
	return sum / float64(len(a.Pix)), diff
}

func dump(t *testing.T, name string, got, diff *image.NRGBA) {
	dir := filepath.Join("testdata", "failed", name)
	writePNG(t, filepath.Join(dir, "actual.png"), got)
	if diff != nil {
		writePNG(t, filepath.Join(dir, "diff.png"), diff)
	}
}

func writePNG(t *testing.T, path string, img image.Image) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}
