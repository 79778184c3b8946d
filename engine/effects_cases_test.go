package engine

import (
	"bytes"
	"context"
	"image/color"
	"image/png"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

func TestEffectsRegistered(t *testing.T) {
	for _, name := range []string{"blur", "contrast", "desaturate", "drawPois", "histogram", "icc", "level", "modulate", "sepia", "sharpen", "vignette", "watermark"} {
		if _, ok := builtins[name]; !ok {
			t.Errorf("%s is not registered", name)
		}
	}
}

func TestEffectsParse(t *testing.T) {
	fxCheckParse(t, "blur", []fxCase{
		{"gaussian", fxP("radius", "3", "sigma", "1.5"), nil},
		{"mode synonym", fxP("mode", "motion", "radius", "5", "sigma", "2", "angle", "30"), nil},
		{"radial", fxP("type", "radial", "angle", "10"), nil},
		{"rotational", fxP("type", "rotational", "angle", "0"), nil},
		{"zero sigma", fxP("radius", "0", "sigma", "0"), nil},
		{"missing radius", fxP("sigma", "1"), []string{"Missing required parameter: radius"}},
		{"missing both", nil, []string{"Missing required parameter: radius"}},
		{"missing sigma", fxP("radius", "1"), []string{"Missing required parameter: sigma"}},
		{"motion missing angle", fxP("type", "motion", "radius", "1", "sigma", "1"), []string{"Missing required parameter: angle"}},
		{"radial missing angle", fxP("type", "radial"), []string{"Missing required parameter: angle"}},
		{"unknown type", fxP("type", "box", "radius", "1", "sigma", "1"), []string{"Unknown blur type: box"}},
		{"disagree", fxP("type", "motion", "mode", "radial", "angle", "1"), []string{"type", "mode"}},
		{"bad radius", fxP("radius", "x", "sigma", "1"), []string{"radius"}},
		{"negative sigma", fxP("radius", "1", "sigma", "-1"), []string{"sigma", "between"}},
		{"huge angle", fxP("type", "radial", "angle", "1000"), []string{"angle"}},
		{"unknown", fxP("radius", "1", "sigma", "1", "foo", "1"), []string{"Unknown parameter", "foo"}},
	})
	fxCheckParse(t, "contrast", []fxCase{
		{"defaults", nil, nil},
		{"alpha beta", fxP("alpha", "-3", "beta", "0"), nil},
		{"legacy", fxP("sharpen", "2"), nil},
		{"both", fxP("sharpen", "2", "alpha", "0"), nil},
		{"beta high", fxP("beta", "1.5"), []string{"beta", "between"}},
		{"alpha text", fxP("alpha", "lots"), []string{"alpha"}},
		{"legacy bad", fxP("sharpen", "x"), []string{"sharpen"}},
		{"unknown", fxP("gamma", "1"), []string{"Unknown parameter", "gamma"}},
	})
	fxCheckParse(t, "desaturate", []fxCase{
		{"none", nil, nil},
		{"unknown", fxP("amount", "1"), []string{"Unknown parameter", "amount"}},
	})
	fxCheckParse(t, "drawPois", []fxCase{
		{"defaults", nil, nil},
		{"all", fxP("color", "00f", "borderSize", "1", "pointSize", "1"), nil},
		{"bad colour", fxP("color", "nope"), []string{"color"}},
		{"zero border", fxP("borderSize", "0"), []string{"borderSize", "between"}},
		{"zero point", fxP("pointSize", "0"), []string{"pointSize"}},
		{"unknown", fxP("size", "1"), []string{"Unknown parameter", "size"}},
	})
	fxCheckParse(t, "histogram", []fxCase{
		{"defaults", nil, nil},
		{"all", fxP("scale", "8", "ratio", "0.1", "red", "f00", "green", "0f0", "blue", "00f"), nil},
		{"scale 0", fxP("scale", "0"), []string{"scale", "between 1 and 8"}},
		{"scale 9", fxP("scale", "9"), []string{"scale"}},
		{"ratio 0", fxP("ratio", "0"), []string{"ratio"}},
		{"ratio 9", fxP("ratio", "9"), []string{"ratio"}},
		{"bad colour", fxP("green", "zzz"), []string{"green"}},
		{"unknown", fxP("bins", "1"), []string{"Unknown parameter", "bins"}},
	})
	fxCheckParse(t, "icc", []fxCase{
		{"none", nil, nil},
		{"named", fxP("profile", "srgb"), nil},
		{"unknown", fxP("name", "srgb"), []string{"Unknown parameter", "name"}},
	})
	fxCheckParse(t, "modulate", []fxCase{
		{"defaults", nil, nil},
		{"zeros", fxP("b", "0", "s", "0", "h", "0"), nil},
		{"high", fxP("b", "1001"), []string{"b", "between"}},
		{"negative", fxP("s", "-1"), []string{"s"}},
		{"text", fxP("h", "abc"), []string{"h"}},
		{"unknown", fxP("l", "1"), []string{"Unknown parameter", "l"}},
	})
	fxCheckParse(t, "sepia", []fxCase{
		{"default", nil, nil},
		{"zero", fxP("threshold", "0"), nil},
		{"max", fxP("threshold", "100"), nil},
		{"fraction", fxP("threshold", "62.5"), nil},
		{"over", fxP("threshold", "101"), []string{"threshold", "between"}},
		{"text", fxP("threshold", "80%"), []string{"threshold"}},
		{"unknown", fxP("tone", "1"), []string{"Unknown parameter", "tone"}},
	})
	fxCheckParse(t, "sharpen", []fxCase{
		{"default", nil, nil},
		{"preset", fxP("preset", "extreme"), nil},
		{"override", fxP("preset", "strong", "radius", "0", "sigma", "0", "gain", "0", "threshold", "0"), nil},
		{"bad preset", fxP("preset", "max"), []string{"preset"}},
		{"bad threshold", fxP("threshold", "2"), []string{"threshold", "between"}},
		{"bad gain", fxP("gain", "-1"), []string{"gain"}},
		{"unknown", fxP("amount", "1"), []string{"Unknown parameter", "amount"}},
	})
	fxCheckParse(t, "vignette", []fxCase{
		{"defaults", nil, nil},
		{"colours", fxP("inner", "fff", "outer", "none", "scale", "1"), nil},
		{"scale below 1", fxP("scale", "0.5"), []string{"scale", "between"}},
		{"scale 0", fxP("scale", "0"), []string{"scale"}},
		{"bad inner", fxP("inner", "#12"), []string{"inner"}},
		{"unknown", fxP("radius", "1"), []string{"Unknown parameter", "radius"}},
	})
	fxCheckParse(t, "watermark", []fxCase{
		{"defaults", nil, nil},
		{"all", fxP("img", "abc", "width", "10", "height", "20", "position", "bottom-right", "x", "-5", "y", "-5", "opacity", "0"), nil},
		{"bad position", fxP("position", "middle"), []string{"position"}},
		{"zero width", fxP("width", "0"), []string{"width", "between"}},
		{"opacity high", fxP("opacity", "101"), []string{"opacity"}},
		{"bad x", fxP("x", "1.5"), []string{"x"}},
		{"unknown", fxP("alpha", "1"), []string{"Unknown parameter", "alpha"}},
	})
}

// TestEffectsGolden runs each effect on the test card (opaque, then with a
// half-transparent left half) and compares against testdata/golden.
func TestEffectsGolden(t *testing.T) {
	cases := []struct{ name, spec string }{
		{"blur_gaussian", "blur:radius=6,sigma=3"},
		{"blur_adaptive", "blur:type=adaptive,radius=6,sigma=3"},
		{"blur_motion", "blur:mode=motion,radius=10,sigma=5,angle=30"},
		{"blur_radial", "blur:type=radial,angle=20"},
		{"contrast_default", "contrast"},
		{"contrast_inverse", "contrast:alpha=-5,beta=0.3"},
		{"desaturate", "desaturate"},
		{"modulate_hue", "modulate:b=110,s=150,h=150"},
		{"sepia_default", "sepia"},
		{"sepia_50", "sepia:threshold=50"},
		{"sharpen_extreme", "sharpen:preset=extreme"},
		{"vignette_default", "vignette"},
		{"vignette_colours", "vignette:inner=ffffff,outer=3767bf,scale=1.2"},
		{"histogram_default", "histogram"},
	}
	for _, c := range cases {
		for _, alpha := range []bool{false, true} {
			name := c.name
			src := fxCard()
			if alpha {
				name += "_alpha"
				src = fxWithAlpha(src)
			}
			t.Run(name, func(t *testing.T) {
				s := fxState(t, src)
				if err := fxRun(t, s, c.spec); err != nil {
					t.Fatal(err)
				}
				if alpha != s.Image.HasAlpha() && c.name != "histogram_default" {
					t.Errorf("alpha: got %v, want %v", s.Image.HasAlpha(), alpha)
				}
				assertGolden(t, name, fxPNG(t, s), 1.5)
			})
		}
	}
}

// TestEffectsLayouts runs every effect on grey, grey+alpha and 16-bit
// sources: none may fail, and each keeps (or adds no) alpha.
func TestEffectsLayouts(t *testing.T) {
	specs := []string{"blur:radius=2,sigma=1", "blur:type=adaptive,radius=2,sigma=1", "blur:type=motion,radius=3,sigma=2,angle=45",
		"blur:type=radial,angle=5", "contrast", "desaturate", "level:channel=r,amount=50", "modulate:h=50", "sepia",
		"sharpen", "vignette", "histogram", "drawPois"}
	layouts := map[string]func() *vips.ImageRef{
		"grey": func() *vips.ImageRef {
			r, _ := vips.XYZ(64, 48)
			_ = r.ExtractBand(0, 1)
			_ = r.Linear1(4, 0)
			_ = r.Cast(vips.BandFormatUchar)
			g, _ := r.CopyChangingInterpretation(vips.InterpretationBW)
			r.Close()
			return g
		},
		"grey+alpha": func() *vips.ImageRef {
			r, _ := vips.XYZ(64, 48)
			_ = r.ExtractBand(0, 1)
			_ = r.Linear1(4, 0)
			_ = r.Cast(vips.BandFormatUchar)
			g, _ := r.CopyChangingInterpretation(vips.InterpretationBW)
			r.Close()
			_ = g.BandJoinConst([]float64{200})
			return g
		},
		"rgb16+alpha": func() *vips.ImageRef {
			var buf bytes.Buffer
			_ = png.Encode(&buf, fxCard())
			r, _ := vips.NewImageFromBuffer(buf.Bytes())
			_ = r.AddAlpha()
			_ = r.Cast(vips.BandFormatUshort)
			_ = r.Linear1(257, 0)
			_ = r.Cast(vips.BandFormatUshort)
			g, _ := r.CopyChangingInterpretation(vips.InterpretationRGB16)
			r.Close()
			return g
		},
	}
	for lname, make := range layouts {
		for _, spec := range specs {
			t.Run(lname+"/"+spec, func(t *testing.T) {
				img := make()
				hadAlpha := img.HasAlpha()
				s := &State{Ctx: context.Background(), Image: img, Output: &Output{}, Headers: map[string]string{},
					OrigWidth: img.Width(), OrigHeight: img.Height(),
					Env: Env{Metadata: map[string]any{"poi": []any{map[string]any{"cx": 20.0, "cy": 20.0}}}}}
				if err := fxRun(t, s, spec); err != nil {
					t.Fatal(err)
				}
				if spec != "histogram" && s.Image.HasAlpha() != hadAlpha {
					t.Errorf("alpha %v -> %v", hadAlpha, s.Image.HasAlpha())
				}
				fxPNG(t, s) // must encode
			})
		}
	}
}

func TestDesaturatePixels(t *testing.T) {
	for in, want := range map[color.NRGBA]color.NRGBA{
		fxRGBA(0x33, 0x66, 0x99, 255): fxRGBA(0x66, 0x66, 0x66, 255),
		fxRGBA(0xff, 0x00, 0x00, 255): fxRGBA(0x80, 0x80, 0x80, 255),
		fxRGBA(0x10, 0x20, 0x30, 100): fxRGBA(0x20, 0x20, 0x20, 100),
	} {
		s := fxState(t, fxSolid(4, 4, in))
		if err := fxRun(t, s, "desaturate"); err != nil {
			t.Fatal(err)
		}
		if got := fxPixels(t, s).NRGBAAt(1, 1); got != want {
			t.Errorf("%v: got %v, want %v", in, got, want)
		}
	}
}

func TestContrastCurve(t *testing.T) {
	if got := sigmoidal(3, 0.5, 0.5); got < 0.499 || got > 0.501 {
		t.Errorf("midpoint moved: %g", got)
	}
	if sigmoidal(3, 0.5, 0.25) >= 0.25 || sigmoidal(-3, 0.5, 0.25) <= 0.25 {
		t.Error("alpha>0 must darken the shadows and alpha<0 lighten them")
	}
	for _, x := range []float64{0.1, 0.3, 0.8} { // the inverse undoes the curve
		if y := sigmoidal(-4, 0.4, sigmoidal(4, 0.4, x)); y < x-1e-6 || y > x+1e-6 {
			t.Errorf("inverse(%g) = %g", x, y)
		}
	}
	s := fxState(t, fxSolid(4, 4, fxRGBA(40, 128, 220, 255)))
	if err := fxRun(t, s, "contrast:alpha=0"); err != nil {
		t.Fatal(err)
	}
	if got := fxPixels(t, s).NRGBAAt(0, 0); got != fxRGBA(40, 128, 220, 255) {
		t.Errorf("alpha 0 is a no-op, got %v", got)
	}
}

func TestHistogramSizes(t *testing.T) {
	for spec, want := range map[string][2]int{
		"histogram":                 {256, 158},
		"histogram:scale=2":         {512, 316},
		"histogram:scale=2,ratio=2": {512, 256},
	} {
		s := fxState(t, fxCard())
		if err := fxRun(t, s, spec); err != nil {
			t.Fatal(err)
		}
		px := fxPixels(t, s)
		if got := [2]int{px.Rect.Dx(), px.Rect.Dy()}; got != want {
			t.Errorf("%s: %v, want %v", spec, got, want)
		}
	}
	// A solid red image: one full-height red bar at bucket 255 and one
	// full-height bar at 0 where green and blue overlap; the rest transparent.
	s := fxState(t, fxSolid(10, 10, fxRGBA(255, 0, 0, 255)))
	if err := fxRun(t, s, "histogram:scale=2"); err != nil {
		t.Fatal(err)
	}
	px := fxPixels(t, s)
	if got := px.NRGBAAt(511, 300); got.A != 255 || got.R < 190 || got.G > 80 {
		t.Errorf("red bar: %v", got)
	}
	// Overlapping bars add up, as ImageMagick's blend at 100% of each:
	// (58C458 + 3767BF) / 1.1, green clipped at 255.
	if got := px.NRGBAAt(1, 0); !fxNear(got, fxRGBA(130, 255, 254, 255), 1) {
		t.Errorf("green+blue bar at 0: %v, want the sum of both", got)
	}
	if got := px.NRGBAAt(200, 100); got.A != 0 {
		t.Errorf("background must be transparent: %v", got)
	}
}

func TestSepiaTone(t *testing.T) {
	s := fxState(t, fxCard())
	if err := fxRun(t, s, "sepia:threshold=50"); err != nil {
		t.Fatal(err)
	}
	px := fxPixels(t, s)
	// Sepia is warm: red >= green >= blue everywhere.
	for y := 0; y < px.Rect.Dy(); y += 7 {
		for x := 0; x < px.Rect.Dx(); x += 7 {
			c := px.NRGBAAt(x, y)
			if !(int(c.R)+1 >= int(c.G) && int(c.G)+1 >= int(c.B)) {
				t.Fatalf("(%d,%d) = %v is not sepia", x, y, c)
			}
		}
	}
}

func TestVignetteCentre(t *testing.T) {
	s := fxState(t, fxSolid(101, 61, fxRGBA(200, 150, 100, 255)))
	if err := fxRun(t, s, "vignette"); err != nil {
		t.Fatal(err)
	}
	px := fxPixels(t, s)
	if got := px.NRGBAAt(50, 30); !fxNear(got, fxRGBA(200, 150, 100, 255), 2) {
		t.Errorf("centre must be nearly unchanged, got %v", got)
	}
	corner := px.NRGBAAt(0, 0)
	if corner.R >= 100 || corner.A != 255 {
		t.Errorf("corner must be darkened, got %v", corner)
	}
	// scale 1: the gradient reaches black at max(W,H)/2 from the centre.
	s = fxState(t, fxSolid(101, 61, fxRGBA(200, 200, 200, 255)))
	if err := fxRun(t, s, "vignette:scale=1,inner=fff"); err != nil {
		t.Fatal(err)
	}
	px = fxPixels(t, s)
	if got := px.NRGBAAt(0, 30); got.R > 3 {
		t.Errorf("at the radius the outer colour wins, got %v", got)
	}
	if got := px.NRGBAAt(25, 30); !fxNear(got, fxRGBA(100, 100, 100, 255), 4) {
		t.Errorf("half way the multiply halves, got %v", got)
	}
}

// TestVignetteNone: ImageMagick blends the gradient premultiplied, so a
// `none` end keeps the other end's colour: white fading to none changes
// nothing, and none fading to a colour tints the edges with that colour.
func TestVignetteNone(t *testing.T) {
	for _, c := range []struct {
		spec         string
		centre, edge color.NRGBA
	}{
		{"vignette:inner=ffffff,outer=none", fxRGBA(200, 150, 100, 255), fxRGBA(200, 150, 100, 255)},
		{"vignette:inner=none,outer=ff0000,scale=1", fxRGBA(200, 150, 100, 255), fxRGBA(200, 0, 0, 255)},
		{"vignette:inner=00ff00,outer=none,scale=1", fxRGBA(0, 150, 0, 255), fxRGBA(200, 150, 100, 255)},
	} {
		t.Run(c.spec, func(t *testing.T) {
			s := fxState(t, fxSolid(101, 61, fxRGBA(200, 150, 100, 255)))
			if err := fxRun(t, s, c.spec); err != nil {
				t.Fatal(err)
			}
			px := fxPixels(t, s)
			if got := px.NRGBAAt(50, 30); !fxNear(got, c.centre, 2) {
				t.Errorf("centre %v, want %v", got, c.centre)
			}
			if got := px.NRGBAAt(0, 30); !fxNear(got, c.edge, 2) {
				t.Errorf("edge %v, want %v", got, c.edge)
			}
		})
	}
}

func TestDrawPois(t *testing.T) {
	meta := map[string]any{"poi": []any{
		map[string]any{"x": 10.0, "y": 10.0, "width": 30.0, "height": 20.0},
		map[string]any{"cx": 100.0, "cy": 60.0},
		map[string]any{"label": "neither box nor centre: skipped"},
		"not an object",
	}}
	s := fxState(t, fxSolid(160, 120, fxRGBA(255, 255, 255, 255)))
	s.Env.Metadata = meta
	if err := fxRun(t, s, "drawPois:color=0000ff,borderSize=3,pointSize=14"); err != nil {
		t.Fatal(err)
	}
	px := fxPixels(t, s)
	blue, white := fxRGBA(0, 0, 255, 255), fxRGBA(255, 255, 255, 255)
	checks := []struct {
		x, y int
		want color.NRGBA
	}{
		{8, 20, blue}, {10, 20, blue}, {7, 20, white}, {11, 20, white}, // left bar x 8..10
		{42, 20, blue}, {43, 20, white}, // right bar x 40..42
		{25, 8, blue}, {25, 7, white}, {25, 32, blue}, {25, 33, white},
		{25, 20, white},  // inside the box
		{120, 60, blue},  // on the circle: radius 14 x sqrt(2) = 19.8, as ImageMagick draws Imbo's circle
		{100, 60, white}, // centre
		{123, 60, white}, // outside the stroke
	}
	assertPixels(t, px, checks)
	assertGolden(t, "drawpois", fxPNG(t, s), 1)

	// The coordinates are the original's: at half size the marks follow.
	s = fxState(t, fxSolid(80, 60, fxRGBA(255, 255, 255, 255)))
	s.OrigWidth, s.OrigHeight = 160, 120
	s.Env.Metadata = meta
	if err := fxRun(t, s, "drawPois:color=00f,borderSize=1,pointSize=7"); err != nil {
		t.Fatal(err)
	}
	assertPixels(t, fxPixels(t, s), []struct {
		x, y int
		want color.NRGBA
	}{{5, 10, blue}, {20, 5, blue}, {60, 30, blue}, {50, 30, white}})

	// No poi, or not an array: a no-op.
	for _, m := range []map[string]any{nil, {"poi": "x"}, {"poi": []any{}}} {
		s := fxState(t, fxSolid(8, 8, white))
		s.Env.Metadata = m
		if err := fxRun(t, s, "drawPois"); err != nil {
			t.Fatal(err)
		}
	}
}

func assertPixels(t *testing.T, px interface{ NRGBAAt(x, y int) color.NRGBA }, checks []struct {
	x, y int
	want color.NRGBA
}) {
	t.Helper()
	for _, c := range checks {
		if got := px.NRGBAAt(c.x, c.y); !fxNear(got, c.want, 40) {
			t.Errorf("(%d,%d) = %v, want %v", c.x, c.y, got, c.want)
		}
	}
}

func TestModulateNoop(t *testing.T) {
	s := fxState(t, fxSolid(4, 4, fxRGBA(51, 102, 153, 255)))
	if err := fxRun(t, s, "modulate"); err != nil {
		t.Fatal(err)
	}
	if got := fxPixels(t, s).NRGBAAt(0, 0); got != fxRGBA(51, 102, 153, 255) {
		t.Errorf("defaults must be a no-op: %v", got)
	}
	s = fxState(t, fxSolid(4, 4, fxRGBA(51, 102, 153, 255)))
	if err := fxRun(t, s, "modulate:s=0"); err != nil {
		t.Fatal(err)
	}
	if got := fxPixels(t, s).NRGBAAt(0, 0); abs(int(got.R)-int(got.B)) > 2 {
		t.Errorf("s=0 must be grey: %v", got)
	}
	s = fxState(t, fxSolid(4, 4, fxRGBA(200, 40, 40, 255)))
	if err := fxRun(t, s, "modulate:b=0"); err != nil {
		t.Fatal(err)
	}
	if got := fxPixels(t, s).NRGBAAt(0, 0); got.R > 3 {
		t.Errorf("b=0 must be black: %v", got)
	}
}

// TestHistogramGolden plots a smooth image, so every channel has bars.
func TestHistogramGolden(t *testing.T) {
	s := fxState(t, fxCard())
	for _, spec := range []string{"blur:radius=20,sigma=8", "histogram:scale=2,ratio=2"} {
		if err := fxRun(t, s, spec); err != nil {
			t.Fatal(err)
		}
	}
	assertGolden(t, "histogram_blurred_scale2", fxPNG(t, s), 1)
}
