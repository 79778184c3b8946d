package engine

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math"
	"strings"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

// The effect transformations are driven step by step here: parse with
// NewParams, apply to a State built by hand, export PNG and compare.

// solid returns a w x h image of one colour.
func fxSolid(w, h int, c color.NRGBA) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	return img
}

// fxCard is a deterministic 160x120 source: a red-green gradient, a blue
// ramp band, colour blocks and a white diagonal, so blurs, curves and
// composites all have something to show.
func fxCard() *image.NRGBA {
	const w, h = 160, 120
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	blocks := []color.NRGBA{{255, 0, 0, 255}, {0, 255, 0, 255}, {0, 0, 255, 255}, {255, 255, 0, 255}, {0, 0, 0, 255}, {255, 255, 255, 255}, {51, 102, 153, 255}, {128, 128, 128, 255}}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.NRGBA{uint8(x * 255 / (w - 1)), uint8(y * 255 / (h - 1)), 96, 255}
			switch {
			case y >= 80 && y < 100:
				c = blocks[x/20]
			case y >= 100:
				v := uint8(x * 255 / (w - 1))
				c = color.NRGBA{v, v, v, 255}
			}
			if abs(x-y) < 2 && y < 80 {
				c = color.NRGBA{255, 255, 255, 255}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	return img
}

// fxWithAlpha makes the left half of img half transparent.
func fxWithAlpha(img *image.NRGBA) *image.NRGBA {
	out := image.NewNRGBA(img.Rect)
	copy(out.Pix, img.Pix)
	for y := 0; y < img.Rect.Dy(); y++ {
		for x := 0; x < img.Rect.Dx()/2; x++ {
			out.Pix[out.PixOffset(x, y)+3] = 128
		}
	}
	return out
}

// fxState decodes img (through PNG, as a stored image would be) into a State.
func fxState(t *testing.T, img image.Image) *State {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	ref, err := vips.NewImageFromBuffer(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ref.Close() })
	b := img.Bounds()
	s := &State{Ctx: context.Background(), Image: ref, Output: &Output{}, Headers: map[string]string{}, OrigWidth: b.Dx(), OrigHeight: b.Dy()}
	return s
}

// fxParse parses one transformation by name.
func fxParse(name string, params map[string]string) (Step, error) {
	tr, ok := builtins[name]
	if !ok {
		return nil, errors.New("not registered: " + name)
	}
	return tr.Parse(NewParams(name, params))
}

// run parses and applies a spec such as "level:channel=r,amount=100" to s.
func fxRun(t *testing.T, s *State, spec string) error {
	t.Helper()
	sp := ParseSpec(spec)
	step, err := fxParse(sp.Name, sp.Params)
	if err != nil {
		t.Fatalf("%s: parse: %v", spec, err)
	}
	err = step.Apply(s)
	// Steps that replace the image must leave one the test can close.
	t.Cleanup(func() { s.Image.Close() })
	return err
}

// fxPNG exports the state's image losslessly.
func fxPNG(t *testing.T, s *State) []byte {
	t.Helper()
	out, _, err := s.Image.ExportPng(vips.NewPngExportParams())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// pixels decodes the state's image to 8-bit RGBA.
func fxPixels(t *testing.T, s *State) *image.NRGBA { return decodeRGBA(t, fxPNG(t, s)) }

// near reports whether two colours differ by at most tol in every channel.
func fxNear(a, b color.NRGBA, tol int) bool {
	return abs(int(a.R)-int(b.R)) <= tol && abs(int(a.G)-int(b.G)) <= tol &&
		abs(int(a.B)-int(b.B)) <= tol && abs(int(a.A)-int(b.A)) <= tol
}

func fxRGBA(r, g, b, a uint8) color.NRGBA { return color.NRGBA{r, g, b, a} }

// fxCase is one parse/validation expectation: want is "" for success, or
// substrings that a KindInvalid message must contain.
type fxCase struct {
	name   string
	params map[string]string
	want   []string
}

func fxCheckParse(t *testing.T, tr string, cases []fxCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(tr+"/"+c.name, func(t *testing.T) {
			t.Parallel()
			_, err := fxParse(tr, c.params)
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want error containing %q, got nil", c.want)
			}
			if KindOf(err) != KindInvalid {
				t.Fatalf("kind %v, want KindInvalid: %v", KindOf(err), err)
			}
			for _, w := range append([]string{tr + ": "}, c.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func fxP(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

var _ = math.Abs
