package engine

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

// distortion makes a distorted copy (packed sRGB) of the w x h image img.
type distortion struct {
	name string
	make func(t *testing.T, img *vips.ImageRef) []byte
}

func jpegDistortion(q int) distortion {
	return distortion{fmt.Sprintf("jpeg-q%d", q), func(t *testing.T, img *vips.ImageRef) []byte {
		p := vips.NewJpegExportParams()
		p.Quality = q
		buf, _, err := img.ExportJpeg(p)
		if err != nil {
			t.Fatal(err)
		}
		return decodedPixels(t, buf)
	}}
}

func blurDistortion(sigma float64) distortion {
	return distortion{fmt.Sprintf("blur-%.1f", sigma), func(t *testing.T, img *vips.ImageRef) []byte {
		c, err := img.Copy()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.GaussianBlur(sigma); err != nil {
			t.Fatal(err)
		}
		px, _, _, err := rgbPixels(c)
		if err != nil {
			t.Fatal(err)
		}
		return px
	}}
}

func noiseDistortion(amp int) distortion {
	return distortion{fmt.Sprintf("noise-%d", amp), func(t *testing.T, img *vips.ImageRef) []byte {
		px, _, _, err := rgbPixels(img)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, uint64(amp)))
		for i := range px {
			v := int(px[i]) + r.IntN(2*amp+1) - amp
			px[i] = byte(min(max(v, 0), 255))
		}
		return px
	}}
}

func decodedPixels(t *testing.T, buf []byte) []byte {
	t.Helper()
	d, err := vips.NewImageFromBuffer(buf)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	px, _, _, err := rgbPixels(d)
	if err != nil {
		t.Fatal(err)
	}
	return px
}

// writeRGBPNG writes packed sRGB pixels as a PNG for the outside judges.
func writeRGBPNG(t *testing.T, path string, px []byte, w, h int) {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < w*h; i++ {
		copy(img.Pix[4*i:], px[3*i:3*i+3])
		img.Pix[4*i+3] = 255
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// judge runs an outside metric on two PNGs and returns the first number it
// prints (lower is better for both judges used).
func judge(t *testing.T, tool, ref, dist string) float64 {
	t.Helper()
	out, err := exec.Command(tool, ref, dist).Output()
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	f, err := strconv.ParseFloat(strings.Fields(string(out))[0], 64)
	if err != nil {
		t.Fatalf("%s printed %q", tool, out)
	}
	return f
}

// ranks returns the fractional ranks of v (ties share the mean rank).
func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		for k := i; k <= j; k++ {
			r[idx[k]] = float64(i+j)/2 + 1
		}
		i = j + 1
	}
	return r
}

// spearman is Spearman's rank correlation of a and b.
func spearman(a, b []float64) float64 {
	ra, rb := ranks(a), ranks(b)
	n := float64(len(a))
	var ma, mb float64
	for i := range ra {
		ma += ra[i] / n
		mb += rb[i] / n
	}
	var num, da, db float64
	for i := range ra {
		num += (ra[i] - ma) * (rb[i] - mb)
		da += (ra[i] - ma) * (ra[i] - ma)
		db += (rb[i] - mb) * (rb[i] - mb)
	}
	return num / (sqrtf(da) * sqrtf(db))
}

func sqrtf(x float64) float64 {
	z := x
	for range 40 {
		if z == 0 {
			return 0
		}
		z -= (z*z - x) / (2 * z)
	}
	return z
}

func TestSSIMULACRA2Identical(t *testing.T) {
	w, h := 64, 48
	px := make([]byte, 3*w*h)
	for i := range px {
		px[i] = byte(i * 7)
	}
	s, err := ssimulacra2(px, px, w, h)
	if err != nil || s != 100 {
		t.Fatalf("identical images score %v, %v; want 100", s, err)
	}
	if _, err := ssimulacra2(px[:3*4*4], px[:3*4*4], 4, 4); err == nil {
		t.Fatal("a 4x4 image was scored")
	}
}

// mateSample loads one of mate-backgrounds' photographs at width 384.
func mateSample(t *testing.T, name string) *vips.ImageRef {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mateNature, name))
	if err != nil {
		t.Skipf("%v: the photographs come from Debian's mate-backgrounds (make test-deps)", err)
	}
	img, err := vips.NewImageFromBuffer(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := img.Resize(384.0/float64(img.Width()), vips.KernelLanczos3); err != nil {
		t.Fatal(err)
	}
	return img
}

