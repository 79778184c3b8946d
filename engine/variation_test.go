package engine

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"math"
	"strings"
	"testing"
)

// noisyPicture is a gradient with per-pixel noise, like a photograph's
// grain (noise keeps encoded sizes realistic).
func noisyPicture(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	seed := uint32(7)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			seed = seed*1664525 + 1013904223
			n := int(seed>>29) - 4
			img.SetNRGBA(x, y, color.NRGBA{R: clamp8(x*255/w + n), G: clamp8(y*255/h + n),
				B: clamp8((x+y)*127/(w+h) + 64 - n), A: 255})
		}
	}
	return img
}

// screenshotPicture is black "text" strokes on white with a coloured bar,
// the hard case for a lossy copy.
func screenshotPicture(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.NRGBA{R: 255, G: 255, B: 255, A: 255}
			if y < h/10 {
				c = color.NRGBA{R: 40, G: 90, B: 200, A: 255}
			} else if (y/12)%3 == 0 && (x/5)%4 != 3 && (x*7+y*3)%11 < 5 {
				c = color.NRGBA{A: 255}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	return img
}

// scenePicture is photograph-like: smooth shading, hard-edged shapes and
// a fine texture that varies over a few pixels, as detail in a real scene
// does (unlike noisyPicture's independent per-pixel noise).
func scenePicture(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			t := 12 * math.Sin(float64(x)/3.1) * math.Cos(float64(y)/4.3)
			r, g, b := 90+float64(x*120/w)+t, 110+float64(y*100/h)+t, 140-t
			if dx, dy := x-w/3, y-h/2; dx*dx+dy*dy < (h/4)*(h/4) {
				r, g, b = 220+t/2, 180+t/2, 60
			}
			if x > w*2/3 && y > h/5 && y < h*4/5 {
				r, g, b = 40+t, 60+t, 50+t
			}
			img.SetNRGBA(x, y, color.NRGBA{R: clamp8(int(r)), G: clamp8(int(g)), B: clamp8(int(b)), A: 255})
		}
	}
	return img
}

// variationSources are the fidelity test's images: a photograph-like JPEG,
// a portrait JPEG with an ICC profile and EXIF orientation 6, a PNG
// screenshot with text, a PNG with alpha, and noise.jpg, per-pixel
// independent noise, the worst case for a re-encoded copy.
func variationSources(t *testing.T) map[string][]byte {
	return map[string][]byte{
		"noise.jpg": encodePicture(t, noisyPicture(2400, 1800), "jpg"),
		"scene.jpg": encodePicture(t, scenePicture(2400, 1800), "jpg"),
		"portrait.jpg": withSegments(t, encodePicture(t, scenePicture(1800, 2400), "jpg"),
			append([]byte{0xFF, 0xE1}, exifAPP1(6)...),
			append([]byte{0xFF, 0xE2}, append([]byte("ICC_PROFILE\x00\x01\x01"), iccProfile(adobeRGB)...)...)),
		"screenshot.png": encodePicture(t, screenshotPicture(1600, 1000), "png"),
		"alpha.png":      encodePicture(t, testPicture(2000, 1500, true), "png"),
	}
}

// heads are first steps that reduce the image: the chains the picker may
// serve from a variation.
var heads = []string{
	"resize:width=600", "resize:height=400", "thumbnail:width=300,height=200",
	"thumbnail:width=250,height=250,fit=inset", "maxSize:width=700,height=700", "smartSize:width=400,height=300",
}

// followers give every registered transformation valid parameters; each
// runs after heads[0].
var followers = map[string]string{
	"autoRotate": "autoRotate", "blur": "blur:radius=2,sigma=1", "border": "border", "canvas": "canvas",
	"compress": "compress:level=60", "contrast": "contrast", "convert": "convert:type=webp",
	"crop": "crop:width=200,height=150,x=10,y=10", "desaturate": "desaturate", "drawPois": "drawPois",
	"flipHorizontally": "flipHorizontally", "flipVertically": "flipVertically", "histogram": "histogram",
	"icc": "", "level": "level", "maxSize": "maxSize:width=300,height=300", "modulate": "modulate",
	"progressive": "progressive", "resize": "resize:width=300", "rotate": "rotate:angle=90", "sepia": "sepia",
	"sharpen": "sharpen", "smartSize": "smartSize:width=200,height=200", "strip": "strip",
	"thumbnail": "thumbnail", "transpose": "transpose", "transverse": "transverse", "vignette": "vignette",
	"text": "text:text=Hello,size=20", "watermark": "watermark:img=wm",
}

