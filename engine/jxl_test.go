package engine

import (
	"image"
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

// meanAbsDiff is the mean absolute difference per channel (RGB) of two
// images of the same size.
func meanAbsDiff(t *testing.T, a, b *image.NRGBA) float64 {
	t.Helper()
	if a.Bounds() != b.Bounds() {
		t.Fatalf("sizes differ: %v vs %v", a.Bounds(), b.Bounds())
	}
	var sum, n float64
	for y := a.Rect.Min.Y; y < a.Rect.Max.Y; y++ {
		for x := a.Rect.Min.X; x < a.Rect.Max.X; x++ {
			p, q := a.NRGBAAt(x, y), b.NRGBAAt(x, y)
			sum += math.Abs(float64(p.R)-float64(q.R)) + math.Abs(float64(p.G)-float64(q.G)) + math.Abs(float64(p.B)-float64(q.B))
			n += 3
		}
	}
	return sum / n
}

// TestJXLRoundTrip encodes a JPEG source as JPEG XL, decodes the result with
// libvips' jxlload and compares its pixels with the source's; a lower
// quality gives fewer bytes and a larger error, quality 100 is lossless.
func TestJXLRoundTrip(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	pic := testPicture(320, 240, false)
	src := encodePicture(t, pic, "jpg")
	want := decodeRGBA(t, src) // what the JPEG decodes to is the reference
	var prevSize int
	var prevErr float64
	for i, q := range []int{95, 75, 30} {
		res := run(t, e, src, "jxl", Env{}, "compress:level="+strconv.Itoa(q))
		if res.Mime != "image/jxl" || res.Width != 320 || res.Height != 240 {
			t.Fatalf("q%d: %s %dx%d", q, res.Mime, res.Width, res.Height)
		}
		if f, ok := sniff(res.Data); !ok || f.ext != "jxl" {
			t.Fatalf("q%d: output not sniffed as jxl", q)
		}
		got := decodeRGBA(t, res.Data)
		writeLook(t, "jxl-q"+strconv.Itoa(q)+".png", encodePicture(t, got, "png"))
		d := meanAbsDiff(t, want, got)
		t.Logf("q%d: %d bytes, mean abs error %.2f", q, len(res.Data), d)
		if d > 8 {
			t.Errorf("q%d: mean abs error %.2f, want <= 8", q, d)
		}
		if i > 0 && (len(res.Data) >= prevSize || d <= prevErr) {
			t.Errorf("q%d: %d bytes error %.2f; the higher quality had %d bytes error %.2f", q, len(res.Data), d, prevSize, prevErr)
		}
		prevSize, prevErr = len(res.Data), d
	}
	// Lossless from a lossless source: the pixels come back exactly.
	png := encodePicture(t, pic, "png")
	res := run(t, e, png, "jxl", Env{}, "compress:level=100")
	if d := meanAbsDiff(t, decodeRGBA(t, png), decodeRGBA(t, res.Data)); d != 0 {
		t.Errorf("q100 is not lossless: mean abs error %.3f", d)
	}
	// And a JPEG XL source is an input like any other.
	back := run(t, e, res.Data, "png", Env{}, "resize:width=160")
	if back.Width != 160 || back.Height != 120 {
		t.Errorf("jxl input resized to %dx%d", back.Width, back.Height)
	}
}

func TestJXLDistance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		q    int
		want float64
	}{{100, 0}, {90, 1}, {75, 2.35}, {30, 6.4}, {29, 6.4 + math.Pow(2.5, 0.2)/6.25}, {1, 6.4 + math.Pow(2.5, 29.0/5)/6.25}} {
		if got := jxlDistance(tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("jxlDistance(%d) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

// BenchmarkEncodeJXL measures JPEG XL encodes of a 1 MP photograph (a MATE
// desktop background, mate-backgrounds package) at libjxl's efforts, beside
// JPEG q80 of the same pixels (e2e/README.md, JPEG XL effort).
func BenchmarkEncodeJXL(b *testing.B) {
	photo, err := os.ReadFile("/usr/share/backgrounds/mate/nature/Dune.jpg")
	if err != nil {
		b.Skip("mate-backgrounds is not installed:", err)
	}
	small, err := vips.NewThumbnailFromBuffer(photo, 1155, 866, vips.InterestingNone)
	if err != nil {
		b.Fatal(err)
	}
	src, _, err := small.ExportPng(vips.NewPngExportParams())
	small.Close()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("jpeg-q80", func(b *testing.B) {
		ref := mustLoad(b, src)
		defer ref.Close()
		var n int
		for i := 0; i < b.N; i++ {
			out, _, err := ref.ExportJpeg(&vips.JpegExportParams{Quality: 80})
			if err != nil {
				b.Fatal(err)
			}
			n = len(out)
		}
		b.ReportMetric(float64(n), "bytes")
	})
	for _, effort := range []int{3, 4, 5, 7} {
		b.Run("effort="+strconv.Itoa(effort), func(b *testing.B) {
			ref := mustLoad(b, src)
			defer ref.Close()
			var n int
			for i := 0; i < b.N; i++ {
				out, _, err := ref.ExportJxl(&vips.JxlExportParams{Distance: jxlDistance(jxlQuality), Effort: effort})
				if err != nil {
					b.Fatal(err)
				}
				n = len(out)
			}
			b.ReportMetric(float64(n), "bytes")
		})
	}
}

// TestJXLAutoEffort checks that auto quality's JPEG XL encodes spend
// DefaultJXLAutoEffort: on a photograph at the same quality they are smaller than
// a fixed-quality render's and score at least as well, less one point
// (e2e/README.md, Perceptual quality: measurements, Encoder settings).
func TestJXLAutoEffort(t *testing.T) {
	t.Parallel()
	photo, err := os.ReadFile("/usr/share/backgrounds/mate/nature/Garden.jpg")
	if err != nil {
		t.Skip("mate-backgrounds is not installed:", err)
	}
	e := newTestEngine(t, Config{})
	img, err := vips.NewThumbnailFromBuffer(photo, 512, 512, vips.InterestingNone)
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close()
	ref, _, err := img.ExportPng(vips.NewPngExportParams())
	if err != nil {
		t.Fatal(err)
	}
	enc := func(searched bool) ([]byte, float64) {
		im := mustLoad(t, ref)
		defer im.Close()
		data, err := e.encode(im, &Output{Format: "jxl", Level: 85, LevelSet: true, Strip: true, Searched: searched})
		if err != nil {
			t.Fatal(err)
		}
		s, err := Compare(ref, data)
		if err != nil {
			t.Fatal(err)
		}
		return data, s
	}
	fixed, fs := enc(false)
	auto, as := enc(true)
	t.Logf("q85: effort %d %d bytes, score %.1f; effort %d %d bytes, score %.1f", DefaultJXLEffort, len(fixed), fs, DefaultJXLAutoEffort, len(auto), as)
	if len(auto) >= len(fixed) || as < fs-1 {
		t.Errorf("auto's encode: %d bytes, score %.1f; fixed: %d bytes, score %.1f", len(auto), as, len(fixed), fs)
	}
}