// TestSSIMULACRA2RanksLikeJudges scores JPEG at five qualities, blur and
// noise of real photographs and checks that the order agrees with the
// SSIMULACRA (1) and Butteraugli of Debian's libjxl-devtools: Spearman's
// correlation per photograph.
func TestSSIMULACRA2RanksLikeJudges(t *testing.T) {
	tools := map[string]string{}
	for _, tool := range []string{"ssimulacra_main", "butteraugli_main"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s is not installed (make test-deps: libjxl-devtools)", tool)
		}
		tools[tool] = p
	}
	dists := []distortion{jpegDistortion(20), jpegDistortion(40), jpegDistortion(60), jpegDistortion(80), jpegDistortion(95),
		blurDistortion(0.6), blurDistortion(1.5), noiseDistortion(4), noiseDistortion(12)}
	for _, photo := range []string{"Garden.jpg", "Dune.jpg", "LadyBird.jpg", "Storm.jpg"} {
		t.Run(photo, func(t *testing.T) {
			img := mateSample(t, photo)
			defer img.Close()
			ref, w, h, err := rgbPixels(img)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			refPNG := filepath.Join(dir, "ref.png")
			writeRGBPNG(t, refPNG, ref, w, h)
			var ours, s1, ba []float64
			var oursNoNoise, s1NoNoise []float64
			for _, d := range dists {
				px := d.make(t, img)
				s, err := ssimulacra2(ref, px, w, h)
				if err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(dir, d.name+".png")
				writeRGBPNG(t, p, px, w, h)
				// Negated: the judges are distances, ours a score.
				ours = append(ours, -s)
				s1 = append(s1, judge(t, tools["ssimulacra_main"], refPNG, p))
				ba = append(ba, judge(t, tools["butteraugli_main"], refPNG, p))
				if !strings.HasPrefix(d.name, "noise") {
					oursNoNoise, s1NoNoise = append(oursNoNoise, -s), append(s1NoNoise, s1[len(s1)-1])
				}
				t.Logf("%-10s ssimulacra2 %6.2f  ssimulacra %.4f  butteraugli %.3f", d.name, s, s1[len(s1)-1], ba[len(ba)-1])
			}
			// JPEG alone: strictly better with quality, as both judges say.
			for i := 1; i < 5; i++ {
				if ours[i] >= ours[i-1] {
					t.Errorf("%s scored no better than %s", dists[i].name, dists[i-1].name)
				}
			}
			// SSIMULACRA (1) weighs noise far more than SSIMULACRA 2 and
			// Butteraugli do (noise-12 is its worst case on every photo,
			// below JPEG q20), so it judges the JPEG and blur order only.
			rb, r1 := spearman(ours, ba), spearman(oursNoNoise, s1NoNoise)
			t.Logf("Spearman: vs butteraugli %.3f (all), vs ssimulacra %.3f (no noise), %.3f (all)", rb, r1, spearman(ours, s1))
			if rb < 0.9 || r1 < 0.75 {
				t.Errorf("rank correlation too low: vs butteraugli %.3f (want >= 0.9), vs ssimulacra %.3f (want >= 0.75)", rb, r1)
			}
		})
	}
}

// BenchmarkSSIMULACRA2 scores a q80 JPEG of a 1 MP photograph (1154x866).
func BenchmarkSSIMULACRA2(b *testing.B) {
	src, err := os.ReadFile(filepath.Join(mateNature, "Garden.jpg"))
	if err != nil {
		b.Skip(err)
	}
	img, err := vips.NewImageFromBuffer(src)
	if err != nil {
		b.Fatal(err)
	}
	defer img.Close()
	if err := img.Thumbnail(1154, 866, vips.InterestingCentre); err != nil {
		b.Fatal(err)
	}
	ref, w, h, err := rgbPixels(img)
	if err != nil {
		b.Fatal(err)
	}
	p := vips.NewJpegExportParams()
	p.Quality = 80
	buf, _, err := img.ExportJpeg(p)
	if err != nil {
		b.Fatal(err)
	}
	d, err := vips.NewImageFromBuffer(buf)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	dist, _, _, err := rgbPixels(d)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := ssimulacra2(ref, dist, w, h); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(w*h)/1e6, "MP")
}

// TestS2ReferenceReuse checks that a prepared reference scores each
// distorted image as the one-shot function does, whatever it scored
// before (its scratch planes are reused between scores).
func TestS2ReferenceReuse(t *testing.T) {
	const w, h = 97, 61
	ref := make([]byte, 3*w*h)
	for i := range ref {
		x, y := (i/3)%w, (i/3)/w
		ref[i] = byte((x*7 + y*13 + (i%3)*50 + x*y/5) % 256)
	}
	dists := make([][]byte, 3)
	for k := range dists {
		d := append([]byte(nil), ref...)
		for i := range d {
			if (i*31+k*17)%(5+k*4) == 0 {
				d[i] ^= byte(8 << k)
			}
		}
		dists[k] = d
	}
	r, err := newS2Reference(ref, w, h)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, k := range []int{0, 2, 1, 0, 2} {
		want, err := ssimulacra2(ref, dists[k], w, h)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.score(dists[k])
		if err != nil {
			t.Fatal(err)
		}
		if got != want || want >= 100 {
			t.Errorf("distortion %d: prepared reference %v, one-shot %v", k, got, want)
		}
	}
}