// ladder halves w while the result is at least 384 px (storage's default).
func ladder(w int) []int {
	var out []int
	for v := w / 2; v >= 384; v /= 2 {
		out = append(out, v)
	}
	return out
}

// TestVariationFidelity renders every chain the picker serves from a
// variation both ways, and checks the outputs agree: equal size and type,
// luma SSIM and encoded bytes within the guard bounds (compareOutputs),
// counting the misses of the target. Chains it must not
// serve from a variation (a crop first, histogram) are checked to pick
// the original.
func TestVariationFidelity(t *testing.T) {
	if testing.Short() {
		t.Skip("renders a few hundred images")
	}
	e := newTestEngine(t, Config{})
	wm := encodePicture(t, testPicture(64, 64, true), "png")
	env := Env{LoadImage: func(context.Context, string) ([]byte, error) { return wm, nil }}
	names := e.Registry().Names()
	for _, n := range names {
		if _, ok := followers[n]; !ok && !strings.HasPrefix(n, "guest") {
			t.Errorf("transformation %s has no case in followers", n)
		}
	}
	var chains [][]string
	for _, h := range heads {
		chains = append(chains, []string{h})
	}
	for _, n := range names {
		if followers[n] != "" { // icc needs a configured profile
			chains = append(chains, []string{heads[0], followers[n]})
		}
	}
	worst, worstBytes, picked, misses := 1.0, 1.0, 0, 0
	for name, src := range variationSources(t) {
		info, err := e.Probe(src)
		if err != nil {
			t.Fatal(err)
		}
		built, err := e.BuildVariations(context.Background(), src, ladder(info.Width))
		if err != nil || len(built) == 0 {
			t.Fatalf("%s: BuildVariations = %d, %v", name, len(built), err)
		}
		sizes := make([]Variation, len(built))
		for i, v := range built {
			sizes[i] = Variation{Width: v.Width, Height: v.Height}
		}
		srcChains := chains
		if info.Ext != "jpg" {
			// Lossless outputs keep the original; a PNG's variations serve
			// lossy ones.
			for _, h := range heads {
				srcChains = append(srcChains, []string{h, "convert:type=webp"}, []string{h, "convert:type=jpg"})
			}
		}
		for _, ts := range srcChains {
			t.Run(name+"/"+strings.Join(ts, "|"), func(t *testing.T) {
				c, err := e.ParseChain(ts)
				if err != nil {
					t.Fatal(err)
				}
				i := c.PickVariation(info.Width, info.Height, "", info.Ext, env, sizes)
				lossless := info.Ext != "jpg" && !strings.HasPrefix(ts[len(ts)-1], "convert")
				if strings.HasPrefix(ts[len(ts)-1], "histogram") || lossless || ts[len(ts)-1] == "convert:type=png" {
					// Histograms, and lossless outputs (a PNG source's
					// own type), keep the original.
					if i >= 0 {
						t.Fatalf("picked variation %d", built[i].Width)
					}
					return
				}
				if i < 0 && info.Ext == "jpg" {
					t.Fatalf("no variation picked of %v", sizes)
				}
				if i < 0 {
					return // a resampled variation must be twice the output's size
				}
				picked++
				want := process(t, e, src, Request{Chain: c, Env: env})
				v := built[i]
				got := process(t, e, v.Data, Request{Chain: c, Env: env,
					Variation: &VariationSource{OrigWidth: v.OrigWidth, OrigHeight: v.OrigHeight, OrigExt: info.Ext}})
				s, ratio := compareOutputs(t, want, got, name != "noise.jpg")
				if s < targetSSIM || math.Abs(ratio-1) > targetBytes {
					misses++
				}
				worst = min(worst, s)
				if math.Abs(ratio-1) > math.Abs(worstBytes-1) {
					worstBytes = ratio
				}
			})
		}
	}
	t.Logf("%d chains served from a variation, %d miss the target; worst luma SSIM %.4f, worst bytes %+.1f%%",
		picked, misses, worst, (worstBytes-1)*100)
}

