package engine

import (
	"context"
	"errors"
	"image"
	"image/color"
	"strings"
	"testing"
)

// white returns a flat white w x h PNG.
func white(t *testing.T, w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	return encodePicture(t, img, "png")
}

// ink returns the bounding box of the pixels of an encoded image darker
// than 200 in red, and the darkest red value.
func ink(t *testing.T, encoded []byte) (image.Rectangle, uint8) {
	img := decodeRGBA(t, encoded)
	box, darkest := image.Rectangle{}, uint8(255)
	for y := img.Rect.Min.Y; y < img.Rect.Max.Y; y++ {
		for x := img.Rect.Min.X; x < img.Rect.Max.X; x++ {
			c := img.NRGBAAt(x, y)
			darkest = min(darkest, c.R)
			if c.R < 200 {
				box = box.Union(image.Rect(x, y, x+1, y+1))
			}
		}
	}
	return box, darkest
}

// TestTextParse checks the parameters' validation and the limits on the
// text, all refused before any pixel is touched.
func TestTextParse(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	tests := []struct{ t, want string }{
		{"text:text=Hello", ""},
		{"text:text=a, b,font=DejaVu Serif,size=12,color=f00,opacity=50,gravity=south,x=-3,y=4,background=none,padding=2,width=100", ""},
		{"text:size=12", "text: Missing required parameter: text"},
		{"text:text=", "text: text must not be empty"},
		{"text:text=" + strings.Repeat("a", maxTextRunes+1), "text: text is 1001 characters long, the limit is 1000"},
		{"text:text=a\x01b", "text: text must not hold control characters"},
		{"text:text=a\xffb", "text: text is not valid UTF-8"},
		{"text:text=a,font=DejaVu Sans, Bold 90", "text: Invalid value for font"},
		{"text:text=a,color=none", "text: Invalid value for color"},
		{"text:text=a,opacity=101", "text: opacity must be between 0 and 100"},
		{"text:text=a,gravity=attention", "text: Invalid value for gravity"},
		{"text:text=" + strings.Repeat("big ", 100) + ",size=400", "text: The text would render at about"},
		{"text:text=" + strings.Repeat("big ", 100) + ",size=400,width=2000", "text: The text would render at about"},
	}
	for _, tc := range tests {
		c, err := e.ParseChain([]string{tc.t})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%.60q: %v", tc.t, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%.60q: error %v, want %q", tc.t, err, tc.want)
		case tc.want != "" && !errors.Is(err, ErrInvalid):
			t.Errorf("%.60q: %v is not a 400", tc.t, err)
		case err == nil && c.Len() != 1:
			t.Errorf("%.60q: %d steps", tc.t, c.Len())
		}
	}
}

// TestTextGolden renders text (with markup characters, a box and a
// gravity) and compares it with testdata/golden/text_*.png within a
// tolerance that absorbs small differences between FreeType versions.
func TestTextGolden(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	bg := white(t, 240, 120)
	for name, ts := range map[string]string{
		"plain":  "text:text=Hello <b>&amp; world,size=20,x=8,y=8",
		"box":    "text:text=vitrine,size=24,color=fff,background=336699,padding=6,gravity=southeast,x=10,y=10",
		"wrap":   "text:text=wrapped at sixty pixels,size=14,width=60,gravity=north,color=900",
		"centre": "text:text=50%,size=48,opacity=50,gravity=centre",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			assertGolden(t, "text_"+name, run(t, e, bg, "png", Env{}, ts).Data, 3)
		})
	}
}

// TestTextLiteral checks that markup is shown as written: `<b>&amp;` is
// eight glyphs wide, not one bold ampersand, and an unbalanced tag renders
// instead of failing.
func TestTextLiteral(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	bg := white(t, 300, 60)
	amp, _ := ink(t, run(t, e, bg, "png", Env{}, "text:text=&,size=20").Data)
	lit, _ := ink(t, run(t, e, bg, "png", Env{}, "text:text=<b>&amp;,size=20").Data)
	if amp.Empty() || lit.Dx() < 5*amp.Dx() {
		t.Errorf("`<b>&amp;` is %d pixels wide, `&` %d: the markup was interpreted", lit.Dx(), amp.Dx())
	}
	open, _ := ink(t, run(t, e, bg, "png", Env{}, "text:text=<span foo='1'>,size=20").Data)
	if open.Dx() < 5*amp.Dx() {
		t.Errorf("an unbalanced tag rendered %d pixels wide", open.Dx())
	}
}

// TestTextPlacement checks the gravity with its offsets and the opacity.
func TestTextPlacement(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	bg := white(t, 200, 100)
	box, _ := ink(t, run(t, e, bg, "png", Env{}, "text:text=X,background=000,padding=4,gravity=southeast,x=7,y=3").Data)
	if box.Max != image.Pt(193, 97) {
		t.Errorf("southeast x=7,y=3: box ends at %v, want (193,97)", box.Max)
	}
	box, _ = ink(t, run(t, e, bg, "png", Env{}, "text:text=X,background=000,gravity=northwest,x=7,y=3").Data)
	if box.Min != image.Pt(7, 3) {
		t.Errorf("northwest x=7,y=3: box starts at %v, want (7,3)", box.Min)
	}
	_, darkest := ink(t, run(t, e, bg, "png", Env{}, "text:text=X,background=000,opacity=50").Data)
	if darkest < 120 || darkest > 135 {
		t.Errorf("opacity=50 of black on white: darkest %d, want about 128", darkest)
	}
	out := run(t, e, bg, "png", Env{}, "text:text=X,color=f00,size=40,gravity=centre")
	if c := pixel(t, out.Data, 2, 2); c != (color.NRGBA{255, 255, 255, 255}) {
		t.Errorf("the corner is %v, want white", c)
	}
}

// TestTextRenderedLimit checks that a text the estimate lets through but
// whose rendering is over the size limit is refused as a 400.
func TestTextRenderedLimit(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	c, err := e.ParseChain([]string{"text:text=" + strings.Repeat("W", 300) + ",size=40"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Process(context.Background(), white(t, 50, 50), Request{Chain: c, Format: "png"})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "The rendered text is") {
		t.Errorf("error %v, want a 400 about the rendered size", err)
	}
}
