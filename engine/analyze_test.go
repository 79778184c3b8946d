package engine

import (
	"context"
	"encoding/base64"
	"image"
	"image/color"
	"math/bits"
	"testing"
)

func solid(w, h int, c color.NRGBA) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	return img
}

func TestBlurHash(t *testing.T) {
	for _, c := range []struct {
		name   string
		img    *image.NRGBA
		cx, cy int
		want   string
	}{
		// Known vectors of the reference encoder: a flat image has no AC
		// energy, so every AC pair is "fQ" (9,9,9: zero).
		{"Black", solid(32, 32, color.NRGBA{A: 255}), 4, 3, "L00000fQfQfQfQfQfQfQfQfQfQfQ"},
		{"OneComponent", solid(8, 8, color.NRGBA{255, 0, 0, 255}), 1, 1, "00TI:j"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := BlurHash(c.img, c.cx, c.cy); got != c.want {
				t.Errorf("BlurHash = %q, want %q", got, c.want)
			}
		})
	}
	t.Run("Length", func(t *testing.T) {
		if got := BlurHash(testPicture(64, 48, false), 4, 3); len(got) != 4+2+4*3*2-2 {
			t.Errorf("BlurHash = %q: length %d, want 28", got, len(got))
		}
	})
}

// thumbHashAverage decodes a ThumbHash's average colour as the reference
// decoder does.
func thumbHashAverage(t *testing.T, s string) (r, g, b float64) {
	hash, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(hash) < 5 {
		t.Fatalf("ThumbHash %q: %v", s, err)
	}
	h := int(hash[0]) | int(hash[1])<<8 | int(hash[2])<<16
	l := float64(h&63) / 63
	p := float64((h>>6)&63)/31.5 - 1
	q := float64((h>>12)&63)/31.5 - 1
	b = l - 2.0/3.0*p
	r = (3*l - b + q) / 2
	return r, r - q, b
}

func TestThumbHash(t *testing.T) {
	t.Run("FlatBlack", func(t *testing.T) {
		// Header 0x020800 (l 0, p and q 32 of 63), lx 7, then 37 zero AC
		// nibbles: 24 bytes.
		want := base64.StdEncoding.EncodeToString(append([]byte{0x00, 0x08, 0x02, 0x07, 0x00}, make([]byte, 19)...))
		if got := ThumbHash(solid(32, 32, color.NRGBA{A: 255})); got != want {
			t.Errorf("ThumbHash = %q, want %q", got, want)
		}
	})
	t.Run("AverageColour", func(t *testing.T) {
		img := solid(40, 20, color.NRGBA{200, 100, 50, 255})
		r, g, b := thumbHashAverage(t, ThumbHash(img))
		for _, d := range []float64{r - 200.0/255, g - 100.0/255, b - 50.0/255} {
			if d > 0.03 || d < -0.03 {
				t.Fatalf("decoded average %.3f %.3f %.3f, want 0.784 0.392 0.196", r, g, b)
			}
		}
	})
	t.Run("TooLarge", func(t *testing.T) {
		if got := ThumbHash(solid(101, 10, color.NRGBA{A: 255})); got != "" {
			t.Errorf("ThumbHash of 101 px = %q, want empty", got)
		}
	})
}

func TestColours(t *testing.T) {
	img := solid(10, 10, color.NRGBA{255, 0, 0, 255})
	for y := 0; y < 3; y++ {
		for x := 0; x < 10; x++ {
			img.SetNRGBA(x, y, color.NRGBA{0, 0, 255, 255})
		}
	}
	avg, pal := Colours(img, 5)
	if avg != "#b3004d" {
		t.Errorf("average = %s, want #b3004d", avg)
	}
	if len(pal) != 2 || pal[0] != "#ff0000" || pal[1] != "#0000ff" {
		t.Errorf("palette = %v, want [#ff0000 #0000ff]", pal)
	}
}

// TestPHashRobust hashes encoded pictures through Analyze: a resized and
// recompressed copy stays within a few bits, another picture does not.
func TestPHashRobust(t *testing.T) {
	e := newTestEngine(t, Config{})
	hash := func(data []byte) uint64 {
		t.Helper()
		a, err := e.Analyze(context.Background(), data, AnalyzeOptions{PHash: true, Placeholders: true, Colours: true})
		if err != nil || !a.HasPHash || a.BlurHash == "" || a.ThumbHash == "" || a.AverageColour == "" {
			t.Fatalf("Analyze = %+v, %v", a, err)
		}
		return a.PHash
	}
	orig := hash(source(t, 800, 600, "png", false))
	small := run(t, e, source(t, 800, 600, "jpg", false), "jpg", Env{}, "thumbnail:width=240,height=180,fit=inset", "compress:level=60")
	other := testPicture(800, 600, false)
	for y := range 600 {
		for x := range 800 {
			c := other.NRGBAAt(x, y)
			other.SetNRGBA(799-x, 599-y, color.NRGBA{c.G, c.R, 255 - c.B, 255})
		}
	}
	for _, c := range []struct {
		name     string
		data     []byte
		min, max int
	}{
		{"ResizedRecompressed", small.Data, 0, 6},
		{"WebP", source(t, 800, 600, "webp", false), 0, 4},
		{"Different", encodePicture(t, other, "png"), 16, 64},
	} {
		t.Run(c.name, func(t *testing.T) {
			if d := bits.OnesCount64(orig ^ hash(c.data)); d < c.min || d > c.max {
				t.Errorf("distance %d, want %d-%d", d, c.min, c.max)
			}
		})
	}
}

func BenchmarkAnalyze(b *testing.B) {
	e := newTestEngine(b, Config{})
	data := source(b, 4000, 3000, "jpg", false)
	for _, c := range []struct {
		name string
		opts AnalyzeOptions
	}{
		{"None", AnalyzeOptions{}},
		{"Placeholders", AnalyzeOptions{Placeholders: true}},
		{"Colours", AnalyzeOptions{Colours: true}},
		{"PHash", AnalyzeOptions{PHash: true}},
		{"All", AnalyzeOptions{Placeholders: true, Colours: true, PHash: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := e.Analyze(context.Background(), data, c.opts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N)/12, "ms/MP")
		})
	}
	b.Run("EXIF", func(b *testing.B) {
		for b.Loop() {
			ReadEXIF(data, EXIFOptions{Tags: []string{"*"}})
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N)/12, "ms/MP")
	})
}
