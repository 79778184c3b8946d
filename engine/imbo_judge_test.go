package engine

import (
	"context"
	"image"
	"image/color"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

// The Imbo parity tests judge a transformation by ImageMagick itself: the
// same source is rendered by the engine and by /usr/bin/convert running the
// command line of Imbo's Imagick calls, and the two pictures must be within
// a normalised RMSE. Only Debian's ImageMagick is trusted as the judge
// (/usr/local/bin/convert may be a stand-in).

// judgeConvert is the ImageMagick that judges.
const judgeConvert = "/usr/bin/convert"

// judgePhotos are the real photographs each transformation is judged on.
var judgePhotos = []string{"Aqua.jpg", "Dune.jpg", "LadyBird.jpg"}

// judgeSource is one source picture, as a PNG file and its bytes.
type judgeSource struct {
	name, path string
	png        []byte
}

// judgeSources returns the three photographs downscaled to fit 400x400 by
// ImageMagick, and a translucent picture made here, all as 8-bit PNG
// files in a temporary directory. It skips the test without the judge or
// the photographs (make test-deps installs both).
func judgeSources(t *testing.T) []judgeSource {
	t.Helper()
	if _, err := os.Stat(judgeConvert); err != nil || !isImageMagick(judgeConvert) {
		t.Skipf("the judge, Debian's ImageMagick at %s, is not installed (make test-deps)", judgeConvert)
	}
	dir := t.TempDir()
	var out []judgeSource
	for _, name := range judgePhotos {
		in := filepath.Join(mateNature, name)
		if _, err := os.Stat(in); err != nil {
			t.Skipf("%v: the real photographs come from Debian's mate-backgrounds (make test-deps)", err)
		}
		path := filepath.Join(dir, name+".png")
		judgeRun(t, in, "-resize", "400x400", "-strip", "PNG24:"+path)
		out = append(out, judgeSource{name: name, path: path, png: judgeRead(t, path)})
	}
	path := filepath.Join(dir, "translucent.png")
	writePNG(t, path, judgeTranslucent(320, 200))
	return append(out, judgeSource{name: "translucent", path: path, png: judgeRead(t, path)})
}

// judgeTranslucent draws a w x h picture with colour ramps, fine detail
// (a checker of 3-pixel squares) and an alpha that falls from opaque on
// the left to transparent on the right, with a half-transparent band.
func judgeTranslucent(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.NRGBA{uint8(x * 255 / (w - 1)), uint8(y * 255 / (h - 1)), uint8(255 - x*255/(w-1)), 255}
			if (x/3+y/3)%2 == 0 && x > w/4 && x < w*3/4 {
				c.R, c.G = c.G, c.R
			}
			c.A = uint8(255 - x*200/(w-1))
			if y > h/3 && y < h/2 {
				c.A = 128
			}
			img.SetNRGBA(x, y, c)
		}
	}
	return img
}

// judgeRun runs the judge with args, the last of which names its output.
func judgeRun(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(judgeConvert, args...).CombinedOutput(); err != nil {
		t.Fatalf("convert %q: %v: %s", args, err, out)
	}
}

func judgeRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// judgeImageMagick renders src with convert: args go between the input and
// the output file.
func judgeImageMagick(t *testing.T, src judgeSource, args ...string) *image.NRGBA {
	t.Helper()
	out := filepath.Join(t.TempDir(), "im.png")
	judgeRun(t, append(append([]string{src.path}, args...), "PNG32:"+out)...)
	return decodeRGBA(t, judgeRead(t, out))
}

// judgeEngine renders src with the engine's transformation spec, with meta
// as the image's metadata.
func judgeEngine(t *testing.T, src judgeSource, spec string, meta map[string]any) *image.NRGBA {
	t.Helper()
	ref, err := vips.NewImageFromBuffer(src.png)
	if err != nil {
		t.Fatal(err)
	}
	s := &State{Ctx: context.Background(), Image: ref, Output: &Output{}, Headers: map[string]string{},
		OrigWidth: ref.Width(), OrigHeight: ref.Height(), Env: Env{Metadata: meta}}
	if err := fxRun(t, s, spec); err != nil {
		t.Fatal(err)
	}
	return fxPixels(t, s)
}

// nrmse is the root mean square error between a and b over the colour
// channels and alpha, normalised to 0..1 as ImageMagick's `compare -metric
// NRMSE` is, with the colours premultiplied by alpha so that the colour of
// a transparent pixel does not count; a size mismatch is 1.
func nrmse(a, b *image.NRGBA) float64 {
	if a.Rect.Size() != b.Rect.Size() {
		return 1
	}
	var sum float64
	for i := 0; i < len(a.Pix); i += 4 {
		aa, ba := float64(a.Pix[i+3])/255, float64(b.Pix[i+3])/255
		for c := 0; c < 3; c++ {
			d := float64(a.Pix[i+c])/255*aa - float64(b.Pix[i+c])/255*ba
			sum += d * d
		}
		sum += (aa - ba) * (aa - ba)
	}
	return math.Sqrt(sum / float64(len(a.Pix)))
}

// judgeCase is one parity check: the engine's spec, ImageMagick's
// arguments for the same source (built per source when they depend on
// it), the metadata, and the tolerance on the NRMSE.
type judgeCase struct {
	name string
	spec string
	args func(t *testing.T, src judgeSource) []string
	meta map[string]any
	tol  float64
}

// judgeAll runs every case on every source, logs each NRMSE (go test -v
// shows them) and fails above the case's tolerance, writing both pictures
// under testdata/failed/ for a person to look at.
func judgeAll(t *testing.T, cases []judgeCase) {
	sources := judgeSources(t)
	for _, c := range cases {
		for _, src := range sources {
			t.Run(c.name+"/"+src.name, func(t *testing.T) {
				got := judgeEngine(t, src, c.spec, c.meta)
				want := judgeImageMagick(t, src, c.args(t, src)...)
				e := nrmse(got, want)
				t.Logf("NRMSE %.4f (tolerance %.3f)", e, c.tol)
				if e > c.tol || os.Getenv("VITRINE_JUDGE_DUMP") != "" {
					dir := filepath.Join("testdata", "failed", "imbo", c.name, src.name)
					writePNG(t, filepath.Join(dir, "vitrine.png"), got)
					writePNG(t, filepath.Join(dir, "imagemagick.png"), want)
				}
				if e > c.tol {
					t.Errorf("%s on %s: NRMSE %.4f > %.3f against ImageMagick (see testdata/failed/imbo)", c.spec, src.name, e, c.tol)
				}
			})
		}
	}
}

// judgeArgs returns fixed ImageMagick arguments.
func judgeArgs(args ...string) func(*testing.T, judgeSource) []string {
	return func(*testing.T, judgeSource) []string { return args }
}
