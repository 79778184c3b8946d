package engine

import (
	"fmt"
	"image"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/davidbyttow/govips/v2/vips"
)

// Limits of the text transformation: the text's length in characters, and
// the rendered text's size in pixels, checked on an estimate before
// rendering and on the result after.
const (
	maxTextRunes  = 1000
	maxTextSide   = 4096
	maxTextPixels = 8 << 20
)

// fontFamily is what a font parameter may hold: a fontconfig family name.
// Commas and other Pango font-description syntax are left out, so a client
// cannot ask for a list of fonts or a size through it.
var fontFamily = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 _-]{0,63}$`)

// text draws a text, rendered by Pango through libvips with a
// fontconfig family, onto the image. The text is always plain: anything
// Pango would read as markup is escaped.
type text struct {
	text, font    string
	size, opacity int
	color, bg     Color
	gravity       gravity
	x, y          int
	padding       int
	wrap          int
}

func init() {
	register("text", describe(parseText, "Draws a text onto the image.",
		stringParam("text", fmt.Sprintf("The text, shown as written (no markup); at most %d characters, new lines allowed.", maxTextRunes)).required(),
		stringParam("font", "Font family, as fontconfig names it (letters, digits, spaces, - and _).").def("DejaVu Sans"),
		intParam("size", 4, 400, "Font size in pixels.").def(24),
		colorParam("color", "Colour of the text.").def("000000"),
		intParam("opacity", 0, 100, "Opacity of the text and its box in percent.").def(100),
		enumParam("gravity", gravities[:9], "Which edge, corner or the centre the text is placed against.").def("northwest"),
		intParam("x", -maxSide, maxSide, "Horizontal offset in pixels from the gravity's edge, inwards (to the right for centre).").def(0),
		intParam("y", -maxSide, maxSide, "Vertical offset in pixels from the gravity's edge, inwards (downwards for centre).").def(0),
		colorParam("background", "Colour of a box behind the text, or none.").def("none").orNone(),
		intParam("padding", 0, 1000, "Space in pixels between the text and the edge of its box.").def(0),
		intParam("width", 0, maxTextSide, "Wrap lines at word boundaries to this width in pixels; 0 does not wrap.").def(0),
	))
}

func parseText(p *Params) (Step, error) {
	t := &text{
		font:    p.String("font"),
		size:    p.Int("size"),
		color:   p.Color("color"),
		opacity: p.Int("opacity"),
		gravity: gravity(p.Enum("gravity")),
		x:       p.Int("x"),
		y:       p.Int("y"),
		bg:      p.Color("background"),
		padding: p.Int("padding"),
		wrap:    p.Int("width"),
	}
	if p.Required("text") {
		t.text = p.String("text")
		t.checkText(p)
	}
	if !fontFamily.MatchString(t.font) {
		p.Fail("Invalid value for font: %q is not a font family name (letters, digits, spaces, - and _)", t.font)
	}
	return t, p.Err()
}

// checkText refuses texts that are empty, too long, not UTF-8 or hold
// control characters, and those whose estimated rendering is too large.
func (t *text) checkText(p *Params) {
	n := utf8.RuneCountInString(t.text)
	switch {
	case strings.TrimSpace(t.text) == "":
		p.Fail("text must not be empty")
	case n > maxTextRunes:
		p.Fail("text is %d characters long, the limit is %d", n, maxTextRunes)
	case !utf8.ValidString(t.text):
		p.Fail("text is not valid UTF-8")
	case strings.IndexFunc(t.text, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }) >= 0:
		p.Fail("text must not hold control characters other than new lines and tabs")
	default:
		t.checkEstimate(p)
	}
}

// checkEstimate refuses a text whose rendering would certainly be too
// large, before Pango runs: a glyph is about 0.6 em wide on average and a
// line 1.2 em high, so the estimate may be off by a factor, which the
// check of the rendered size (render) catches.
func (t *text) checkEstimate(p *Params) {
	w, lines := 0, 0
	for _, line := range strings.Split(t.text, "\n") {
		w = max(w, utf8.RuneCountInString(line)*t.size*6/10)
		lines++
	}
	if t.wrap > 0 {
		lines += w / t.wrap
		w = min(w, t.wrap)
	}
	h := lines * t.size * 12 / 10
	if w > 2*maxTextSide || h > 2*maxTextSide {
		p.Fail("The text would render at about %d x %d pixels, over the limit of %d x %d; use a smaller size, a wrapping width or fewer characters", w, h, maxTextSide, maxTextSide)
	}
}

// markup escapes what Pango's markup parser reads: the text is shown as
// written.
var markup = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "'", "&apos;", `"`, "&quot;")