// TestPickVariationFallsBack: chains that need the original's pixels keep
// it.
func TestPickVariationFallsBack(t *testing.T) {
	e := newTestEngine(t, Config{})
	vs := []Variation{{500, 375}, {1000, 750}, {2000, 1500}}
	for _, tc := range []struct {
		chain []string
		want  int
	}{
		{nil, -1},
		{[]string{"crop:width=100,height=100"}, -1},
		{[]string{"resize:width=600", "histogram"}, -1},
		{[]string{"desaturate", "resize:width=100"}, -1},
		{[]string{"resize:width=5000"}, -1},
		{[]string{"resize:width=1999"}, 2},
		{[]string{"resize:width=600"}, 1},
		{[]string{"resize:width=500"}, 0},
		{[]string{"thumbnail:width=50,height=50"}, 0},
		{[]string{"resize:width=600", "convert:type=png"}, -1},
	} {
		c, err := e.ParseChain(tc.chain)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.PickVariation(4000, 3000, "", "jpg", Env{}, vs); got != tc.want {
			t.Errorf("PickVariation(%q) = %d, want %d", tc.chain, got, tc.want)
		}
	}
}

func process(t *testing.T, e *Engine, src []byte, req Request) *Result {
	t.Helper()
	res, err := e.Process(context.Background(), src, req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The fidelity target is luma SSIM >= 0.995 and bytes within 2% of the
// output from the original. It is not met everywhere yet: a q80 output of
// smooth synthetic shading amplifies the variation's re-encode (q98 4:4:4)
// to SSIM 0.98-0.99 (even a q100 copy, within 2 levels of the decoder's own
// pixels, gave 0.989-0.992 there: the q80 encode of nearly equal inputs
// diverges in flat blocks, so a lossy copy cannot reach the target on such
// content; q100 copies were 2.5x larger for 69 misses instead of 73), and independent per-pixel noise changes the output's
// size by up to 9% (a 1.4 KB WebP thumbnail of a PNG with alpha by 8%). The test enforces the guard bounds (what the current
// format holds, so a regression fails) and logs every miss of the target.
const (
	targetSSIM, targetBytes = 0.995, 0.02
	guardSSIM, guardBytes   = 0.95, 0.10
)

// compareOutputs fails unless got matches want within the guard bounds
// (the bytes only when checkBytes), and logs a miss of the target; it
// returns the luma SSIM and the ratio of the sizes.
func compareOutputs(t *testing.T, want, got *Result, checkBytes bool) (float64, float64) {
	t.Helper()
	if want.Ext != got.Ext {
		t.Fatalf("output type %s from the variation, %s from the original", got.Ext, want.Ext)
	}
	a, b := decodeRGBA(t, want.Data), decodeRGBA(t, got.Data)
	if a.Bounds() != b.Bounds() {
		t.Fatalf("size %v from the variation, %v from the original", b.Bounds(), a.Bounds())
	}
	s := lumaSSIM(a, b)
	ratio := float64(len(got.Data)) / float64(len(want.Data))
	msg := fmt.Sprintf("luma SSIM %.4f, bytes %d vs %d (%+.1f%%)", s, len(got.Data), len(want.Data), (ratio-1)*100)
	switch {
	case s < guardSSIM || (checkBytes && math.Abs(ratio-1) > guardBytes):
		t.Errorf("%s: outside the guard (SSIM >= %.3f, bytes within %.0f%%)", msg, guardSSIM, guardBytes*100)
	case s < targetSSIM || math.Abs(ratio-1) > targetBytes:
		t.Logf("%s: misses the target", msg)
	}
	return s, ratio
}

// lumaSSIM is the mean SSIM of the BT.601 luma of a and b (alpha
// composited over white) over 8x8 windows with a stride of 4, with the
// usual constants for 8-bit values.
func lumaSSIM(a, b *image.NRGBA) float64 {
	const c1, c2 = (0.01 * 255) * (0.01 * 255), (0.03 * 255) * (0.03 * 255)
	la, lb := luma(a), luma(b)
	w, h := a.Bounds().Dx(), a.Bounds().Dy()
	win := min(8, w, h)
	var sum float64
	n := 0
	for y := 0; y+win <= h; y += max(win/2, 1) {
		for x := 0; x+win <= w; x += max(win/2, 1) {
			var ma, mb, va, vb, cov float64
			for j := y; j < y+win; j++ {
				for i := x; i < x+win; i++ {
					ma += la[j*w+i]
					mb += lb[j*w+i]
				}
			}
			k := float64(win * win)
			ma, mb = ma/k, mb/k
			for j := y; j < y+win; j++ {
				for i := x; i < x+win; i++ {
					da, db := la[j*w+i]-ma, lb[j*w+i]-mb
					va += da * da
					vb += db * db
					cov += da * db
				}
			}
			va, vb, cov = va/(k-1), vb/(k-1), cov/(k-1)
			sum += ((2*ma*mb + c1) * (2*cov + c2)) / ((ma*ma + mb*mb + c1) * (va + vb + c2))
			n++
		}
	}
	return sum / float64(n)
}

func luma(img *image.NRGBA) []float64 {
	w, h := img.Bounds().Dx(), img.Bounds().Dy()
	out := make([]float64, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := img.NRGBAAt(x, y)
			al := float64(c.A) / 255
			over := func(v uint8) float64 { return float64(v)*al + 255*(1-al) }
			out[y*w+x] = 0.299*over(c.R) + 0.587*over(c.G) + 0.114*over(c.B)
		}
	}
	return out
}

func TestLumaSSIM(t *testing.T) {
	a := testPicture(64, 48, false)
	if s := lumaSSIM(a, a); math.Abs(s-1) > 1e-9 {
		t.Fatalf("SSIM of an image with itself = %f", s)
	}
	b := image.NewNRGBA(a.Bounds())
	copy(b.Pix, a.Pix)
	for i := 0; i < len(b.Pix); i += 4 * 7 {
		b.Pix[i] ^= 0x40
	}
	if s := lumaSSIM(a, b); s > 0.99 {
		t.Fatalf("SSIM of a damaged copy = %f, want < 0.99", s)
	}
}

// BenchmarkVariationDecode measures the render of a 12 MP JPEG to an
// 800 px wide JPEG from the original (shrink-on-load) and from the stored
// variation the picker chooses (a quarter of the width), single-threaded:
// the decode speed-up stored variations exist for.
func BenchmarkVariationDecode(b *testing.B) {
	src := benchJPEG(b, 4000, 3000)
	e := newTestEngine(b, Config{})
	c, err := e.ParseChain([]string{"resize:width=800"})
	if err != nil {
		b.Fatal(err)
	}
	built, err := e.BuildVariations(context.Background(), src, []int{2000, 1000, 500})
	if err != nil {
		b.Fatal(err)
	}
	sizes := make([]Variation, len(built))
	for i, v := range built {
		sizes[i] = Variation{Width: v.Width, Height: v.Height}
	}
	i := c.PickVariation(4000, 3000, "jpg", "jpg", Env{}, sizes)
	if i < 0 {
		b.Fatal("no variation picked")
	}
	v := built[i]
	for _, bc := range []struct {
		name string
		src  []byte
		from *VariationSource
	}{
		{"original", src, nil},
		{fmt.Sprintf("variation-%d", v.Width), v.Data, &VariationSource{OrigWidth: 4000, OrigHeight: 3000, OrigExt: "jpg"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := Request{Chain: c, Format: "jpg", Variation: bc.from}
			for b.Loop() {
				if _, err := e.Process(context.Background(), bc.src, req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(bc.src)), "src-bytes")
		})
	}
}

// BenchmarkBuildVariations measures the background work of one upload: the
// default ladder (2000, 1000, 500) of a 12 MP JPEG, and reports the bytes
// the copies add per byte of the original.
func BenchmarkBuildVariations(b *testing.B) {
	src := benchJPEG(b, 4000, 3000)
	e := newTestEngine(b, Config{})
	var added int
	for b.Loop() {
		built, err := e.BuildVariations(context.Background(), src, []int{2000, 1000, 500})
		if err != nil || len(built) != 3 {
			b.Fatalf("BuildVariations = %d, %v", len(built), err)
		}
		added = 0
		for _, v := range built {
			added += len(v.Data)
		}
	}
	b.ReportMetric(float64(added)/float64(len(src)), "added-bytes/byte")
}
