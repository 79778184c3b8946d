package engine

import (
	"bytes"
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

// variationSources are the fidelity test's synthetic images: a
// photograph-like JPEG and WebP, a CMYK JPEG with its profile, a portrait
// JPEG with an ICC profile and EXIF orientation 6, a PNG screenshot with text, a PNG with alpha, and
// noise.jpg, per-pixel independent noise, the worst case for a copy that
// is not exact.
func variationSources(t *testing.T) map[string][]byte {
	return map[string][]byte{
		"noise.jpg": encodePicture(t, noisyPicture(2400, 1800), "jpg"),
		"scene.jpg": encodePicture(t, scenePicture(2400, 1800), "jpg"),
		"portrait.jpg": withSegments(t, encodePicture(t, scenePicture(1800, 2400), "jpg"),
			append([]byte{0xFF, 0xE1}, exifAPP1(6)...),
			append([]byte{0xFF, 0xE2}, append([]byte("ICC_PROFILE\x00\x01\x01"), iccProfile(adobeRGB)...)...)),
		"scene.webp":     encodePicture(t, scenePicture(2400, 1800), "webp"),
		"cmyk.jpg":       cmykJPEGOf(t, scenePicture(2400, 1800), true),
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
	// The video steps come first only, and only on a video: no follower.
	"frame": "", "sprite": "", "preview": "",
}

// allScales are the decoder's scales storage keeps copies at by default.
var allScales = []int{2, 4, 8}

// TestVariationFidelity renders every chain the picker serves from a
// variation both ways and requires the same output, byte for byte, on the
// benchmark's sources and real photographs (targetSources) and on the
// synthetic hard cases (variationSources): a variation holds the pixels a
// render from the original starts from. A source whose decoder does not
// scale (PNG) gets no variations.
func TestVariationFidelity(t *testing.T) {
	if testing.Short() {
		t.Skip("renders a few hundred images")
	}
	e := newTestEngine(t, Config{})
	wm := encodePicture(t, testPicture(64, 64, true), "png")
	env := Env{LoadImage: func(context.Context, string) ([]byte, error) { return wm, nil }}
	chains := fidelityChains(t, e)
	for _, set := range []struct {
		name    string
		sources map[string][]byte
		target  bool
	}{
		{"target", targetSources(t), true},
		{"synthetic", variationSources(t), false},
	} {
		picked := 0
		for name, src := range set.sources {
			picked += checkFidelity(t, e, env, set.name+"/"+name, src, chains)
		}
		t.Logf("%s images: %d renders served from a variation", set.name, picked)
		if picked == 0 {
			t.Errorf("%s images: no chain was served from a variation", set.name)
		}
	}
}

// fidelityChains are heads alone and heads[0] followed by each registered
// transformation.
func fidelityChains(t *testing.T, e *Engine) [][]string {
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
		if followers[n] != "" { // icc needs a configured profile; video steps a video
			chains = append(chains, []string{heads[0], followers[n]})
		}
	}
	return chains
}

// checkFidelity builds src's variations and requires every chain's output
// from the variation the picker chooses to equal its output from src; it
// returns how many chains used a variation.
func checkFidelity(t *testing.T, e *Engine, env Env, name string, src []byte, chains [][]string) int {
	info, err := e.Probe(src)
	if err != nil {
		t.Fatal(err)
	}
	built, err := e.BuildVariations(context.Background(), src, allScales)
	if err != nil {
		t.Fatalf("%s: BuildVariations: %v", name, err)
	}
	if !scalesOnLoad(info.Ext) {
		if len(built) > 0 {
			t.Errorf("%s: %d variations of a %s", name, len(built), info.Ext)
		}
		return 0
	}
	sizes := make([]Variation, len(built))
	for i, v := range built {
		sizes[i] = Variation{Width: v.Width, Height: v.Height}
	}
	picked := 0
	for _, ts := range chains {
		t.Run(name+"/"+strings.Join(ts, "|"), func(t *testing.T) {
			c, err := e.ParseChain(ts)
			if err != nil {
				t.Fatal(err)
			}
			i := c.PickVariation(info.Width, info.Height, info.Ext, env, sizes)
			if i < 0 {
				t.Fatalf("no variation picked of %v", sizes)
			}
			picked++
			want := process(t, e, src, Request{Chain: c, Env: env})
			v := built[i]
			got := process(t, e, v.Data, Request{Chain: c, Env: env,
				Variation: &VariationSource{OrigWidth: v.OrigWidth, OrigHeight: v.OrigHeight, OrigExt: info.Ext}})
			compareOutputs(t, want, got)
		})
	}
	return picked
}

// TestPickVariation: the picker chooses the variation at the scale a
// render from the original decodes at, whatever follows the first step,
// and the original when no variation has that scale or the source's
// decoder does not scale.
func TestPickVariation(t *testing.T) {
	e := newTestEngine(t, Config{})
	all := []Variation{{500, 375}, {1000, 750}, {2000, 1500}}
	noEighth := all[1:]
	for _, tc := range []struct {
		chain []string
		ext   string
		vs    []Variation
		want  int
	}{
		{nil, "jpg", all, -1},
		{[]string{"crop:width=100,height=100"}, "jpg", all, -1},
		{[]string{"desaturate", "resize:width=100"}, "jpg", all, -1},
		{[]string{"resize:width=5000"}, "jpg", all, -1},
		{[]string{"resize:width=2001"}, "jpg", all, -1},
		{[]string{"resize:width=1999"}, "jpg", all, 2},
		{[]string{"resize:width=600"}, "jpg", all, 1},
		{[]string{"resize:width=500"}, "jpg", all, 0},
		{[]string{"thumbnail:width=50,height=50"}, "jpg", all, 0},
		{[]string{"resize:width=600", "histogram"}, "jpg", all, 1},
		{[]string{"resize:width=600", "convert:type=png"}, "jpg", all, 1},
		{[]string{"resize:width=600"}, "webp", all, 1},
		{[]string{"resize:width=300"}, "jpg", noEighth, -1}, // 1/8 not kept: not the 1/4 copy
		{[]string{"resize:width=600"}, "png", all, -1},
	} {
		c, err := e.ParseChain(tc.chain)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.PickVariation(4000, 3000, tc.ext, Env{}, tc.vs); got != tc.want {
			t.Errorf("PickVariation(%q, %s) = %d, want %d", tc.chain, tc.ext, got, tc.want)
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

// The fidelity bound the picker is held to: luma SSIM at least 0.995 and
// bytes within 2% of the output from the original. Exact pixels give equal
// bytes, so a difference at all is logged.
const targetSSIM, targetBytes = 0.995, 0.02

// compareOutputs fails unless got, rendered from a variation, is within
// the fidelity bound of want, rendered from the original.
func compareOutputs(t *testing.T, want, got *Result) {
	t.Helper()
	if want.Ext != got.Ext {
		t.Fatalf("output type %s from the variation, %s from the original", got.Ext, want.Ext)
	}
	if bytes.Equal(want.Data, got.Data) {
		return
	}
	a, b := decodeRGBA(t, want.Data), decodeRGBA(t, got.Data)
	if a.Bounds() != b.Bounds() {
		t.Fatalf("size %v from the variation, %v from the original", b.Bounds(), a.Bounds())
	}
	s := lumaSSIM(a, b)
	ratio := float64(len(got.Data)) / float64(len(want.Data))
	msg := fmt.Sprintf("luma SSIM %.4f, bytes %d vs %d (%+.1f%%)", s, len(got.Data), len(want.Data), (ratio-1)*100)
	if s < targetSSIM || math.Abs(ratio-1) > targetBytes {
		t.Errorf("%s: outside the bound (SSIM >= %.3f, bytes within %.0f%%)", msg, targetSSIM, targetBytes*100)
	} else {
		t.Logf("%s: not the same bytes", msg)
	}
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

// BenchmarkVariationDecode measures the render of the benchmark's 12 MP
// JPEG to an 800 px wide JPEG from the original (shrink-on-load) and from
// the stored variation the picker chooses (a quarter of the width),
// single-threaded: the decode speed-up stored variations exist for.
func BenchmarkVariationDecode(b *testing.B) {
	src := benchSource(b, 4000, 3000, 42)
	e := newTestEngine(b, Config{})
	c, err := e.ParseChain([]string{"resize:width=800"})
	if err != nil {
		b.Fatal(err)
	}
	built, err := e.BuildVariations(context.Background(), src, allScales)
	if err != nil {
		b.Fatal(err)
	}
	sizes := make([]Variation, len(built))
	for i, v := range built {
		sizes[i] = Variation{Width: v.Width, Height: v.Height}
	}
	i := c.PickVariation(4000, 3000, "jpg", Env{}, sizes)
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

// BenchmarkBuildVariations measures the background work of one upload,
// the default copies (1/2, 1/4, 1/8) of the benchmark's 1080p and 12 MP
// JPEGs, and reports the bytes the copies add per byte of the original.
func BenchmarkBuildVariations(b *testing.B) {
	for _, size := range [][3]int{{1920, 1080, 7}, {4000, 3000, 42}} {
		src := benchSource(b, size[0], size[1], size[2])
		e := newTestEngine(b, Config{})
		b.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(b *testing.B) {
			var added int
			for b.Loop() {
				built, err := e.BuildVariations(context.Background(), src, allScales)
				if err != nil || len(built) != 3 {
					b.Fatalf("BuildVariations = %d, %v", len(built), err)
				}
				added = 0
				for _, v := range built {
					added += len(v.Data)
				}
			}
			b.ReportMetric(float64(added)/float64(len(src)), "added-bytes/byte")
		})
	}
}