func (t *text) Apply(s *State) error {
	layer, err := t.render()
	if err != nil {
		return err
	}
	defer layer.Close()
	if err := toSRGB8(s.Image); err != nil {
		return err
	}
	W, H := s.Image.Width(), s.Image.Height()
	w, h := layer.Width(), layer.Height()
	a, _ := compassAnchor(t.gravity)
	sign := [3]int{1, 1, -1} // offsets point inwards from the edge
	x, y := a.offset(W, H, w, h)
	x, y = x+sign[a.h]*t.x, y+sign[a.v]*t.y
	bands := s.Image.Bands()
	if err := s.Image.Composite(layer, vips.BlendModeOver, x, y); err != nil {
		return fmt.Errorf("text: %w", err)
	}
	if s.Image.Bands() > bands { // an opaque base stays opaque
		if err := s.Image.ExtractBand(0, bands); err != nil {
			return fmt.Errorf("text: %w", err)
		}
	}
	return castTo(s.Image, vips.BandFormatUchar)
}

// render draws the text with its box as an sRGB image with alpha.
func (t *text) render() (*vips.ImageRef, error) {
	mask, err := vips.Text(&vips.TextParams{
		Text: markup.Replace(t.text), Font: fmt.Sprintf("%s %dpx", t.font, t.size),
		Width: t.wrap, DPI: 72, Wrap: vips.TextWrapWordChar,
	})
	if err != nil {
		return nil, fmt.Errorf("text: render: %w", err)
	}
	defer mask.Close()
	w, h := mask.Width()+2*t.padding, mask.Height()+2*t.padding
	if w > maxTextSide || h > maxTextSide || w*h > maxTextPixels {
		return nil, invalidf("text: The rendered text is %d x %d pixels, over the limit of %d x %d and %d pixels", w, h, maxTextSide, maxTextSide, maxTextPixels)
	}
	alpha, err := mask.ToBytes()
	if err != nil {
		return nil, fmt.Errorf("text: render: %w", err)
	}
	return importNRGBA(t.paint(alpha, mask.Width(), mask.Height()))
}

// paint composes the box and the text's coverage mask (mw x mh, one byte a
// pixel) into one picture.
func (t *text) paint(mask []byte, mw, mh int) *image.NRGBA {
	pad := t.padding
	img := image.NewNRGBA(image.Rect(0, 0, mw+2*pad, mh+2*pad))
	bgA := int(t.bg.A)
	for y := range img.Rect.Dy() {
		for x := range img.Rect.Dx() {
			cov := 0
			if mx, my := x-pad, y-pad; mx >= 0 && my >= 0 && mx < mw && my < mh {
				cov = int(mask[my*mw+mx])
			}
			// The text over the box, in straight (not premultiplied)
			// alpha; the opacity applies to the two together.
			a := cov + bgA*(255-cov)/255
			o := img.PixOffset(x, y)
			if a == 0 {
				continue
			}
			mix := func(fg, bg uint8) uint8 {
				return uint8((int(fg)*cov + int(bg)*bgA*(255-cov)/255) / a)
			}
			img.Pix[o], img.Pix[o+1], img.Pix[o+2], img.Pix[o+3] = mix(t.color.R, t.bg.R), mix(t.color.G, t.bg.G), mix(t.color.B, t.bg.B), uint8(a*t.opacity/100)
		}
	}
	return img
}

var _ Step = (*text)(nil)
