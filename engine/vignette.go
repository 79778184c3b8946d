package engine

import (
	"fmt"
	"math"

	"github.com/davidbyttow/govips/v2/vips"
)

// vignette darkens (or tints) the edges, as Imbo does with ImageMagick: a
// radial-gradient from inner at the centre to outer at radius
// max(sW-1,sH-1)/2 of a canvas scale times the image, cropped to the image
// around the centre and Multiply-composited over it. ImageMagick blends the
// two colours premultiplied, so `none` (transparent) at one end keeps the
// other end's colour and fades only its alpha; its Multiply is the SVG one,
// Sc x Dc + Sc x (1-Da) + Dc x (1-Sa) on premultiplied colours. Only the
// W x H window of that canvas is built, as an 8-bit position along the
// gradient that three 256-entry tables turn into the composite's terms.
type vignette struct {
	inner, outer Color
	scale        float64
}

func init() {
	register("vignette", describe(parseVignette, "Darkens or tints the edges of the image.",
		colorParam("inner", "Colour at the centre, or none.").def("none").orNone(),
		colorParam("outer", "Colour at the edges, or none.").def("000").orNone(),
		numParam("scale", 1, 100, "Size of the vignette relative to the image.").def(1.5),
	))
}

func parseVignette(p *Params) (Step, error) {
	v := vignette{
		inner: p.Color("inner"),
		outer: p.Color("outer"),
		scale: p.Float("scale"),
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	return v, nil
}

func (v vignette) Apply(s *State) error {
	if err := toSRGB8(s.Image); err != nil {
		return err
	}
	W, H := s.Image.Width(), s.Image.Height()
	sW, sH := math.Floor(float64(W)*v.scale), math.Floor(float64(H)*v.scale)
	// ImageMagick's centre is ((sW-1)/2, (sH-1)/2) in the canvas, cropped at
	// (floor((sW-W)/2), floor((sH-H)/2)).
	cx := (sW-1)/2 - math.Floor((sW-float64(W))/2)
	cy := (sH-1)/2 - math.Floor((sH-float64(H))/2)
	radius := math.Max(sW-1, sH-1) / 2
	var sc scratch
	defer sc.close()
	pos, err := gradientPosition(W, H, cx, cy, radius)
	if err != nil {
		return fmt.Errorf("vignette: %w", err)
	}
	sc.keep(pos)
	m, p, sa := v.tables()
	terms := [3]*vips.ImageRef{}
	for i, table := range [3][]*[256]uint8{{&m[0], &m[1], &m[2]}, {&p[0], &p[1], &p[2]}, {&sa}} {
		if terms[i], err = sc.lookup(pos, table...); err != nil {
			return fmt.Errorf("vignette: %w", err)
		}
	}
	alpha, err := detachAlpha(s.Image)
	if err == nil && alpha != nil {
		sc.keep(alpha)
	}
	if err == nil {
		err = multiplyGradient(s.Image, alpha, terms)
	}
	if err != nil {
		return fmt.Errorf("vignette: %w", err)
	}
	return nil
}

// tables returns, for each 8-bit position f along the gradient, the terms of
// the Multiply composite in 0..255: m = 1 - Sa + Sa x Sc per colour band
// (what an opaque pixel is multiplied by), p = Sa x Sc and Sa, with the
// gradient's colour and alpha blended premultiplied from inner to outer.
func (v vignette) tables() (m, p [3][256]uint8, sa [256]uint8) {
	in, out := v.inner.Floats(), v.outer.Floats()
	ia, oa := float64(v.inner.A)/255, float64(v.outer.A)/255
	for f := 0; f < 256; f++ {
		t := float64(f) / 255
		a := ia*(1-t) + oa*t
		sa[f] = uint8(math.Round(255 * a))
		for c := range m {
			pc := (in[c]*ia*(1-t) + out[c]*oa*t) / 255
			p[c][f] = uint8(math.Round(255 * pc))
			m[c][f] = uint8(math.Round(255 * (1 - a + pc)))
		}
	}
	return m, p, sa
}

// lookup maps the one-band 8-bit pos through tables into a float image.
func (sc *scratch) lookup(pos *vips.ImageRef, tables ...*[256]uint8) (*vips.ImageRef, error) {
	lut, err := lutFromTables(tables...)
	if err != nil {
		return nil, err
	}
	defer lut.Close()
	out, err := pos.Copy()
	if err != nil {
		return nil, err
	}
	sc.keep(out)
	if err := out.Maplut(lut); err != nil {
		return nil, err
	}
	return out, out.Cast(vips.BandFormatFloat)
}

// multiplyGradient composites the gradient terms (m, p, Sa; see tables) over
// the 8-bit colour bands img and their alpha (nil when opaque), in place:
// colour = (Dc x Da x m + p x (1-Da)) / (Sa + Da - Sa x Da), which is
// Dc x m for an opaque image.
func multiplyGradient(img, alpha *vips.ImageRef, terms [3]*vips.ImageRef) error {
	m, p, sa := terms[0], terms[1], terms[2]
	steps := []func() error{
		func() error { return img.Cast(vips.BandFormatFloat) },
		func() error { return m.Linear1(1.0/255, 0) },
		func() error { return img.Multiply(m) },
	}
	if alpha != nil {
		steps = append(steps,
			func() error { return alpha.Cast(vips.BandFormatFloat) },
			func() error { return alpha.Linear1(1.0/255, 0) },
			func() error { return img.Multiply(alpha) },
			func() error { return alpha.Linear1(-1, 1) }, // 1 - Da
			func() error { return p.Multiply(alpha) },
			func() error { return img.Add(p) },
			func() error { return sa.Linear1(1.0/255, 0) },
			func() error { return sa.Multiply(alpha) },   // Sa x (1-Da)
			func() error { return alpha.Linear1(-1, 1) }, // Da again
			func() error { return sa.Add(alpha) },        // the result's alpha
			func() error { return img.Divide(sa) },
			func() error { return sa.Linear1(255, 0) },
			func() error { return img.BandJoin(sa) },
		)
	}
	steps = append(steps,
		func() error { return img.Linear1(1, 0.5) }, // the cast truncates
		func() error { return img.Cast(vips.BandFormatUchar) },
	)
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// gradientPosition returns the 8-bit position along a radial gradient of
// radius centred on (cx, cy), w x h: round(255 x min(1, distance/radius)).
func gradientPosition(w, h int, cx, cy, radius float64) (*vips.ImageRef, error) {
	dx, dy, err := centredCoords(w, h, cx, cy)
	if err != nil {
		return nil, err
	}
	defer dy.Close()
	t := dx
	steps := []func() error{
		func() error { return dx.Multiply(dx) },
		func() error { return dy.Multiply(dy) },
		func() error { return t.Add(dy) },
		// (d/radius)^2 -> d/radius: libvips gamma raises to 1/exponent.
		func() error { return t.Linear1(1/(radius*radius), 0) },
		func() error { return t.Gamma(2) },
		// Scale to 0..255 and clip at the radius with an 8-bit cast.
		func() error { return t.Linear1(255, 0.5) },
		func() error { return t.Cast(vips.BandFormatUchar) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Close()
			return nil, err
		}
	}
	return t, nil
}

var _ Step = vignette{}
